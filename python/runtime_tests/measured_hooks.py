"""Issue 30, the saved-tensor clock (SwapRuntime(stable_clock="hooks"),
_hookclock.py): Stable iterations replayed on autograd's pack/unpack events
with no dispatch mode, measured from outside (ResidencyMeter entered first).

Holds on DropoutLM (_measured.py), one batch shape and the cycle of 8:
losses bit-identical to plain PyTorch; measured resident bytes <= budget at
every op, hook iterations included; every key replayed from its first clean
Stable iteration on; swaps in the replayed iterations; 0 divergences, 0 late
restores. A forward that takes another branch on one step is caught as a
divergence (counted), its key recorded again, and replayed again.

  python3 python/runtime_tests/measured_hooks.py   (meson: runtime_measured_hooks)
"""

import unittest

from _measured import (CYCLE, budget_of, lm_step, make_lm, measure_plain,  # noqa: I100
                       run_measured, summary)

import torch  # noqa: E402,I100  (after _measured: its exit 77 without torch)

from swapplan import _torch_compat as C  # noqa: E402
from swapplan.runtime import SwapRuntime  # noqa: E402

TORCH_2 = C.torch_version() >= (2, 0)

ARGS = dict(warmup_iterations=1, genpolicy_iterations=1, stable_clock="hooks",
            planner_args=["--min-tensor-bytes", "1KiB"])


def fixed(model, opt, i):
    return lm_step(model, opt, i, 8)


def cycle(model, opt, i):
    return lm_step(model, opt, i, CYCLE[i % len(CYCLE)])


def hooks_summary(meter, rt):
    s = rt.stats
    return summary(meter, rt) + "; hooks: %s" % {k: v for k, v in s.items()
                                                  if k.startswith("hook_")}


class RefusedOnTorch1Test(unittest.TestCase):
    @unittest.skipIf(TORCH_2, "torch 1.13 only")
    def test_torch_1_13_is_refused_with_the_reason(self):
        model, opt = make_lm()
        with self.assertRaisesRegex(ValueError, "needs PyTorch >= 2.0.*stable_clock='dispatch'"):
            SwapRuntime(device_memory="1GiB", model=model, optimizer=opt, stable_clock="hooks")


@unittest.skipUnless(TORCH_2, "stable_clock='hooks' needs PyTorch >= 2.0 (refused on 1.13)")
class MeasuredHooksTest(unittest.TestCase):
    def check(self, plain, budget, losses, meter, rt):
        why = hooks_summary(meter, rt)
        print(why)
        self.assertEqual(losses, plain, why)
        self.assertEqual(meter.violation_count, 0, why)
        self.assertLessEqual(meter.peak_bytes, budget, why)
        s = rt.stats
        self.assertEqual((s["use_while_off_device"], s["ooms"]), (0, 0), why)
        self.assertEqual((s["hook_divergences"], s["hook_late_restores"]), (0, 0), why)
        self.assertGreater(s["hook_swaps"], 0, why)
        self.assertLessEqual(s["hook_checked_peak_bytes"], budget, why)
        # The stage machine saw the per-op iterations only.
        self.assertEqual(s["iterations"] + s["hook_iterations"], len(losses), why)
        return s

    def test_one_shape(self):
        steps = 12
        plain, peak, persistent = measure_plain(make_lm, fixed, steps)
        budget = budget_of(peak, persistent)
        losses, meter, rt = run_measured(make_lm, fixed, steps, budget, **ARGS)
        s = self.check(plain, budget, losses, meter, rt)
        # WarmUp, GenPolicy, one Stable iteration (recorded and captured),
        # then every step replayed on the saved-tensor clock.
        rows = rt.iterations
        self.assertEqual([r["stage"] for r in rows][-1:], ["Stable"], hooks_summary(meter, rt))
        self.assertEqual(s["hook_iterations"], steps - len(rows), hooks_summary(meter, rt))
        self.assertGreaterEqual(s["hook_iterations"], 4, hooks_summary(meter, rt))
        self.assertEqual(s["hook_schedules"], 1)
        # The replayed iterations' measured peaks: within what the check allowed.
        self.assertLessEqual(max(meter.iteration_peaks[len(rows):]),
                             s["hook_checked_peak_bytes"])

    def test_cycle_of_eight_shapes(self):
        steps = 5 * len(CYCLE)
        plain, peak, persistent = measure_plain(make_lm, cycle, steps)
        budget = budget_of(peak, persistent)
        losses, meter, rt = run_measured(make_lm, cycle, steps, budget, **ARGS)
        s = self.check(plain, budget, losses, meter, rt)
        self.assertEqual(s["hook_schedules"], len(CYCLE), hooks_summary(meter, rt))
        # The last sighting of every shape is a replayed one.
        self.assertGreaterEqual(s["hook_iterations"], len(CYCLE))

    def test_a_divergent_branch_is_caught_and_recorded_again(self):
        steps, odd = 14, 8
        model_holder = {}

        def step(model, opt, i):
            model_holder["m"] = model
            model.extra = i == odd   # one step runs another op sequence
            return lm_step(model, opt, i, 8)

        def make():
            model, opt = make_lm()
            forward = model.forward

            def branchy(idx):
                out = forward(idx)
                return torch.tanh(out) * 4 if getattr(model, "extra", False) else out
            model.forward = branchy
            return model, opt

        plain, peak, persistent = measure_plain(make, step, steps)
        budget = budget_of(peak, persistent)
        losses, meter, rt = run_measured(make, step, steps, budget, **ARGS)
        why = hooks_summary(meter, rt)
        print(why)
        s = rt.stats
        self.assertEqual(losses, plain, why)
        # Measured: within the budget here too (after the divergence nothing
        # more leaves, what is out comes back at its unpack) — not a
        # guarantee: the rest of a divergent iteration runs on no clock.
        self.assertEqual(meter.violation_count, 0, why)
        self.assertEqual(s["hook_divergences"], 1, why)
        self.assertIn("divergence", s["hook_last_rejection"], why)
        # Replayed before the odd step and again after it was recorded anew.
        self.assertGreater(s["hook_iterations"], odd - 3, why)
        self.assertEqual(s["hook_schedules"], 1, why)


if __name__ == "__main__":
    unittest.main()
