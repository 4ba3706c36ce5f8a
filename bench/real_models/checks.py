"""The measured checks of the real-model corpus, on files the two recordings
wrote: the importer's trace (execution trace + Kineto) against the recorder's
trace, both against Kineto's own allocator peak, and the advice at an
oversubscription ratio. Everything goes through the swapplan binary, as a
user would run it.

    s = Swapplan("build/swapplan")
    imp = s.inspect("et.json", kineto="kineto.json")
    rec = s.inspect("recorder.json.gz")
    agree = agreement(imp, rec)      # {"ops_ratio": ..., "ok": {...}}
"""

import json
import subprocess
import time

OPS_TOLERANCE = 0.05    # op counts within 5 %
PEAK_TOLERANCE = 0.02   # peaks within 2 %
LINK = ["--h2d-bandwidth", "10GB/s", "--d2h-bandwidth", "10GB/s"]  # the runtime's defaults


class Swapplan:
    def __init__(self, binary):
        self.binary = binary

    def run(self, *args, ok=(0,)):
        start = time.monotonic()
        p = subprocess.run([self.binary] + [str(a) for a in args], capture_output=True, text=True)
        if p.returncode not in ok:
            raise RuntimeError("swapplan %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode,
                                                           p.stderr.strip() or p.stdout.strip()))
        return p, time.monotonic() - start

    def inspect(self, trace, kineto=None, et_ops=None):
        args = ["inspect", trace, "--json"] + (["--kineto", kineto] if kineto else [])
        if et_ops:
            args += ["--et-ops", et_ops]
        p, _ = self.run(*args)
        return json.loads(p.stdout)

    def advise(self, trace, budget_bytes, policy=None, kineto=None, et_ops=None, executor=None):
        """advise at `budget_bytes` (only the policies `executor` can run,
        e.g. "runtime"); (report, wall seconds). Exit 3 (nothing fits) is a
        report too."""
        args = ["advise", trace, "--device-memory", "%dB" % budget_bytes, "--json"] + LINK
        if executor:
            args += ["--executor", executor]
        if kineto:
            args += ["--kineto", kineto]
        if et_ops:
            args += ["--et-ops", et_ops]
        if policy:
            args += ["-o", policy]
        p, secs = self.run(*args, ok=(0, 3))
        return json.loads(p.stdout), secs


def steady_iteration(report):
    """The iteration `advise` uses: the last with FORWARD and BACKWARD ops
    (inspect's per-iteration rows do not carry phases: the last one)."""
    return report["num_iterations"] - 1


def budget_at(report, ratio, iteration=None):
    """persistent + (peak - persistent) / r of one iteration (the formula of
    curve/oversubscription.h)."""
    it = report["iterations"][steady_iteration(report) if iteration is None else iteration]
    persistent = it["persistent_bytes"]
    return persistent + int((it["peak_unswapped_bytes"] - persistent) // ratio)


def phases(report):
    """The training phases a trace has. OTHER is left out: the recorder
    calls OTHER what runs outside forward, backward and optimizer.step()
    (loss.item() after backward), which an importer's rules put in BACKWARD
    (docs/importers.md); both counts are reported."""
    return {k for k, v in report["num_ops_by_phase"].items() if v > 0 and k != "OTHER"}


def rel(a, b):
    return abs(a - b) / max(abs(b), 1)


def above_start(report):
    """A trace's unswapped peak above the bytes resident before its first op."""
    return report["peak_unswapped_bytes"] - report["resident_at_start_bytes"]


def kineto_peak_above_start(kineto):
    """Kineto's own figure: its Total Allocated peak minus its value when the
    trace begins (the first event's Total Allocated less its Bytes). On the
    CPU, Total Allocated counts what the profiler saw allocated and freed in
    the process, so memory made before profiling (parameters) is missing and
    an earlier profiled run leaves an offset; the growth is what both
    recordings can be held to. The Kineto import rebuilds Total Allocated op
    by op (inspect's allocator diff 0 B), so its peak minus its resident
    bytes is that figure."""
    assert kineto["allocator_diff"]["max_abs_bytes"] == 0, kineto["allocator_diff"]
    return above_start(kineto)


def agreement(imported, recorded, kineto):
    """Importer (ET + Kineto) vs recorder, and both vs Kineto's own peak."""
    kineto_peak = kineto_peak_above_start(kineto)
    above = above_start
    out = {
        "ops_imported": imported["num_ops"], "ops_recorded": recorded["num_ops"],
        "ops_rel": rel(imported["num_ops"], recorded["num_ops"]),
        "peak_imported": imported["peak_unswapped_bytes"],
        "peak_recorded": recorded["peak_unswapped_bytes"],
        "peak_rel": rel(imported["peak_unswapped_bytes"], recorded["peak_unswapped_bytes"]),
        "phases_imported": imported["num_ops_by_phase"],
        "phases_recorded": recorded["num_ops_by_phase"],
        "kineto_peak": kineto_peak,
        "imported_above_start": above(imported), "recorded_above_start": above(recorded),
        "imported_vs_kineto_rel": rel(above(imported), kineto_peak) if kineto_peak > 0 else None,
        "recorded_vs_kineto_rel": rel(above(recorded), kineto_peak) if kineto_peak > 0 else None,
        "paired": imported.get("import", {}).get("kineto_paired_ops"),
    }
    out["ok"] = {
        "ops": out["ops_rel"] <= OPS_TOLERANCE,
        "peak": out["peak_rel"] <= PEAK_TOLERANCE,
        "phases": phases(imported) == phases(recorded),
        "imported_vs_kineto": out["imported_vs_kineto_rel"] is not None
        and out["imported_vs_kineto_rel"] <= PEAK_TOLERANCE,
        "recorded_vs_kineto": out["recorded_vs_kineto_rel"] is not None
        and out["recorded_vs_kineto_rel"] <= PEAK_TOLERANCE,
    }
    return out


# Two verdicts agree when their best overheads are this close (CPU op times
# move between runs: Llama's lru at r = 3 measured +0.19 % to +2.05 %).
SAME_OVERHEAD_POINTS = 1.0


def verdict_of(advice):
    """What `advise` concluded, for comparing two runs: fits or not, the best
    planner (None when nothing fits) and its overhead over ideal."""
    best = advice.get("best")
    return {"fits_without_swapping": advice["fits_without_swapping"],
            "best": best["planner"] if best else None,
            "overhead_percent": 100.0 * best["overhead_vs_ideal_fraction"] if best else None}


def same_verdict(a, b):
    """Both fit without swapping, or neither; a policy fits in both or in
    neither; the best overheads within SAME_OVERHEAD_POINTS. The planner's
    name is not part of it (a tie at +0.00 % is broken by row order; the
    table prints the re-planned planner when it differs)."""
    if a["fits_without_swapping"] != b["fits_without_swapping"]:
        return False
    if (a["best"] is None) != (b["best"] is None):
        return False
    return a["best"] is None or abs(a["overhead_percent"] - b["overhead_percent"]) <= \
        SAME_OVERHEAD_POINTS
