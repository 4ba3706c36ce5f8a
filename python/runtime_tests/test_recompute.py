"""RECOMPUTE items executed by SwapRuntime (docs/runtime.md,
"Recomputation"): recipes of single ATen ops, the generator state of random
ops, the SWAP fallback, and a training run under a `recompute` policy whose
losses are bit-identical to a run without the runtime."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from swapplan import _torch_compat as C  # noqa: E402
from swapplan.runtime import SwapRuntime  # noqa: E402

KEEP = 0.75


class Net(nn.Module):
    """Linear -> GELU -> dropout -> Linear -> tanh -> Linear. The dropout
    mask comes from aten::bernoulli on a resident buffer of keep
    probabilities: a random, out-of-place op whose mask the runtime can
    recompute (F.dropout on the CPU fills an empty tensor in place with
    bernoulli_, which is not recomputable: that mask is swapped instead)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 256)
        self.b = nn.Linear(256, 256)
        self.c = nn.Linear(256, 8)
        self.register_buffer("keep", torch.full((32, 256), KEEP))

    def forward(self, x):
        h = F.gelu(self.a(x))
        mask = torch.bernoulli(self.keep)
        h = h * mask * (1.0 / KEEP)
        h = torch.tanh(self.b(h))
        h = F.dropout(h, 0.1, self.training)
        return self.c(h)


def train(runtime=None, steps=6):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rt = runtime(model, opt) if runtime is not None else None
    losses = []
    if rt is not None:
        rt.__enter__()
    try:
        for i in range(steps):
            g = torch.Generator().manual_seed(i)
            x = torch.randn(32, 64, generator=g)
            y = torch.randn(32, 8, generator=g)
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            losses.append(loss.item())
            opt.step()
    finally:
        if rt is not None:
            rt.__exit__(None, None, None)
    return losses, rt


class RecipeTest(unittest.TestCase):
    def test_random_op_recomputed_bitwise_and_rng_stream_untouched(self):
        with SwapRuntime(device_memory=1 << 30, provider=None, recipes=True) as rt:
            torch.manual_seed(7)
            b = torch.rand(1000)
            expected = b.clone()
            sid = C.storage_id(b)
            self.assertTrue(rt._recipes.can_recompute(sid))
            with rt.pause():
                b.zero_()  # the bytes are gone (as after a drop)
            torch.rand(5)  # the stream moved on: recomputing must not use it
            state = torch.get_rng_state()
            rt._recompute_for_test(sid)
            self.assertTrue(torch.equal(b, expected))
            # fork_rng: the global stream carries on as if nothing ran.
            self.assertTrue(torch.equal(torch.get_rng_state(), state))
            self.assertEqual(rt._recipes.recomputed_seeded, 1)

    def test_explicit_generator_is_not_recomputable(self):
        # Only the default generator's state is restored: an op drawing from
        # its own torch.Generator gets no recipe (it would draw new numbers).
        with SwapRuntime(device_memory=1 << 30, provider=None, recipes=True) as rt:
            b = torch.rand(100, generator=torch.Generator().manual_seed(3))
            self.assertFalse(rt._recipes.can_recompute(C.storage_id(b)))
            c = torch.rand(100)
            self.assertTrue(rt._recipes.can_recompute(C.storage_id(c)))

    def test_record_says_rng_state_restorable(self):
        # SwapRuntime restores the generator state when it recomputes, and
        # declares it (swapplan_rt_framework.rng_state_restorable): the
        # execution record carries the trace attribute planners read
        # (trace/recompute.h), so random ops' outputs may be recomputed.
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "run.json")
            train(lambda m, o: SwapRuntime(device_memory=1 << 40, model=m, optimizer=o,
                                           provider=None, record=path), steps=1)
            with open(path) as f:
                meta = json.load(f)["metadata"]
            self.assertEqual(meta["recorder"], "swapplan_runtime")
            self.assertEqual(meta["attributes"].get("rng_state_restorable"), "true")

    def test_written_or_aliasing_outputs_are_not_recomputable(self):
        w = torch.randn(8, 8)
        with SwapRuntime(device_memory=1 << 30, provider=None, recipes=True) as rt:
            a = w.exp()
            self.assertTrue(rt._recipes.can_recompute(C.storage_id(a)))
            a.add_(1)  # written after it was made: its recipe is stale
            self.assertFalse(rt._recipes.can_recompute(C.storage_id(a)))
            e = torch.empty(8)  # an empty* factory: its bytes are whatever was there
            self.assertFalse(rt._recipes.can_recompute(C.storage_id(e)))
            t = w.exp().relu()
            u = torch.relu_(t)  # in place: no recipe for an alias
            self.assertIs(u, t)
            self.assertFalse(rt._recipes.can_recompute(C.storage_id(t)))

    def test_dead_input_is_not_recomputable(self):
        w = torch.randn(8, 8)
        with SwapRuntime(device_memory=1 << 30, provider=None, recipes=True) as rt:
            h = w.exp()
            g = h.tanh()
            del h
            rt._tracker.full_poll(-1)
            self.assertFalse(rt._recipes.can_recompute(C.storage_id(g)))


class WorkspaceTest(unittest.TestCase):
    """workspace_bytes(sid), the bytes a recomputation holds besides the
    restored storage (the runtime makes room for them and counts them:
    swapplan_rt_framework.recompute_workspace_bytes), against what an
    outside meter sees while the recomputation runs. 64 x 64 float32 = 16384
    bytes a tensor."""

    def run_case(self, make):
        from swapplan.testing.residency import ResidencyMeter
        w = torch.randn(64, 64)
        with ResidencyMeter(keep_samples=True) as meter:
            with SwapRuntime(device_memory=1 << 30, provider=None, recipes=True) as rt:
                target, off = make(w)
                sid = C.storage_id(target)
                expected = target.clone()
                self.assertTrue(rt._recipes.can_recompute(sid))
                with rt.pause():
                    for t in off:  # inputs whose bytes are gone (dropped)
                        C.untyped_storage(t).resize_(0)
                predicted = rt._recipes.workspace_bytes(sid)
                base, first = meter.resident_bytes(), len(meter.samples)
                rt._recompute_for_test(sid)
                held = max(max(b, a) for _, _, b, a in meter.samples[first:]) - base
                self.assertTrue(torch.equal(target, expected))
        return predicted, held

    def test_out_overload_with_inputs_resident_holds_nothing(self):
        # exp.out writes the restored storage: 0.
        self.assertEqual(self.run_case(lambda w: (w.exp(), ())), (0, 0))

    def test_multi_output_op_holds_all_its_outputs(self):
        # native_layer_norm returns (y, mean, rstd): y is computed aside with
        # its 64 x 1 mean and rstd (256 bytes each), then copied in:
        # 16384 + 256 + 256 = 16896.
        self.assertEqual(self.run_case(lambda w: (F.layer_norm(w, (64,)), ())),
                         (16896, 16896))

    def test_input_off_the_device_is_recomputed_into_a_temporary(self):
        # tanh(h) with h = exp(w) dropped: exp runs again into a 16384-byte
        # temporary, tanh.out writes the restored storage.
        def make(w):
            h = w.exp()
            return h.tanh(), (h,)
        self.assertEqual(self.run_case(make), (16384, 16384))

    def test_input_view_of_another_shape_is_copied_beside_its_storage(self):
        # tanh(h.t()) with h dropped: exp's temporary (16384) and the copy of
        # it the transposed view is taken from (16384) live at once: 32768.
        def make(w):
            h = w.exp()
            return h.t().tanh(), (h,)
        self.assertEqual(self.run_case(make), (32768, 32768))


class TrainingTest(unittest.TestCase):
    def test_recompute_policy_losses_identical(self):
        baseline, _ = train()
        _, probe = train(lambda m, o: SwapRuntime(device_memory=1 << 40, model=m, optimizer=o,
                                                  provider=None), steps=2)
        budget = probe.stats["peak_device_bytes"]
        losses, rt = train(lambda m, o: SwapRuntime(
            device_memory=budget, model=m, optimizer=o, warmup_iterations=1,
            genpolicy_iterations=1, planner="recompute",
            planner_args=["--planner-option", "recompute.logical_layers=1"], on_oom="count"))
        s = rt.stats
        print("recompute policy:", {k: s[k] for k in (
            "policy_drops", "policy_recomputes", "recompute_fallbacks_to_swap",
            "recomputed_random_storages", "policy_swaps", "use_while_off_device", "ooms")})
        self.assertEqual(losses, baseline)  # bitwise
        self.assertGreater(s["policy_recomputes"], 0)
        self.assertGreater(s["recomputed_random_storages"], 0)  # the bernoulli mask
        # F.dropout's mask (bernoulli_ in place) and outputs whose inputs died
        # are swapped instead, counted.
        self.assertGreater(s["recompute_fallbacks_to_swap"], 0)
        self.assertEqual(s["use_while_off_device"], 0)


if __name__ == "__main__":
    unittest.main()
