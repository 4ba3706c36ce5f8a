"""Issue 30's misuse cases, each with its documented behaviour
(docs/runtime.md "Misuse"), on DropoutLM at a fixed batch shape, measured
from outside by a ResidencyMeter:

1. No model= / optimizer= (the C API's and seed 004's way, iterations ended
   by rt.step()): the parameters and the optimizer state are discovered at
   their first use and counted (stats["discovered_*"]), room made for them
   before the op; the measured peak stays <= budget.
2. rt.step() after opt.step() (auto_step on): one iteration per step, not
   two — the extra rt.step() ends nothing (stats["redundant_steps"]); the
   stage machine reaches Stable and runs policies.
3. Iterations that never repeat an op sequence: after warn_unrepeated_after
   iterations in WarmUp a RuntimeWarning, once, and stats say so
   (unrepeated_iterations, unrepeated_warning); a loop that repeats gets
   neither.
A torch.compile region inside the block is seen op by op, not skipped, and
reported (stats["compiled_frames_run_eagerly"], one RuntimeWarning); a
compiled model trains with identical losses within the budget and is
reported (stats["compiled_modules"]).
And SwapRuntime(device="cuda") without CUDA is a clear RuntimeError.

  python3 python/runtime_tests/measured_misuse.py   (meson: runtime_measured_misuse)
"""

import unittest
import warnings

from _measured import (budget_of, lm_step, make_lm, measure_plain, run_measured,  # noqa: I100
                       summary)

import torch  # noqa: E402

from swapplan import _torch_compat as C  # noqa: E402
from swapplan.runtime import SwapRuntime  # noqa: E402

STEPS = 8
ROWS = 16


def step(model, opt, i):
    return lm_step(model, opt, i, ROWS)


class MisuseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain, peak, persistent = measure_plain(make_lm, step, STEPS)
        cls.budget = budget_of(peak, persistent)
        cls.persistent = persistent

    def test_1_no_model_no_optimizer_counts_what_it_finds(self):
        losses, meter, rt = run_measured(make_lm, step, STEPS, self.budget,
                                         after_step=lambda rt: rt.step(), model=None,
                                         optimizer=None, provider=None)
        why = summary(meter, rt)
        self.assertEqual(losses, self.plain, why)
        self.assertEqual(meter.violation_count, 0, why)
        s = rt.stats
        self.assertEqual(s["iterations"], STEPS, why)
        # Parameters (made before __enter__) at their first use; the AdamW
        # state is made inside the block (an op creates it).
        params = sum(p.numel() * p.element_size() for p in make_lm()[0].parameters())
        self.assertGreaterEqual(s["discovered_bytes"], params, why)
        self.assertGreater(s["passive_swaps"], 0, why)  # it had to evict to hold the budget
        self.assertEqual((s["ooms"], s["use_while_off_device"]), (0, 0), why)

    def test_2_rt_step_after_opt_step_is_one_iteration(self):
        losses, meter, rt = run_measured(
            make_lm, step, STEPS, self.budget, after_step=lambda rt: rt.step(),
            warmup_iterations=1, genpolicy_iterations=1,
            planner_args=["--min-tensor-bytes", "1KiB"])
        why = summary(meter, rt)
        self.assertEqual(losses, self.plain, why)
        self.assertEqual(meter.violation_count, 0, why)
        s = rt.stats
        # One iteration per step (per-op rows and saved-tensor replays).
        self.assertEqual(s["iterations"] + s["hook_iterations"], STEPS, why)
        self.assertEqual(len(rt.step_clocks), STEPS, why)
        self.assertEqual(s["redundant_steps"], STEPS, why)
        stages = [r["stage"] for r in rt.iterations]
        self.assertEqual(stages[-1], "Stable", why)
        self.assertGreater(s["policy_swaps"], 0, why)
        self.assertIsNone(s["unrepeated_warning"])

    def test_3_iterations_that_never_repeat_warn_once(self):
        # Iteration i runs the model on i + 1 chunks of 4 rows: one forward
        # more every step, so no two op sequences are the same.
        model, opt = make_lm()

        def varying(i):
            opt.zero_grad(set_to_none=True)
            g = torch.Generator().manual_seed(i)
            loss = 0
            for _ in range(i + 1):
                t = torch.randint(0, 128, (4, 33), generator=g)
                loss = loss + torch.nn.functional.cross_entropy(
                    model(t[:, :-1]).reshape(-1, 128), t[:, 1:].reshape(-1))
            loss.backward()
            opt.step()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with SwapRuntime(device_memory=10**9, model=model, optimizer=opt, provider=None,
                             warn_unrepeated_after=5) as rt:
                for i in range(7):
                    varying(i)
                    if i == 3:
                        self.assertIsNone(rt.stats["unrepeated_warning"])
        ours = [w for w in caught if "no two ran the same op sequence" in str(w.message)]
        self.assertEqual(len(ours), 1, [str(w.message) for w in caught])
        self.assertIs(ours[0].category, RuntimeWarning)
        s = rt.stats
        self.assertEqual(s["stage"], "WarmUp")
        self.assertEqual(s["unrepeated_iterations"], 7)
        self.assertIn("5 iterations in a row", s["unrepeated_warning"])

        # The control: the same number of repeating steps, no warning.
        model, opt = make_lm()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with SwapRuntime(device_memory=10**9, model=model, optimizer=opt, provider=None,
                             warn_unrepeated_after=5) as rt:
                for i in range(7):
                    step(model, opt, i)
        self.assertFalse([w for w in caught if "no two ran" in str(w.message)])
        self.assertEqual(rt.stats["unrepeated_iterations"], 0)
        self.assertIsNone(rt.stats["unrepeated_warning"])

    def test_compiled_region_is_seen_not_skipped(self):
        # torch.compile under the runtime's dispatch mode: dynamo runs the
        # region's ops through the mode (the same op count as eager), so no
        # allocation escapes the budget. Skipped, with the reason, where
        # torch.compile cannot run (torch 1.13; Debian's torch without
        # libtorch-dev's headers: _torch_compat.compile_unavailable_reason).
        reason = C.compile_unavailable_reason()
        if reason:
            self.skipTest(reason)

        def block(x):
            return torch.tanh(x) * 2 + 1

        counts, eager_frames, warned = [], [], []
        for fn in (block, torch.compile(block)):
            fn(torch.ones(8))  # compiled (or not) outside the runtime first
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with SwapRuntime(device_memory=10**9, provider=None) as rt:
                    y = fn(torch.ones(64))
                    rt.step()
            counts.append(rt.iterations[0]["ops"])
            eager_frames.append(rt.stats["compiled_frames_run_eagerly"])
            warned.append(any("torch.compile" in str(w.message) for w in caught))
            self.assertEqual(y.tolist(), block(torch.ones(64)).tolist())
        self.assertEqual(counts[1], counts[0])
        self.assertGreaterEqual(counts[0], 3)  # tanh, mul, add (and the ones)
        # Reported: the compiled region ran eagerly (and said so), the eager
        # one is not reported.
        self.assertEqual(eager_frames[0], 0)
        self.assertGreaterEqual(eager_frames[1], 1)
        self.assertEqual(warned, [False, True])

        # A compiled model trains under the runtime as the eager one does:
        # identical losses, the budget held at every op.
        def make_compiled():
            model, opt = make_lm()
            return torch.compile(model), opt

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the report, asserted here
            losses, meter, rt = run_measured(make_compiled, step, 4, self.budget, provider=None)
        self.assertEqual(losses, self.plain[:4], summary(meter, rt))
        self.assertEqual(meter.violation_count, 0, summary(meter, rt))
        self.assertEqual(rt.stats["compiled_modules"], 1)

    def test_cuda_without_cuda_is_a_clear_error(self):
        if torch.cuda.is_available():
            self.skipTest("this machine has CUDA")
        with self.assertRaises(RuntimeError) as e:
            SwapRuntime(device="cuda", device_memory="1GiB")
        self.assertIn("no CUDA device", str(e.exception))
        with self.assertRaises(ValueError):
            SwapRuntime(device="xla", device_memory="1GiB")


if __name__ == "__main__":
    unittest.main()
