"""Issue 30: `swapplan simulate --clock saved-tensors` predicts what the
saved-tensor clock runs (SwapRuntime(stable_clock="hooks")), measured from
outside (ResidencyMeter, entered first).

DropoutLM (_measured.py), one batch shape. swapplan.recorder records three
plain PyTorch steps with their saved-tensor events; `swapplan plan` makes a
policy for a budget on the last recorded iteration; `swapplan simulate`
predicts its peak on both clocks; SwapRuntime runs that policy (its provider
answers GenPolicy with it) inside the meter. Both figures count storages'
bytes as the trace does, so they are compared to the byte:

* budget ratio 1.5: the per-op Stable steps' measured peak is `simulate
  --clock ops`'s, the replayed steps' is `--clock saved-tensors`'s (and the
  runtime's own check of the schedule, hook_checked_peak_bytes);
* budget ratio 2: the per-op policy fits, the snapped one does not
  (`--clock saved-tensors` reports an OOM at a peak above the budget), and
  the runtime refuses that schedule naming the same peak, so every step runs
  on the per-op clock, at `--clock ops`'s peak.

  python3 python/runtime_tests/measured_saved_clock.py   (meson: runtime_measured_saved_clock)
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from _measured import budget_of, lm_step, make_lm, measure_plain, run_measured  # noqa: I100

import torch  # noqa: E402,I100  (after _measured: its exit 77 without torch)

from swapplan import _torch_compat as C  # noqa: E402
from swapplan.recorder import Recorder  # noqa: E402

TORCH_2 = C.torch_version() >= (2, 0)
BINARY = os.environ.get("SWAPPLAN_BINARY", "swapplan")
STEPS, RECORDED = 10, 3


def fixed(model, opt, i):
    return lm_step(model, opt, i, 8)


def swapplan(*args):
    r = subprocess.run([BINARY] + [str(a) for a in args], capture_output=True, text=True)
    if r.returncode not in (0, 3):  # 3: simulate's "does not fit"
        raise AssertionError("swapplan %s: rc %d\n%s%s" % (" ".join(map(str, args)),
                                                          r.returncode, r.stdout, r.stderr))
    return r


@unittest.skipUnless(TORCH_2, "saved-tensor events need PyTorch >= 2.0")
class SimulatePredictsTheHookClockTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain, cls.peak, cls.persistent = measure_plain(make_lm, fixed, STEPS)
        cls.work = tempfile.mkdtemp(prefix="swapplan-saved-clock-")
        cls.trace = os.path.join(cls.work, "lm.json")
        model, opt = make_lm()
        torch.manual_seed(12345)
        with Recorder(cls.trace, model=model, optimizer=opt, record_saved_tensors=True) as rec:
            for i in range(RECORDED):
                fixed(model, opt, i)
                rec.step()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def plan_and_simulate(self, ratio):
        budget = budget_of(self.peak, self.persistent, ratio)
        policy = os.path.join(self.work, "lm-%s.policy" % ratio)
        swapplan("plan", self.trace, "--iteration", RECORDED - 1, "--device-memory",
                 "%dB" % budget, "--h2d-bandwidth", "10GB/s", "--d2h-bandwidth", "10GB/s",
                 "--min-tensor-bytes", "1KiB", "-o", policy)
        sim = {}
        for clock in ("ops", "saved-tensors"):
            r = swapplan("simulate", self.trace, policy, "--device-memory", "%dB" % budget,
                         "--clock", clock, "--json")
            sim[clock] = json.loads(r.stdout)
        return budget, policy, sim

    def run_policy(self, budget, policy, sim):
        # The stage machine asks its provider at GenPolicy; this one answers
        # with the policy simulated, so Stable runs it.
        losses, meter, rt = run_measured(make_lm, fixed, STEPS, budget,
                                         provider=lambda request: policy,
                                         warmup_iterations=1, genpolicy_iterations=1,
                                         stable_clock="hooks")
        s = rt.stats
        stages = iter([r["stage"] for r in rt.iterations])
        kinds = [c if c == "hooks" else next(stages) for c in rt.step_clocks]
        why = "simulated %s; measured per step %s; %s; stats %s" % (
            {k: (v["peak_with_policy_bytes"], v["oom"]["occurred"], v.get("saved_tensor_clock"))
             for k, v in sim.items()},
            meter.iteration_peaks, kinds, {k: v for k, v in s.items() if k.startswith("hook_")})
        print(why)
        self.assertEqual(losses, self.plain, why)
        self.assertEqual(meter.violation_count, 0, why)
        per_op = [meter.iteration_peaks[i] for i, k in enumerate(kinds) if k == "Stable"]
        replayed = [meter.iteration_peaks[i] for i, k in enumerate(kinds) if k == "hooks"]
        self.assertTrue(per_op, why)
        self.assertEqual(set(per_op), {sim["ops"]["peak_with_policy_bytes"]}, why)
        return s, replayed, why

    def test_the_replayed_steps_peak_where_simulate_says(self):
        budget, policy, sim = self.plan_and_simulate(1.5)
        hooks = sim["saved-tensors"]
        self.assertTrue(hooks["saved_tensor_clock"]["hook_clock"])
        self.assertGreater(hooks["saved_tensor_clock"]["num_snapped_items"], 0)
        self.assertFalse(hooks["oom"]["occurred"])
        s, replayed, why = self.run_policy(budget, policy, sim)
        self.assertGreaterEqual(s["hook_iterations"], 3, why)
        self.assertGreater(s["hook_swaps"], 0, why)
        self.assertEqual(set(replayed), {hooks["peak_with_policy_bytes"]}, why)
        self.assertEqual(s["hook_checked_peak_bytes"], hooks["peak_with_policy_bytes"], why)

    def test_a_schedule_simulate_says_does_not_fit_is_refused(self):
        budget, policy, sim = self.plan_and_simulate(2)
        hooks = sim["saved-tensors"]
        self.assertFalse(sim["ops"]["oom"]["occurred"])
        self.assertTrue(hooks["oom"]["occurred"])
        self.assertGreater(hooks["peak_with_policy_bytes"], budget)
        s, replayed, why = self.run_policy(budget, policy, sim)
        self.assertEqual((s["hook_iterations"], replayed), (0, []), why)
        self.assertGreater(s["hook_rejections"], 0, why)
        self.assertIn("the peak would be %d bytes, over the budget of %d"
                      % (hooks["peak_with_policy_bytes"], budget), s["hook_last_rejection"], why)


@unittest.skipUnless(TORCH_2, "saved-tensor events need PyTorch >= 2.0")
class AFixedPolicyRunsOnItsTracesClockTest(unittest.TestCase):
    """SwapRuntime(policy=PATH, model=...): a fixed policy planned on a plain
    recorder trace runs per-op under stable_clock="auto" (the saved-tensor
    hooks make autograd dispatch an aten::detach per saved output it unpacks,
    so that trace's op sequence is not the hooks' one: on a HF GPT-2 step 8
    of 13 items bound when "auto" chose the hooks). A policy planned on a
    trace recorded with record_saved_tensors=True runs on "hooks" (its
    per-op iterations start at the root forward, so their fingerprints
    differ from op 0 on: the batch's ops come before it). Both: every item
    executes in every iteration, inside the meter, losses identical."""

    @classmethod
    def setUpClass(cls):
        cls.plain, cls.peak, cls.persistent = measure_plain(make_lm, fixed, 4)
        cls.budget = budget_of(cls.peak, cls.persistent)
        cls.work = tempfile.mkdtemp(prefix="swapplan-fixed-clock-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def policy(self, saved_events):
        trace = os.path.join(self.work, "lm-%s.json" % saved_events)
        model, opt = make_lm()
        torch.manual_seed(12345)
        with Recorder(trace, model=model, optimizer=opt,
                      record_saved_tensors=saved_events) as rec:
            for i in range(RECORDED):
                fixed(model, opt, i)
                rec.step()
        policy = os.path.join(self.work, "lm-%s.pb" % saved_events)
        r = swapplan("plan", trace, "--iteration", RECORDED - 1, "--device-memory",
                     "%dB" % self.budget, "--h2d-bandwidth", "10GB/s", "--d2h-bandwidth",
                     "10GB/s", "--min-tensor-bytes", "1KiB", "-o", policy, "--json")
        items = json.loads(r.stdout)["num_items"]
        self.assertGreater(items, 0)
        return policy, items

    def run_fixed(self, policy, items, **args):
        losses, meter, rt = run_measured(make_lm, fixed, 4, self.budget, policy=policy,
                                         provider=None, **args)
        rows = rt.iterations
        why = "%s: %d items; per iteration %s, matched %s, first divergent op %s" % (
            rt.stable_clock, items, [r["counts"]["policy_swap_outs"] for r in rows],
            [r["fingerprint_matched"] for r in rows], [r["first_divergent_op"] for r in rows])
        print(why)
        self.assertEqual(losses, self.plain[:4], why)
        self.assertEqual(meter.violation_count, 0, why)
        self.assertTrue(rows, why)
        self.assertEqual([r["counts"]["policy_swap_outs"] for r in rows], [items] * len(rows), why)
        return rt, why

    def test_auto_runs_a_plain_traces_policy_per_op(self):
        policy, items = self.policy(False)
        rt, why = self.run_fixed(policy, items)
        self.assertEqual(rt.stable_clock, "dispatch")
        # Step 0 is AdamW's first (it makes its state); the policy's step after it.
        self.assertEqual([r["fingerprint_matched"] for r in rt.iterations][1:], [True] * 3, why)

    def test_hooks_run_a_policy_planned_with_saved_tensor_events(self):
        policy, items = self.policy(True)
        rt, why = self.run_fixed(policy, items, stable_clock="hooks")
        self.assertEqual(rt.stable_clock, "hooks")


@unittest.skipUnless(TORCH_2, "saved-tensor events need PyTorch >= 2.0")
class TheRuntimesRecordCarriesTheEventsTest(unittest.TestCase):
    """SwapRuntime(stable_clock="hooks", record=PATH): every per-op iteration
    of the record has its saved-tensor events (the C API's
    swapplan_rt_saved_tensor_event), the same sequence the recorder writes
    for that step (swapplan.recorder, independent code) shifted by the ops
    before the root forward, which the hook mode does not see; and `swapplan
    simulate --clock saved-tensors` runs on the record."""

    def test_the_record_has_the_recorders_events(self):
        work = tempfile.mkdtemp(prefix="swapplan-record-saved-")
        self.addCleanup(shutil.rmtree, work, True)
        steps = 8
        plain, peak, persistent = measure_plain(make_lm, fixed, steps)
        budget = budget_of(peak, persistent)
        record = os.path.join(work, "run.json")
        _, meter, rt = run_measured(make_lm, fixed, steps, budget, record=record,
                                    warmup_iterations=1, genpolicy_iterations=1,
                                    stable_clock="hooks",
                                    planner_args=["--min-tensor-bytes", "1KiB"])
        self.assertEqual(meter.violation_count, 0)
        trace = os.path.join(work, "recorder.json")
        model, opt = make_lm()
        torch.manual_seed(12345)
        with Recorder(trace, model=model, optimizer=opt, record_saved_tensors=True) as rec:
            for i in range(RECORDED):
                fixed(model, opt, i)
                rec.step()
        with open(record) as f:
            got = json.load(f)["iterations"]
        with open(trace) as f:
            want = json.load(f)["iterations"][RECORDED - 1]
        # Row k of rt.iterations is record iteration k; the hook iterations have none.
        self.assertEqual(len(got), len(rt.iterations))
        self.assertGreater(rt.stats["hook_iterations"], 0)
        before = next(k for k, op in enumerate(want["ops"]) if op["phase"] == "FORWARD")
        self.assertEqual(before, 2)  # aten::randint and the batch's slice
        expected = [(e["position"] - before, e["kind"]) for e in want["saved_tensor_events"]]
        self.assertEqual(len(expected), 80)  # 40 packs, 40 unpacks per step
        for k, it in enumerate(got[1:], 1):  # step 0 is AdamW's first
            self.assertEqual([(e["position"], e["kind"]) for e in it["saved_tensor_events"]],
                             expected, "record iteration %d" % k)
            self.assertEqual(len(it["ops"]), len(want["ops"]) - before)
        last = len(got) - 1
        policy = os.path.join(work, "p.pb")
        swapplan("plan", record, "--iteration", last, "--device-memory", "%dB" % budget,
                 "--min-tensor-bytes", "1KiB", "-o", policy)
        r = swapplan("simulate", record, policy, "--device-memory", "%dB" % budget, "--clock",
                     "saved-tensors", "--json")
        clock = json.loads(r.stdout)["saved_tensor_clock"]
        self.assertTrue(clock["hook_clock"], clock)
        self.assertGreater(clock["num_snapped_items"], 0, clock)


if __name__ == "__main__":
    unittest.main()
