#!/usr/bin/env python3
"""The runtime shim's proof (issue 14): examples/runtime/train_with_policy.py
with fuzzy keys, then naive keys, on the same run, both with the papers'
stage machine (--one-key --planning iteration: one policy runs steps of every
sequence length, which is what the keys are tested on); then with the
runtime's defaults (a policy per input signature, issue 16).

Fuzzy keys: losses bit-identical, the peak under the budget in every step
(warm-up included), the stable peak within 5 % of the planned one, no use
while off device, no OOM. Naive keys: still no crash and identical losses,
but more passive swaps or OOMs in Stable than fuzzy keys. Keyed (fuzzy keys):
losses identical, the peak under the budget in every step, no use while off
device, no OOM, and more than one policy key (the lengths differ). Keyed
policies are why the papers' stage machine is asked for the key comparison:
with them each length runs a policy planned on its own input, and naive keys
then miss nothing either. Exit 0 when all
hold, 1 (listing what failed) otherwise, 77 (skipped) without PyTorch.
"""
import json
import os
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
STEPS = os.environ.get("SWAPPLAN_FIG7_STEPS", "10")


def main():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("needs PyTorch: %s" % e)
        return 1 if os.environ.get("SWAPPLAN_REQUIRE_TORCH") == "1" else 77
    sys.path.insert(0, os.path.join(ROOT, "examples", "runtime"))
    import train_with_policy as example
    results = {}
    runs = {"fuzzy": ["--keys", "fuzzy", "--one-key", "--planning", "iteration"],
            "naive": ["--keys", "naive", "--one-key", "--planning", "iteration"],
            "keyed": ["--keys", "fuzzy"]}
    for name, extra in runs.items():
        results[name] = example.main(["--steps", STEPS] + extra)
        r = results[name]
        print(name, json.dumps({k: r[k] for k in ("keys", "loss_identical", "budget_bytes",
                                                  "peak_device_bytes", "planned_peak_bytes",
                                                  "stable_peak_device_bytes", "policy_swaps",
                                                  "passive_swaps", "use_while_off_device",
                                                  "ooms", "policy_keys", "policy_of_other_input",
                                                  "stable", "seconds")}))
    problems = []
    f, n, k = results["fuzzy"], results["naive"], results["keyed"]
    for s in k["per_step"]:
        if s["peak_bytes"] > k["budget_bytes"]:
            problems.append("keyed: step %d peak %d > budget %d" % (s["step"], s["peak_bytes"],
                                                                   k["budget_bytes"]))
    if k["use_while_off_device"] != 0 or k["ooms"] != 0:
        problems.append("keyed: %d uses while off device, %d OOMs"
                        % (k["use_while_off_device"], k["ooms"]))
    if k["policy_keys"] < 2:
        problems.append("keyed: %d policy keys; the sequence lengths differ" % k["policy_keys"])
    for name, r in results.items():
        if not r["loss_identical"]:
            problems.append("%s: losses differ from the run without the shim" % name)
    budget = f["budget_bytes"]
    for s in f["per_step"]:
        if s["peak_bytes"] > budget:
            problems.append("fuzzy: step %d peak %d > budget %d" % (s["step"], s["peak_bytes"],
                                                                   budget))
    if f["stable"]["iterations"] == 0 or f["planned_peak_bytes"] is None:
        problems.append("fuzzy: no Stable step with a planned policy: %s"
                        % [(s["stage"], s["policy"], s["plan_error"]) for s in f["per_step"]])
    else:
        planned, stable = f["planned_peak_bytes"], f["stable_peak_device_bytes"]
        if abs(stable - planned) > 0.05 * planned:
            problems.append("fuzzy: stable peak %d is not within 5%% of the planned %d"
                            % (stable, planned))
    if f["use_while_off_device"] != 0:
        problems.append("fuzzy: %d uses while off device" % f["use_while_off_device"])
    if f["ooms"] != 0:
        problems.append("fuzzy: %d OOMs" % f["ooms"])
    trouble = lambda r: r["stable"]["passive_swaps"] + r["stable"]["ooms"]  # noqa: E731
    if not trouble(n) > trouble(f):
        problems.append("naive: %d passive swaps + OOMs in Stable, fuzzy %d: naive keys should "
                        "do worse on the varying sequence" % (trouble(n), trouble(f)))
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
