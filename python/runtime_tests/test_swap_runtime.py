"""swapplan.runtime.SwapRuntime on real PyTorch training steps (CPU): losses
bit-identical to the run without it, the budget held by Algorithm 3, the
runtime's bytes equal to the live storages', swapped storages really freed,
a policy from `swapplan plan` run from its file, injected copy errors
failing a step without losing a tensor, an OOM raised as one."""

import ctypes
import gzip
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_ROOT = os.environ.get(
    "SWAPPLAN_SOURCE_ROOT",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from swapplan.runtime import (SwapCopyFailed, SwapOutOfMemory, SwapRuntime,  # noqa: E402
                              SwapplanPlanProvider, find_swapplan_binary)
from swapplan.runtime import _lib as L  # noqa: E402

torch.set_num_threads(1)


def make(seed=0, width=128, depth=4, lead_tanh=False):
    torch.manual_seed(seed)
    model = nn.Sequential(*([nn.Tanh()] if lead_tanh else []),
                          *[nn.Sequential(nn.Linear(width, width), nn.Tanh())
                            for _ in range(depth)], nn.Linear(width, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def step(model, opt, i, width=128, batch=512):
    g = torch.Generator().manual_seed(1000 + i)
    x = torch.randn(batch, width, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    value = loss.item()
    opt.step()
    return value


def baseline(steps, **kw):
    model, opt = make(**kw)
    return [step(model, opt, i) for i in range(steps)]


# Unswapped, a step of this model holds 2382976 bytes at its peak (as the
# runtime counts: 0.8 MB of parameters, gradients and momentum, the rest
# activations of 512 x 128 floats). 1.9 MB force Algorithm 3 in warm-up; a
# policy swapping early activations fits.
TIGHT = 1900000


class SwapRuntimeTest(unittest.TestCase):
    def test_losses_identical_under_algorithm3(self):
        expected = baseline(5)
        model, opt = make()
        with SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt, provider=None) as rt:
            got = [step(model, opt, i) for i in range(5)]
        self.assertEqual(got, expected)
        s = rt.stats
        self.assertEqual(s["iterations"], 5)
        self.assertGreater(s["counts"]["passive_swap_outs"], 0)
        self.assertLessEqual(s["peak_device_bytes"], TIGHT)
        self.assertEqual(s["ooms"], 0)
        self.assertEqual(s["use_while_off_device"], 0)

    def test_runtime_bytes_are_the_live_storages_bytes(self):
        # At every step boundary: what the runtime counts on the device is the
        # sum of the tracked storages' real sizes, and a storage the runtime
        # says is off the device really holds no memory.
        model, opt = make()
        rt = SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt, provider=None,
                         auto_step=False)
        with rt:
            for i in range(3):
                step(model, opt, i)
                rt._tracker.full_poll(-1)
                resident_bytes = 0
                off = 0
                flag = ctypes.c_int32()
                for sid, m in rt._tracker.live.items():
                    if not m.handle:
                        continue
                    storage = torch.UntypedStorage._new_with_weak_ptr(rt._tracker.weak[sid])
                    L.check(rt._lib, rt._lib.swapplan_rt_tensor_resident(
                        rt._env, m.handle, ctypes.byref(flag)), "tensor_resident")
                    if flag.value:
                        self.assertEqual(storage.nbytes(), m.size)
                        resident_bytes += m.size
                    else:
                        self.assertEqual(storage.nbytes(), 0)  # really freed
                        off += 1
                    del storage
                self.assertEqual(rt.stats["device_bytes_in_use"], resident_bytes)
                rt.step()
        self.assertGreater(rt.stats["counts"]["passive_swap_outs"], 0)

    def test_stages_and_a_planned_policy_keep_losses_identical(self):
        expected = baseline(8)
        model, opt = make()
        with tempfile.TemporaryDirectory() as work:
            with SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt,
                             warmup_iterations=1, genpolicy_iterations=1, work_dir=work,
                             planner_args=["--min-tensor-bytes", "1KiB"]) as rt:
                got = [step(model, opt, i) for i in range(8)]
            rows = rt.iterations
        self.assertEqual(got, expected)
        stages = [r["stage"] for r in rows]
        self.assertIn("Stable", stages, msg=str([(r["stage"], r["plan_error"]) for r in rows]))
        stable = [r for r in rows if r["stage"] == "Stable"]
        self.assertTrue(all(r["policy"] >= 0 for r in stable))
        self.assertGreater(sum(r["counts"]["policy_swap_outs"] for r in stable), 0)
        self.assertTrue(all(r["peak_bytes"] <= TIGHT for r in rows))
        self.assertEqual(sum(r["counts"]["uses_while_off_device"] for r in rows), 0)

    def test_keyed_policies_two_inputs_two_policies(self):
        # Batches of 512 and 256 rows: two input signatures. The key is the
        # first forward op's tensors (varying/policy_set.h): with a Linear
        # first that op is aten::t of its weight, the same for every batch,
        # so this model starts with a Tanh, whose input and output are
        # batch x 128 floats (512: 2 x 262144 = 524288 bytes; 256: 262144).
        batches = [512, 512, 256, 512, 256, 512, 256, 512, 256, 512]
        bm, bo = make(lead_tanh=True)
        expected = [step(bm, bo, i, batch=b) for i, b in enumerate(batches)]
        model, opt = make(lead_tanh=True)
        asked = []
        with tempfile.TemporaryDirectory() as work:
            plan = SwapplanPlanProvider(planner_args=["--min-tensor-bytes", "1KiB"])

            def provider(request):
                asked.append(request)
                return plan(request)

            # The per-op clock: every iteration a row of the stage machine.
            with SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt, provider=provider,
                             warmup_iterations=1, genpolicy_iterations=1, work_dir=work,
                             stable_clock="dispatch") as rt:
                got = [step(model, opt, i, batch=b) for i, b in enumerate(batches)]
            rows, stats = rt.iterations, rt.stats
        self.assertEqual(got, expected)
        why = str([(r["stage"], r["policy"], r["generated_policy"], r["plan_error"])
                   for r in rows])
        self.assertEqual([r["input_signature_bytes"] for r in rows],
                         [524288 if b == 512 else 262144 for b in batches])
        big, small = rows[0]["input_signature_hash"], rows[2]["input_signature_hash"]
        self.assertNotEqual(big, small)
        # W ... W G G S ... (m = 1, n = 1; iteration 0 creates the momentum
        # buffers, so warm-up takes a few steps): asked at the ends of g - 1
        # (entering GenPolicy), g, and g + 1 (entering Stable: observed
        # planning plans it too), each with its iteration's key and the
        # key's records so far, its own last.
        stages = [r["stage"] for r in rows]
        g = stages.index("GenPolicy")
        self.assertEqual(stages, ["WarmUp"] * g + ["GenPolicy"] * 2
                         + ["Stable"] * (len(rows) - g - 2), msg=why)
        self.assertEqual([a["runtime_iteration"] for a in asked], [g - 1, g, g + 1])
        for k, a in enumerate(asked):
            self.assertEqual(a["input_signature_hash"],
                             rows[a["runtime_iteration"]]["input_signature_hash"])
            same = [b["record_path"] for b in asked[:k + 1]
                    if b["input_signature_hash"] == a["input_signature_hash"]]
            self.assertEqual(a["observed_record_paths"], same)
        self.assertEqual(len(asked[2]["observed_record_paths"]), 2)
        # Policy k was made for the key of the row that generated it; a row
        # ran another input's policy exactly when that key is not its own.
        key_of = {r["generated_policy"]: r["input_signature_hash"] for r in rows
                  if r["generated_policy"] >= 0}
        self.assertEqual(sorted(key_of), [0, 1, 2], msg=why)
        for r in rows:
            if r["policy"] >= 0:
                self.assertEqual(r["policy_of_other_input"],
                                 key_of[r["policy"]] != r["input_signature_hash"], msg=why)
        # GenPolicy's first row has the other key (batches alternate after
        # the warm-up): it ran the one policy there was, another input's.
        self.assertTrue(rows[g]["policy_of_other_input"], msg=why)
        # Stable: two policies, each row its own key's.
        stable = [r for r in rows if r["stage"] == "Stable"]
        self.assertEqual(len({r["policy"] for r in stable}), 2, msg=why)
        self.assertTrue(all(key_of[r["policy"]] == r["input_signature_hash"] for r in stable))
        self.assertEqual(stats["policy_keys"], 2)
        self.assertEqual(stats["policy_of_other_input"],
                         sum(r["policy_of_other_input"] for r in rows))
        self.assertEqual(stats["known_sequence_returns"], 0)
        self.assertEqual(stats["policies_loaded"], 3)
        self.assertTrue(all(r["peak_bytes"] <= TIGHT for r in rows))

    def test_one_key_and_iteration_planning_on_request(self):
        # policies_by_input=False, planning="iteration": the papers' stage
        # machine — one key (0), one record per request, not asked on
        # entering Stable.
        batches = [512, 512, 256, 512, 256, 512, 256]
        model, opt = make(lead_tanh=True)
        asked = []

        def provider(request):
            asked.append(request)
            return None

        with SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt, provider=provider,
                         warmup_iterations=1, genpolicy_iterations=1, policies_by_input=False,
                         planning="iteration", observed_records=3,
                         remembered_sequences=0) as rt:
            for i, b in enumerate(batches):
                step(model, opt, i, batch=b)
        self.assertEqual(len(asked), 2)
        self.assertEqual([a["input_signature_hash"] for a in asked], [0, 0])
        self.assertEqual([len(a["observed_record_paths"]) for a in asked], [1, 1])
        self.assertEqual(rt.stats["policy_keys"], 1)
        with self.assertRaises(ValueError):
            SwapRuntime(device_memory="1GiB", planning="envelope")
        with self.assertRaises(L.SwapRuntimeError) as ctx:
            with SwapRuntime(device_memory=TIGHT, observed_records=0):
                pass
        self.assertIn("observed_records is 0", str(ctx.exception))

    def test_a_policy_file_runs_every_iteration_and_the_record_is_a_trace(self):
        with tempfile.TemporaryDirectory() as work:
            # The binary form (the record="run.trace"), gzip-compressed.
            record = os.path.join(work, "warm.trace.gz")
            model, opt = make()
            with SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt, provider=None,
                             record=record):
                for i in range(2):
                    step(model, opt, i)
            with gzip.open(record, "rb") as f:
                self.assertEqual(f.read(8), b"SWPLTRC1")
            policy = os.path.join(work, "p.pb")
            binary = find_swapplan_binary()
            subprocess.run([binary, "plan", record, "--min-tensor-bytes", "1KiB", "-o", policy],
                           check=True, capture_output=True)
            inspect = subprocess.run([binary, "inspect", record], capture_output=True, text=True)
            self.assertEqual(inspect.returncode, 0, inspect.stderr)
            expected = baseline(4)
            model, opt = make()
            with SwapRuntime(policy, device_memory=TIGHT, model=model, optimizer=opt) as rt:
                got = [step(model, opt, i) for i in range(4)]
            self.assertEqual(got, expected)
            rows = rt.iterations
            self.assertTrue(all(r["policy"] == 0 for r in rows))
            self.assertGreater(rt.stats["policy_swaps"], 0)
            self.assertEqual(rt.stats["use_while_off_device"], 0)

    def test_a_copy_error_fails_the_step_and_loses_nothing(self):
        expected = baseline(4)
        model, opt = make()
        got = []
        with SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt, provider=None) as rt:
            got.append(step(model, opt, 0))
            rt.inject_fault("copy_error", "d2h")
            with self.assertRaises(SwapCopyFailed) as ctx:
                step(model, opt, 1)
            self.assertIn("injected copy error", str(ctx.exception))
            # The failed step changed nothing the next attempt depends on.
            for i in range(1, 4):
                got.append(step(model, opt, i))
        self.assertEqual(got, expected)
        self.assertEqual(rt.stats["counts"]["copy_errors"], 1)

    def test_an_unresolvable_oom_is_raised_or_counted(self):
        model, opt = make()
        with self.assertRaises(SwapOutOfMemory) as ctx:
            with SwapRuntime(device_memory=200000, model=model, optimizer=opt, provider=None):
                step(model, opt, 0)
        self.assertIn("device out of memory", str(ctx.exception))
        expected = baseline(2)
        model, opt = make()
        with SwapRuntime(device_memory=200000, model=model, optimizer=opt, provider=None,
                         on_oom="count") as rt:
            got = [step(model, opt, i) for i in range(2)]
        self.assertEqual(got, expected)
        self.assertGreater(rt.stats["ooms"], 0)
        self.assertGreater(rt.stats["peak_device_bytes"], 200000)

    def test_a_bad_policy_file_is_a_clear_error_at_entry(self):
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "p.json")
            with open(path, "w") as f:
                f.write('{"format": "swapplan-policy"}')
            model, opt = make()
            with self.assertRaises(L.SwapRuntimeError) as ctx:
                with SwapRuntime(path, device_memory=TIGHT, model=model, optimizer=opt):
                    pass
            self.assertIn("binary policy form", str(ctx.exception))
            # Nothing was left installed: plain training goes on.
            self.assertEqual(step(model, opt, 0), baseline(1)[0])

    def test_arguments(self):
        with self.assertRaises(ValueError):
            SwapRuntime(device_memory="1 parsec")
        with self.assertRaises(ValueError):
            SwapRuntime(device_memory="1GiB", keys="exact")
        for name in ("run.trace", "run.trace.gz", "run.json", "run.json.gz"):
            self.assertEqual(SwapRuntime(device_memory="1GiB", record=name).record, name)
        for bad in ("", 42):
            with self.assertRaises(ValueError):
                SwapRuntime(device_memory="1GiB", record=bad)
        self.assertEqual(SwapRuntime(device_memory="6GiB").device_memory, 6 << 30)
        # Only the host backend drives PyTorch tensors (docs/runtime.md "Backends").
        with self.assertRaises(ValueError) as ctx:
            SwapRuntime(device_memory="1GiB", backend="cuda")
        self.assertIn("backend must be 'host'", str(ctx.exception))

    def test_host_backend_even_when_the_environment_names_another(self):
        # $SWAPPLAN_RT_BACKEND selects a C API environment's backend; this
        # integration asks for the host backend explicitly, and its options
        # struct has the library's size (the fields of swapplan_runtime.h).
        model, opt = make()
        old = os.environ.get("SWAPPLAN_RT_BACKEND")
        os.environ["SWAPPLAN_RT_BACKEND"] = "cuda"
        try:
            with SwapRuntime(device_memory=TIGHT, model=model, optimizer=opt) as rt:
                step(model, opt, 0)
                backend = ctypes.c_int32(-7)
                self.assertEqual(rt._lib.swapplan_rt_get_backend(rt._env, ctypes.byref(backend)), 0)
                self.assertEqual(backend.value, L.BACKEND_HOST)
        finally:
            if old is None:
                del os.environ["SWAPPLAN_RT_BACKEND"]
            else:
                os.environ["SWAPPLAN_RT_BACKEND"] = old


if __name__ == "__main__":
    unittest.main()
