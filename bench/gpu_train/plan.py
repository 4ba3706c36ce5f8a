"""Budgets, policies and predictions for the GPU training check, from the
`swapplan` CLI (run as a subprocess; on the GPU machine the bundled binary).

    p = Planner(binary, device_args=["--device", "h200-141gb"])
    b = p.budget(trace, 3.0)            # persistent + (peak - persistent) / 3
    made = p.policies(trace, b, ["hybrid", "chameleon"], margin=0.05, out_dir=d)
    made["hybrid"]["policy"], made["hybrid"]["predicted_step_ns"]

`budget` is `swapplan compare --oversubscription R` (the trace's unswapped
peak and persistent bytes, the definition the planners use).
`policies` plans every planner at the budget less `margin` of it (left for
the caching allocator's rounding and fragmentation: the cap the rows run
under is the whole budget), writes the binary self-contained policies the
runtime loads (`swapplan policy upgrade`) and asks `swapplan simulate` for
each one's step time on the device. A planner that fails has an "error".
"""

import json
import os
import subprocess


class Planner:
    def __init__(self, binary, device_args=(), planner_options=(), timeout_s=240):
        self.binary = binary
        self.device_args = list(device_args)
        self.options = [a for o in planner_options for a in ("--planner-option", o)]
        self.timeout_s = timeout_s

    def _run(self, args, ok=(0,)):
        p = subprocess.run([self.binary] + args, capture_output=True, text=True,
                           timeout=self.timeout_s)
        if p.returncode not in ok:
            raise RuntimeError("swapplan %s exited %d: %s" % (args[0], p.returncode,
                                                             (p.stderr or p.stdout).strip()[-800:]))
        return p

    def inspect(self, trace):
        return json.loads(self._run(["inspect", trace, "--json"]).stdout)

    def budget(self, trace, ratio):
        """{budget_bytes, persistent_bytes, peak_unswapped_bytes} at ratio r."""
        out = self._run(["compare", trace, "--oversubscription", "%gx" % ratio, "--planners",
                         "noswap", "--json"] + self.device_args, ok=(0, 3))
        r = json.loads(out.stdout)
        return {k: r[k] for k in ("budget_bytes", "persistent_bytes", "peak_unswapped_bytes",
                                  "ideal_iteration_time_ns")}

    def policies(self, trace, budget_bytes, planners, margin, out_dir):
        plan_bytes = int(budget_bytes * (1.0 - margin))
        saved = os.path.join(out_dir, "compare")
        out = self._run(["compare", trace, "--device-memory", "%dB" % plan_bytes, "--planners",
                         ",".join(planners), "--save-policies", saved, "--json"]
                        + self.device_args + self.options, ok=(0, 3))
        report = json.loads(out.stdout)
        rows = {r.get("planner"): r for r in report.get("rows", [])}
        made = {}
        for name in planners:
            entry = {"plan_budget_bytes": plan_bytes}
            row = rows.get(name, {})
            entry["compare_feasible"] = row.get("feasible")
            entry["compare_iteration_time_ns"] = row.get("iteration_time_ns")
            policy_json = os.path.join(saved, name + ".json")
            try:
                if not os.path.exists(policy_json):
                    raise RuntimeError("no policy: %s" % (row.get("error") or row.get("note") or
                                                          "compare wrote none"))
                policy = os.path.join(out_dir, name + ".pb")
                self._run(["policy", "upgrade", policy_json, "--trace", trace, "-o", policy])
                entry["policy"] = policy
                entry.update(self.simulate(trace, policy, plan_bytes))
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                entry["error"] = str(e)
            made[name] = entry
        return made

    def simulate(self, trace, policy, budget_bytes):
        out = self._run(["simulate", trace, policy, "--device-memory", "%dB" % budget_bytes,
                         "--json"] + self.device_args, ok=(0, 3))
        r = json.loads(out.stdout)
        return {"predicted_step_ns": r.get("iteration_time_ns"), "predicted_oom": r.get("oom"),
                "predicted_peak_bytes": r.get("peak_with_policy_bytes"),
                "predicted_stall_ns": r.get("stall_ns"), "num_items": r.get("num_items")}

    def import_et(self, et, kineto, out):
        self._run(["import", et, "--kineto", kineto, "-o", out])
        return out
