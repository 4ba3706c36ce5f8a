"""The real-model corpus driver (bench/real_models/README.md): for each model,
two recordings of the same training steps (torch.profiler's execution trace
+ Kineto, and swapplan's recorder), the importer's trace against the
recorder's and against Kineto's own allocator peak, `advise` at r = 1.5 and
r = 3, and the best policy executed on the runtime with an independent
residency measure. Prints one JSON object per model and the table of
docs/real-models.md; writes everything under --out.

    .venv/bin/python bench/real_models/run.py --models gpt2,llama --steps 3
"""

import argparse
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import checks  # noqa: E402
import models  # noqa: E402
import record  # noqa: E402


def mib(b):
    return "%.1f MiB" % (b / 2**20) if b is not None and b >= 0 else "-"


def pct(x):
    return "%.2f %%" % (100 * x) if x is not None else "-"


def peak_where(report):
    at = report["peak_unswapped_at"]
    kinds = sorted(((v, k) for k, v in report["peak_bytes_by_kind"].items() if v > 0),
                   reverse=True)
    big = ", ".join("%s %s" % (k, mib(v)) for v, k in kinds[:3])
    names = ", ".join(t["name"] or str(t["tensor_id"]) for t in report["largest_at_peak"][:2])
    return "it %d %s `%s`: %s (largest %s)" % (at["iteration"], at["phase"], at["op_name"], big,
                                              names)


def run_model(name, args, s):
    d = os.path.join(args.out, name)
    os.makedirs(d, exist_ok=True)
    et, kin, rec = (os.path.join(d, f) for f in ("et.json", "kineto.json", "recorder.json.gz"))
    make = lambda: models.build(name)  # noqa: E731
    res = {"model": name, "steps": args.steps}
    t = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res["losses_profiler"] = record.with_profiler(make, args.steps, et, kin)
    res["profile_s"] = time.monotonic() - t
    t = time.monotonic()
    res["losses_recorder"], summary = record.with_recorder(make, args.steps, rec)
    res["record_s"] = time.monotonic() - t
    res["parameters"] = make().parameters()
    # The importer's trace at the dispatch level (--et-ops dispatch: the ops
    # the recorder's dispatch mode sees); the default leaf level is kept for
    # the record.
    imported = s.inspect(et, kineto=kin, et_ops="dispatch")
    leaves = s.inspect(et, kineto=kin)
    res["imported_leaves"] = {k: leaves[k] for k in ("num_ops", "peak_unswapped_bytes",
                                                     "resident_at_start_bytes")}
    recorded = s.inspect(rec)
    kineto = s.inspect(kin)
    res["kineto_alone"] = {k: v for k, v in kineto.items()
                           if k in ("num_ops", "peak_unswapped_bytes", "resident_at_start_bytes",
                                    "num_ops_by_phase", "allocator_diff")}
    res["agreement"] = checks.agreement(imported, recorded, kineto)
    res["recorder_peak_bytes"] = summary["peak_bytes"]
    res["peak_where_recorded"] = peak_where(recorded)
    res["peak_where_imported"] = peak_where(imported)
    res["first_step_imported"] = imported.get("first_step")
    res["first_step_recorded"] = recorded.get("first_step")
    res["import_notes"] = {k: v for k, v in imported.get("import", {}).items()
                           if k.startswith("note.")}
    res["advice"] = {}
    for r in args.ratios:
        budget = checks.budget_at(recorded, r)
        policy = os.path.join(d, "policy_r%g.pb" % r)
        adv, secs = s.advise(rec, budget, policy)
        row = {"budget_bytes": budget, "advise_s": secs, "verdict": checks.verdict_of(adv),
               "best": adv.get("best"), "first_step": adv.get("first_step")}
        imp_adv, _ = s.advise(et, budget, kineto=kin, et_ops="dispatch")
        row["verdict_on_imported"] = checks.verdict_of(imp_adv)
        if args.runtime and adv.get("best") and adv["best"]["num_items"] > 0:
            # The best policy the runtime can run (the best overall may
            # reorder ops or keep windows across the iteration boundary).
            import e2e
            rt_policy = os.path.join(d, "policy_runtime_r%g.pb" % r)
            rt_adv, _ = s.advise(rec, budget, rt_policy, executor="runtime")
            row["best_runtime"] = rt_adv.get("best")
            row["refused_by_runtime"] = {x["planner"]: x["not_executable_reason"]
                                         for x in rt_adv.get("rows", [])
                                         if x.get("not_executable_reason")}
            if rt_adv.get("best") and rt_adv["best"]["num_items"] > 0:
                ex = os.path.join(d, "exec_r%g.json.gz" % r)
                e = e2e.run_policy(make, args.steps, rt_policy, budget, ex)
                row["execution"] = summarize_execution(e, res["losses_recorder"], budget, rt_adv,
                                                       ex, s)
        res["advice"][str(r)] = row
    return res


def summarize_execution(e, losses, budget, adv, record_path, s):
    out = {"error": e["error"]}
    if e["error"]:
        out["ok"] = {"ran": False}
        return out
    st = e["stats"]
    out.update(losses_identical=e["losses"] == losses, meter_peak_bytes=e["meter_peak_bytes"],
               runtime_peak_bytes=st["peak_device_bytes"], policy_swaps=st["policy_swaps"],
               passive_swaps=st["passive_swaps"], ooms=st["ooms"],
               use_while_off_device=st["use_while_off_device"],
               per_iteration_policy_swaps=[r["counts"]["policy_swap_outs"] for r in e["iterations"]],
               planned_swap_outs=adv["best"]["num_items"])  # one item per swapped tensor
    rep, _ = s.advise(record_path, budget, executor="runtime")  # as the policy run was chosen
    out["replanned"] = checks.verdict_of(rep)
    out["ok"] = {
        "ran": True,
        "losses_identical": out["losses_identical"],
        "measured_peak_le_budget": e["meter_peak_bytes"] is not None
        and e["meter_peak_bytes"] <= budget,
        "executed_eq_planned": all(n == out["planned_swap_outs"]
                                   for n in out["per_iteration_policy_swaps"]),
        "replanned_same_verdict": checks.same_verdict(out["replanned"], checks.verdict_of(adv)),
    }
    return out


def table(results, ratios):
    head = ("| model | parameters | ops (ET+Kineto / recorder) | unswapped peak (recorder) | "
            "where the peak is | " +
            " | ".join("r = %g: best, overhead" % r for r in ratios) +
            " | ops / peak / phases agree | vs Kineto peak (imported / recorded) | "
            "planning time |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for res in results:
        a = res["agreement"]
        cells = [res["model"], "{:,}".format(res["parameters"]),
                 "%d / %d (%s)" % (a["ops_imported"], a["ops_recorded"], pct(a["ops_rel"])),
                 mib(a["peak_recorded"]), res["peak_where_recorded"]]
        times = []
        for r in ratios:
            row = res["advice"][str(r)]
            b = row["best"]
            cell = ("%s %+.1f %%" % (b["planner"], 100 * b["overhead_vs_ideal_fraction"])
                    if b else "nothing fits")
            rb = row.get("best_runtime")
            if rb and b and rb["planner"] != b["planner"]:
                cell += "; runtime: %s %+.1f %%" % (rb["planner"],
                                                    100 * rb["overhead_vs_ideal_fraction"])
            elif "best_runtime" in row and not rb:
                cell += "; runtime: nothing it can run fits"
            ex = row.get("execution")
            if ex:
                failed = [k for k, v in ex["ok"].items() if not v]
                cell += "; executed: " + ("all checks hold" if not failed
                                          else "fails " + ", ".join(failed))
                rp = ex.get("replanned") or {}
                if rp.get("best") and rb and rp["best"] != rb["planner"]:
                    cell += " (re-planned: %s %+.1f %%)" % (rp["best"], rp["overhead_percent"])
            cells.append(cell)
            times.append("%.1f s" % row["advise_s"])
        ok = a["ok"]
        cells.append("%s / %s (%s) / %s" % ("yes" if ok["ops"] else "NO",
                                            "yes" if ok["peak"] else "NO", pct(a["peak_rel"]),
                                            "yes" if ok["phases"] else "NO"))
        cells.append("%s / %s" % (pct(a["imported_vs_kineto_rel"]),
                                  pct(a["recorded_vs_kineto_rel"])))
        cells.append(" / ".join(times))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(models.HF_MODELS),
                   help="comma-separated (default: %(default)s; also " +
                   ", ".join(models.VISION_MODELS) + " with torchvision)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--ratios", default="1.5,3")
    p.add_argument("--out", default=os.path.join(ROOT, "build-real-models"))
    p.add_argument("--swapplan", default=os.environ.get("SWAPPLAN_BINARY",
                                                        os.path.join(ROOT, "build", "swapplan")))
    p.add_argument("--no-runtime", dest="runtime", action="store_false",
                   help="skip the execution on the runtime")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args(argv)
    args.ratios = [float(r) for r in args.ratios.split(",")]
    if args.runtime and "SWAPPLAN_RUNTIME_LIB" not in os.environ:
        lib = os.path.join(os.path.dirname(args.swapplan), "src", "libswapplan_runtime.so")
        if os.path.exists(lib):
            os.environ["SWAPPLAN_RUNTIME_LIB"] = lib
    torch.set_num_threads(1)
    s = checks.Swapplan(args.swapplan)
    results = []
    for name in args.models.split(","):
        res = run_model(name, args, s)
        print(json.dumps(res, default=str), flush=True)
        results.append(res)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    print(table(results, args.ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
