"""The Markdown table of a GPU training check's results.json.

    python3 bench/gpu_train/table.py OUT/results.json      # prints the table

One line per row: the budget (r and bytes), the median step time over the
timed steps and its overhead over the reference, the allocator's allocated
and reserved peaks against the budget (on the CPU: the runtime's own count,
the only device memory there is), losses identical to the reference, swaps
and stalls (swapplan rows: the runtime's counts), the step time `swapplan
simulate` predicted for the row's policy and measured / predicted, and the
same planner's prediction on the imported execution trace + Kineto trace.
"""

import json
import sys

COLUMNS = ("row", "budget", "step ms (median of n)", "vs reference", "allocated peak / budget",
           "reserved peak / budget", "losses = reference", "swaps", "stalls (ms)",
           "predicted ms", "measured / predicted", "predicted ms (ET + Kineto)", "status")


def _gib(b):
    return "%.2f GiB" % (b / 2**30) if b >= 2**28 else "%d B" % b


def _ratio(value, budget):
    if value is None or not budget:
        return "–"
    return "%s (%.2f)" % (_gib(value), value / budget)


def cells(row):
    budget = row.get("budget_bytes")
    if row.get("ratio"):
        b = "r = %g, %s" % (row["ratio"], _gib(budget) if budget else "not planned")
    else:
        b = "none"
    median = row.get("step_ms_median")
    step = "%.1f (%d)" % (median, row.get("steps_timed", 0)) if median is not None else "–"
    over = row.get("overhead_vs_reference")
    over = "%+.1f %%" % (100 * over) if over is not None else "–"
    alloc = row.get("peak_allocated_bytes")
    if alloc is None and row.get("runtime_peak_device_bytes") is not None:
        alloc = row["runtime_peak_device_bytes"]
        alloc_cell = _ratio(alloc, budget) + " runtime" if budget else _gib(alloc) + " runtime"
    else:
        alloc_cell = _ratio(alloc, budget) if budget else (_gib(alloc) if alloc else "–")
    reserved = row.get("peak_reserved_bytes")
    reserved_cell = _ratio(reserved, budget) if budget else (_gib(reserved) if reserved else "–")
    same = row.get("losses_identical")
    same = "–" if same is None else ("yes" if same else "no (step %s)" % row.get("first_loss_diff"))
    swaps = row.get("runtime_swaps")
    stalls = row.get("runtime_stalls")
    stall_cell = "%d (%.1f)" % (stalls, row.get("runtime_stall_ms") or 0) if stalls is not None \
        else "–"
    pred = row.get("predicted_step_ms")
    fid = row.get("fidelity")
    status = row.get("status", "?")
    if row.get("error"):
        status += ": " + row["error"].splitlines()[0][:160]
    return (row["name"], b, step, over, alloc_cell, reserved_cell, same,
            "–" if swaps is None else str(swaps), stall_cell,
            "%.1f" % pred if pred is not None else "–",
            "%.2f" % fid if fid is not None else "–",
            "%.1f" % row["et_predicted_step_ms"] if row.get("et_predicted_step_ms") else "–",
            status.replace("|", "/"))


def markdown(results):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in results["rows"]:
        lines.append("| " + " | ".join(cells(row)) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.stdout.write(markdown(json.load(f)))
