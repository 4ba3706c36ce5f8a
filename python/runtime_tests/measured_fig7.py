"""Issue 30 on the Fig. 7 miniature (examples/runtime/train_with_policy.py:
a 3-layer GPT, AdamW, sequence lengths 49..64 that change the op sequence),
trained 12 steps under SwapRuntime inside a ResidencyMeter entered first.
Budget: persistent + (plain peak - persistent) / 1.5, meter figures.

Holds, with swap policies (on the default clock, saved-tensor hooks once a
length's Stable iteration was recorded, and on the per-op clock) and with
RECOMPUTE items (`hybrid` over a 2 MB/s link): losses bit-identical; measured resident bytes <= budget at every op;
the runtime's peak per iteration equal to the meter's; Stable reached; 0
uses while off device, 0 OOMs; every allocation's bytes known before its
kernel.

  python3 python/runtime_tests/measured_fig7.py   (meson: runtime_measured_fig7)
"""

import argparse
import unittest

from _measured import budget_of, measure_plain, run_measured, summary  # noqa: I100

import train_with_policy as example  # noqa: E402 (examples/runtime, on the path below)

from swapplan import _torch_compat as C  # noqa: E402

STEPS = 12
ARGS = argparse.Namespace(seed=0, vocab=256, context=64, d_model=64, heads=4, layers=3, batch=4)
LENGTHS = example.sequence_lengths(STEPS, ARGS.context, ARGS.seed)


def make():
    return example.make_model(ARGS)


def step(model, opt, i):
    x, y = example.batch(ARGS, i, LENGTHS[i])
    return example.train_step(model, opt, x, y, ARGS.vocab)


class MeasuredFig7Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain, peak, persistent = measure_plain(make, step, STEPS)
        cls.budget = budget_of(peak, persistent)
        print("lengths %s; plain peak %d, persistent %d, budget %d"
              % (LENGTHS, peak, persistent, cls.budget))

    def check(self, losses, meter, rt):
        why = summary(meter, rt)
        print(why)
        self.assertEqual(losses, self.plain, why)
        self.assertEqual(meter.violation_count, 0, why)
        s = rt.stats
        self.assertEqual((s["use_while_off_device"], s["ooms"]), (0, 0), why)
        self.assertEqual(s["unpredicted_allocations"], 0, why)
        rows = rt.iterations
        # rt.iterations has the per-op clock's steps (the saved-tensor
        # clock's replayed ones are not the stage machine's).
        per_op = [i for i, c in enumerate(rt.step_clocks) if c == "ops"]
        self.assertEqual(len(per_op), len(rows), why)
        self.assertEqual([r["peak_bytes"] for r in rows],
                         [meter.iteration_peaks[i] for i in per_op], why)
        stages = [r["stage"] for r in rows]
        self.assertIn("Stable", stages, why)
        # Measured so far: every step Stable from the first Stable one on, 0
        # passive swaps there — but once in ~15 runs under load a Stable step
        # missed (timed copies against recorded op times) and went back to
        # GenPolicy, so that is printed, not asserted.
        print("Stable steps after the first: %s; passive swaps in Stable: %d" % (
            all(st == "Stable" for st in stages[stages.index("Stable"):]),
            sum(r["counts"]["passive_swap_outs"] + r["counts"]["passive_swap_ins"]
                for r in rows if r["stage"] == "Stable")))
        return s

    def test_swap(self):
        # The default clock: saved-tensor hooks for a key once its Stable
        # iteration was recorded (the full-context length repeats).
        losses, meter, rt = run_measured(
            make, step, STEPS, self.budget, warmup_iterations=1, genpolicy_iterations=1,
            h2d_bandwidth="8GB/s", d2h_bandwidth="8GB/s",
            planner_args=["--min-tensor-bytes", "1KiB"])
        s = self.check(losses, meter, rt)
        self.assertGreater(s["policy_swaps"], 0)
        if C.torch_version() >= (2, 0):
            why = "steps %s; %s" % (rt.step_clocks, {k: v for k, v in s.items()
                                                     if k.startswith("hook_")})
            print(why)
            self.assertEqual(s["stable_clock"], "hooks", why)
            self.assertGreater(s["hook_iterations"], 0, why)
            self.assertGreater(s["hook_swaps"], 0, why)
            self.assertEqual((s["hook_divergences"], s["hook_late_restores"]), (0, 0), why)

    def test_swap_on_the_per_op_clock(self):
        losses, meter, rt = run_measured(
            make, step, STEPS, self.budget, warmup_iterations=1, genpolicy_iterations=1,
            h2d_bandwidth="8GB/s", d2h_bandwidth="8GB/s", stable_clock="dispatch",
            planner_args=["--min-tensor-bytes", "1KiB"])
        s = self.check(losses, meter, rt)
        self.assertGreater(s["policy_swaps"], 0)
        self.assertEqual(rt.step_clocks, ["ops"] * STEPS)

    def test_recompute_items(self):
        losses, meter, rt = run_measured(
            make, step, STEPS, self.budget, warmup_iterations=1, genpolicy_iterations=1,
            planner="hybrid", h2d_bandwidth="2MB/s", d2h_bandwidth="2MB/s", timed_copies=False)
        self.assertGreater(self.check(losses, meter, rt)["policy_recomputes"], 0)


if __name__ == "__main__":
    unittest.main()
