#!/usr/bin/env bash
# Issue 17: a training table in the spirit of seed 003 Fig. 6(a) — a
# llama-8B-class model, DP 8 (ZeRO-2), step time vs the host link's
# bandwidth (D2H = H2D = 33.6, 40, 55, 70 GB/s) for hyperoffload, chameleon,
# full recomputation (`recompute`) and no swapping, all at the same budget:
# the device's 64 GiB (ascend-910b-64g preset). The trace is synthesized:
#   swapplan synth --model llama3-8b --device ascend-910b-64g --seq 8192
#     --micro-batch 2 --dp 8 --zero 2 --flops-efficiency $EFF
# (batch 2 per rank, GBS 16, as §7.2.1). Prints one markdown row per
# planner: the simulated step time and its change against full
# recomputation (the paper's baseline keeps memory with recomputation), or
# "infeasible (peak X)"; then the step time with unlimited memory.
# Usage: bench/hyperoffload_fig6.sh   (SWAPPLAN_BIN overrides
#   ./build/swapplan; SEQ, MBS, EFF override 8192, 2, 1). Bounded: one
#   synth and 4 compares, a 120 s timeout each (each takes well under a
#   second here).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${SWAPPLAN_BIN:-./build/swapplan}"
seq="${SEQ:-8192}"
mbs="${MBS:-2}"
eff="${EFF:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
timeout 120 "$bin" synth --model llama3-8b --device ascend-910b-64g --seq "$seq" \
  --micro-batch "$mbs" --dp 8 --zero 2 --flops-efficiency "$eff" --no-names -q \
  -o "$tmp/trace.gz"
planners="ideal,hyperoffload,chameleon,recompute,noswap"
bandwidths="33.6 40 55 70"
for bw in $bandwidths; do
  # Exit 3 (nothing fits) still writes the report.
  timeout 120 "$bin" compare "$tmp/trace.gz" --device ascend-910b-64g \
    --d2h-bandwidth "${bw}GB/s" --h2d-bandwidth "${bw}GB/s" --planners "$planners" --json -q \
    > "$tmp/$bw.json" 2>/dev/null || [ $? -eq 3 ]
done
python3 - "$tmp" "$bandwidths" "$planners" "$seq" "$mbs" "$eff" <<'PY'
import json, os, re, sys
tmp, bws, planners = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(",")[1:]
seq, mbs, eff = sys.argv[4:7]
cells = {p: [] for p in planners}
ideal = peak = budget = None
for bw in bws:
    j = json.load(open(os.path.join(tmp, bw + ".json")))
    ideal, peak, budget = j["ideal_iteration_time_ns"], j["peak_unswapped_bytes"], j["budget_bytes"]
    rows = {row["planner"]: row for row in j["rows"]}
    base = rows["recompute"]["iteration_time_ns"] if rows["recompute"]["feasible"] else None
    for p in planners:
        row = rows[p]
        if row["feasible"]:
            t = row["iteration_time_ns"]
            cell = "%.3f s" % (t / 1e9)
            if base and p != "recompute":
                cell += " (%+.1f %%)" % (100.0 * (t - base) / base)
        else:
            m = re.search(r"peaks at ([0-9.]+ [KMG]iB)", row.get("note") or "")
            cell = "infeasible (peak %s)" % m.group(1) if m else "infeasible"
        cells[p].append(cell)
print("llama3-8b, seq %s, micro-batch %s, DP 8 ZeRO-2, flops efficiency %s; budget %.2f GiB, "
      "unswapped peak %.2f GiB" % (seq, mbs, eff, budget / 2**30, peak / 2**30))
print("| D2H = H2D bandwidth | " + " | ".join(b + " GB/s" for b in bws) + " |")
print("|---|" + "---|" * len(bws))
for p in planners:
    print("| %s | %s |" % (p, " | ".join(cells[p])))
print("step time with unlimited memory (no swapping): %.3f s" % (ideal / 1e9))
PY
