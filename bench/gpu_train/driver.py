"""The GPU training check: a model that does not fit its budget trains under
swapplan's policies and under what users use today, side by side.

    python3 bench/gpu_train/driver.py --out OUT [--dry-run] [--rows a,b] [...]

Each row runs in its own process (worker.py, forked by procs.py: cap, memory
history and peak statistics start clean; a row that fails or runs past its
time box takes nothing else with it). In order:

1. reference: no swapping, no cap (losses, step time, peaks);
2. trace (trace_phase.py): swapplan's recorder with per-op device times, and
   torch.profiler's execution trace + Kineto with memory;
3. budgets (r = persistent + activations / r of the recorded trace) and, per
   budget, the policies of --planners with the step time `swapplan simulate`
   predicts (plan.py); the same planners on the imported ET + Kineto trace
   for its prediction;
4. rows: the runtime with no policy (its own overhead), then per budget each
   planner's policy run by SwapRuntime, save_on_cpu, checkpointing,
   torchtune's OffloadActivations, TransformerEngine; last, one swapplan row
   again with the CUDA memory history from its first allocation (the
   snapshot; its times are not compared) — the reference instead when that
   row does not run.

OUT/results.json is rewritten after every row and OUT/table.md at the end
(table.py). --dry-run: model.SIZES["dry"] on the CPU and the host backend
(its budget is the runtime's own count of device bytes), short steps.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import methods  # noqa: E402,F401  (python/ on sys.path)
import model as M  # noqa: E402
import plan as P  # noqa: E402
import procs  # noqa: E402
import table as T  # noqa: E402
from swapplan.runtime import find_swapplan_binary  # noqa: E402

BASELINES = ("save_on_cpu", "checkpoint", "torchtune")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="results.json, table.md, log, artifacts")
    p.add_argument("--work", default=None, help="traces, policies, row logs (default: temporary)")
    p.add_argument("--dry-run", action="store_true", help="CPU, toy sizes, host backend")
    p.add_argument("--ratios", default="1.5,3")
    p.add_argument("--planners", default="hybrid,chameleon,hyperoffload")
    p.add_argument("--warmup", type=int, default=None, help="default: 3 (dry run: 1)")
    p.add_argument("--steps", type=int, default=None, help="timed steps; default 10 (dry run: 3)")
    p.add_argument("--time-limit-s", type=float, default=None,
                   help="the whole run; rows that would not fit are skipped (default 450, dry "
                        "run 240)")
    p.add_argument("--row-time-box-s", type=float, default=None,
                   help="timed steps stop after this (default 40, dry run 30)")
    p.add_argument("--margin", type=float, default=None,
                   help="fraction of the budget the planners and the runtime leave to the "
                        "caching allocator (the cap is the whole budget); default 0.05 (dry "
                        "run: 0, the host backend counts exact bytes)")
    p.add_argument("--rows", default=None, help="only these rows (comma-separated names)")
    p.add_argument("--swapplan", default=None, help="the swapplan binary")
    return p.parse_args(argv)


class Driver:
    def __init__(self, args):
        self.args = args
        self.dry = args.dry_run
        self.device = "cpu" if self.dry else "cuda"
        self.size = "dry" if self.dry else "gpu"
        self.warmup = args.warmup if args.warmup is not None else (1 if self.dry else 3)
        self.steps = args.steps if args.steps is not None else (3 if self.dry else 10)
        self.limit = args.time_limit_s or (240.0 if self.dry else 450.0)
        self.box = args.row_time_box_s or (30.0 if self.dry else 40.0)
        self.margin = args.margin if args.margin is not None else (0.0 if self.dry else 0.05)
        self.t0 = time.perf_counter()
        os.makedirs(args.out, exist_ok=True)
        self.work = args.work or tempfile.mkdtemp(prefix="swapplan-gpu-train-")
        os.makedirs(self.work, exist_ok=True)
        self.log_file = open(os.path.join(args.out, "log.txt"), "w")
        binary = args.swapplan or find_swapplan_binary()
        # The runtime executes neither a schedule (ops reordered) nor items
        # that wrap around the iteration: hyperoffload is asked for neither.
        options = ["hyperoffload.reorder=false", "hyperoffload.offload-parameters=false"]
        # Dry run: the planners model the host backend's copies (SwapRuntime's
        # defaults) and the toy tensors; on the GPU, the h200 preset.
        if self.dry:
            device_args = ["--h2d-bandwidth", "10GB/s", "--d2h-bandwidth", "10GB/s",
                           "--copy-latency", "10us"]
            options += ["chameleon.min-tensor-bytes=16KiB", "hybrid.swap-min-tensor-bytes=16KiB",
                        "hyperoffload.min-tensor-bytes=16KiB"]
        else:
            device_args = ["--device", "h200-141gb"]
        self.planner = P.Planner(binary, device_args, options)
        env = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
        if self.dry:
            env["OMP_NUM_THREADS"] = "1"
        self.runner = procs.Runner(env)
        self.results = {"meta": self.meta(binary, device_args, options), "budgets": {},
                        "plans": {}, "rows": [], "trace": None}

    def meta(self, binary, device_args, options):
        import torch
        return {"dry_run": self.dry, "device": self.device, "size": self.size,
                "model": M.SIZES[self.size], "parameters": M.parameters(M.SIZES[self.size]),
                "torch": torch.__version__, "python": platform.python_version(),
                "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                "warmup": self.warmup, "steps": self.steps, "margin": self.margin,
                "swapplan": binary, "device_args": device_args, "planner_options": options,
                "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])}

    def log(self, msg):
        line = "[%6.1f s] %s" % (time.perf_counter() - self.t0, msg)
        print(line, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    def left(self):
        return self.limit - (time.perf_counter() - self.t0)

    def save(self):
        path = os.path.join(self.args.out, "results.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.results, f, indent=1)
        os.replace(path + ".tmp", path)

    # ------------------------------------------------------------- processes
    def _spawn(self, module, spec, name, timeout_s):
        spec_path = os.path.join(self.work, name + ".spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        log_path = os.path.join(self.work, name + ".log")
        rc = self.runner.run(module, spec_path, log_path, max(1.0, timeout_s))
        killed = rc is None
        try:
            with open(spec["result"]) as f:
                result = json.load(f)
        except (OSError, ValueError):
            result = {"name": name, "status": "error", "error": "no result written"}
        if killed:
            result["status"] = "timeout"
            result["error"] = "killed after %.0f s (the row's figures so far are kept)" % timeout_s
        elif rc != 0 and result.get("status") in ("running", "ok"):
            result["status"] = "error"
            result["error"] = "exit %s" % rc
        if result.get("status") not in ("ok", "unavailable"):
            with open(log_path, errors="replace") as f:
                result["log_tail"] = f.read()[-3000:]
        return result

    # ------------------------------------------------------------------ rows
    def row_spec(self, name, method, **extra):
        spec = {"name": name, "method": method, "size": self.size, "device": self.device,
                "warmup": self.warmup, "steps": self.steps,
                "result": os.path.join(self.work, name + ".result.json")}
        spec.update(extra)
        return spec

    def run_row(self, spec, ratio=None, budget=None, plan=None):
        name = spec["name"]
        row = {"name": name, "method": spec["method"], "ratio": ratio, "budget_bytes": budget}
        if not self.wanted(name):
            return None
        left = self.left()
        if left < (8.0 if self.dry else 25.0):
            row.update(status="skipped", error="%.0f s left of the time limit" % left)
        else:
            spec["time_box_s"] = min(self.box, max(1.0, left - 20.0))
            self.log("row %s (%s)" % (name, spec["method"]))
            row.update(self._spawn("worker", spec, name, min(left, self.box + 90.0)))
        self.derive(row, plan)
        self.results["rows"].append(row)
        self.save()
        self.log("  %s: %s" % (name, " / ".join(c for c in T.cells(row)[2:])))
        return row

    def wanted(self, name):
        return not self.args.rows or name == "reference" or name in self.args.rows.split(",")

    def derive(self, row, plan):
        times = row.get("step_s", [])[self.warmup:]
        row["steps_timed"] = len(times)
        if times:
            row["step_ms_median"] = 1e3 * statistics.median(times)
        ref = self.results["rows"][0] if self.results["rows"] else None
        compared = not row["name"].endswith("-snapshot")  # the history's cost
        if ref is not None and ref is not row and ref.get("step_ms_median") and \
                row.get("step_ms_median") and compared:
            row["overhead_vs_reference"] = row["step_ms_median"] / ref["step_ms_median"] - 1
        if ref is not None and ref is not row and row.get("losses"):
            mine, theirs = row["losses"], ref.get("losses", [])
            n = min(len(mine), len(theirs))
            diff = next((i for i in range(n) if mine[i] != theirs[i]), None)
            row["losses_identical"] = n > 0 and diff is None
            row["losses_compared"] = n
            row["first_loss_diff"] = diff
        if plan and plan.get("predicted_step_ns"):
            row["predicted_step_ms"] = plan["predicted_step_ns"] / 1e6
            if row.get("step_ms_median"):
                row["fidelity"] = row["step_ms_median"] / row["predicted_step_ms"]
        if plan and plan.get("et_predicted_step_ns"):
            row["et_predicted_step_ms"] = plan["et_predicted_step_ns"] / 1e6
        if plan:
            row["policy"] = os.path.basename(plan.get("policy") or "")
            row["plan_error"] = plan.get("error")
        budget = row.get("budget_bytes")
        if budget:
            peak = row.get("peak_reserved_bytes", row.get("runtime_peak_device_bytes"))
            row["within_budget"] = None if peak is None else peak <= budget

    # ------------------------------------------------------------ the phases
    def trace(self):
        spec = {"size": self.size, "device": self.device, "warmup": 2, "timed_steps": 3,
                "trace": os.path.join(self.work, "recorder.json.gz"),
                "et": os.path.join(self.work, "et.json"),
                "kineto": os.path.join(self.work, "kineto.json"),
                "result": os.path.join(self.work, "trace.result.json")}
        self.log("trace: recorder, op times, execution trace + Kineto")
        t = self._spawn("trace_phase", spec, "trace", max(30.0, self.left() - 60.0))
        t["paths"] = {k: spec[k] for k in ("trace", "et", "kineto")}
        self.results["trace"] = t
        self.save()
        self.log("  trace: %s %s" % (t["status"], "; ".join(
            str(t[k]) for k in ("error", "durations_error", "et_error") if t.get(k))))
        return t

    def plans(self, trace, ratios, planners):
        recorder = trace["paths"]["trace"]
        et_trace = None
        if trace.get("et"):
            try:
                et_trace = self.planner.import_et(trace["paths"]["et"], trace["paths"]["kineto"],
                                                  os.path.join(self.work, "et.trace.gz"))
            except Exception as e:  # noqa: BLE001 - reported, the rows go on
                trace["et_import_error"] = str(e)
        for r in ratios:
            key = "%g" % r
            try:
                b = self.planner.budget(recorder, r)
            except Exception as e:  # noqa: BLE001
                self.results["budgets"][key] = {"error": str(e)}
                continue
            self.results["budgets"][key] = b
            d = os.path.join(self.work, "r" + key)
            os.makedirs(d, exist_ok=True)
            self.log("plan r = %s: budget %d B (persistent %d, peak %d)" % (
                key, b["budget_bytes"], b["persistent_bytes"], b["peak_unswapped_bytes"]))
            try:
                made = self.planner.policies(recorder, b["budget_bytes"], planners,
                                             self.margin, d)
            except Exception as e:  # noqa: BLE001 - each row says "no policy: ..."
                made = {name: {"error": str(e)} for name in planners}
            if et_trace:
                self._et_predictions(et_trace, r, made, os.path.join(d, "et"))
            self.results["plans"][key] = made
            self.save()

    def _et_predictions(self, et_trace, r, made, d):
        """The same planners on the imported ET + Kineto trace at its own
        budget for r (its persistent and peak bytes): the importer path's
        prediction, reported beside the executed policy's."""
        os.makedirs(d, exist_ok=True)
        try:
            b = self.planner.budget(et_trace, r)
            for name, e in self.planner.policies(et_trace, b["budget_bytes"], list(made),
                                                 self.margin, d).items():
                made[name].update(et_budget_bytes=b["budget_bytes"],
                                  et_predicted_step_ns=e.get("predicted_step_ns"),
                                  et_error=e.get("error"))
        except Exception as e:  # noqa: BLE001 - reported, the rows go on
            for name in made:
                made[name]["et_error"] = str(e)

    def run(self):
        args = self.args
        ratios = [float(x) for x in args.ratios.split(",") if x]
        planners = [x for x in args.planners.split(",") if x]
        self.run_row(self.row_spec("reference", "reference"))
        trace = self.trace()
        if trace["status"] == "ok":
            self.plans(trace, ratios, planners)
        # No policy and a budget nothing reaches: the runtime's own overhead.
        empty_budget = self.results["rows"][0].get("device_total_bytes", 1 << 40)
        self.run_row(self.row_spec("runtime-empty", "runtime", runtime_budget_bytes=empty_budget,
                                   **self._bandwidths()))
        order = [(planners[0], r) for r in ratios] + [(b, r) for r in ratios for b in BASELINES] \
            + [(p, r) for p in planners[1:] for r in ratios]
        for what, r in order:
            self._ratio_row(what, r)
        self.run_row(self.row_spec("transformer-engine", "te"))
        if not self.dry and planners:
            row = self._ratio_row(planners[0], ratios[0], snapshot=True)
            if row is not None and row.get("status") != "ok":
                # The allocator's ground truth all the same: the unswapped step.
                self.run_row(self.row_spec("reference-snapshot", "reference", steps=2,
                                           snapshot=self._snapshot_path()))
        self.finish()

    def _snapshot_path(self):
        return os.path.join(self.args.out, "memory_snapshot.pickle.gz")

    def _bandwidths(self):
        return {"h2d_bandwidth": "10GB/s", "d2h_bandwidth": "10GB/s",
                "copy_latency": "10us"} if self.dry else {}

    def _ratio_row(self, what, r, snapshot=False):
        key = "%g" % r
        budget = self.results["budgets"].get(key, {}).get("budget_bytes")
        name = "%s@r%s" % (what, key) + ("-snapshot" if snapshot else "")
        if not self.wanted(name):
            return None
        cap = None if self.dry else budget
        if what in BASELINES:
            return self.run_row(self.row_spec(name, what, cap_bytes=cap), r, budget)
        made = self.results["plans"].get(key, {}).get(what, {})
        row_plan = dict(made)
        if not made.get("policy") or budget is None:
            row = {"name": name, "method": "runtime", "ratio": r, "budget_bytes": budget,
                   "status": "unavailable",
                   "error": "no policy: %s" % (made.get("error") or "planning did not run")}
            self.results["rows"].append(row)
            self.save()
            return row
        extra = dict(cap_bytes=cap, policy=made["policy"],
                     runtime_budget_bytes=made["plan_budget_bytes"], **self._bandwidths())
        if snapshot:
            extra.update(snapshot=self._snapshot_path(), steps=2)
            row_plan = None  # its times carry the history's cost: not compared
        return self.run_row(self.row_spec(name, "runtime", **extra), r, budget, row_plan)

    def finish(self):
        self.results["meta"]["wall_s"] = time.perf_counter() - self.t0
        self.save()
        md = T.markdown(self.results)
        with open(os.path.join(self.args.out, "table.md"), "w") as f:
            f.write(md)
        print(md)
        self.pack()
        self.log_file.close()

    def pack(self, limit=15 << 20):
        """Traces, policies and row logs as OUT/artifacts.tar.gz: every work
        file of at most 4 MiB and the recorded trace; only the row files
        (results, specs, logs) when that archive is over `limit` bytes (a
        GPU machine's call returns files of at most 16 MiB)."""
        files = []
        for root, _, names in os.walk(self.work):
            files += [os.path.join(root, n) for n in sorted(names) if not n.endswith(".tmp")]
        path = os.path.join(self.args.out, "artifacts.tar.gz")
        small = [f for f in files if os.path.getsize(f) <= 4 << 20 or
                 os.path.basename(f) == "recorder.json.gz"]
        rows_only = [f for f in files if f.endswith((".result.json", ".spec.json", ".log"))]
        for chosen in (small, rows_only):
            with tarfile.open(path, "w:gz") as tar:
                for f in chosen:
                    tar.add(f, arcname=os.path.relpath(f, self.work))
            if os.path.getsize(path) <= limit:
                break
        if not self.args.work:
            shutil.rmtree(self.work, ignore_errors=True)


def main(argv=None):
    Driver(parse(argv if argv is not None else sys.argv[1:])).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
