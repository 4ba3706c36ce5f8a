#!/usr/bin/env bash
# Issue 23: overhead over ideal of the practice baselines (selective,
# te-offload, save-on-cpu) beside chameleon and recompute on one trace at
# r = 2, 3, 4, 6, 8, 12 (`compare --oversubscription r`, one compare per r;
# each takes well under a second on the 32-layer llama trace). Prints one
# markdown row per planner: the overhead, or "infeasible (peak X)" with the
# peak the planner's own policy reaches; te-offload's cell adds the k it chose.
# Usage: bench/baselines_table.sh [TRACE]
#   (default traces/llama2-7b-dp8-seq4096.trace.gz; SWAPPLAN_BIN overrides
#   ./build/swapplan). Bounded: 6 compares, a 120 s timeout each.
set -euo pipefail
cd "$(dirname "$0")/.."
trace="${1:-traces/llama2-7b-dp8-seq4096.trace.gz}"
bin="${SWAPPLAN_BIN:-./build/swapplan}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
planners="ideal,chameleon,recompute,selective,te-offload,save-on-cpu"
ratios="2 3 4 6 8 12"
for r in $ratios; do
  mkdir -p "$tmp/$r"
  # Exit 3 (nothing fits) still writes the report.
  timeout 120 "$bin" compare "$trace" --oversubscription "$r" --planners "$planners" --json \
    --save-policies "$tmp/$r" -q > "$tmp/$r.json" 2>/dev/null || [ $? -eq 3 ]
done
python3 - "$tmp" "$ratios" "$planners" <<'PY'
import json, os, re, sys
tmp, ratios, planners = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(",")[1:]
def gib(b):
    return "%.2f GiB" % (b / 2**30)
cells = {p: [] for p in planners}
ideal = None
for r in ratios:
    j = json.load(open(os.path.join(tmp, r + ".json")))
    ideal = j["ideal_iteration_time_ns"]
    for row in j["rows"]:
        p = row["planner"]
        if p not in cells:
            continue
        if row["feasible"]:
            cell = "+%.1f %%" % (100 * row["overhead_vs_ideal_fraction"])
            if p == "te-offload":
                pol = json.load(open(os.path.join(tmp, r, p + ".json")))
                k = next((x["value"] for x in pol.get("parameters", [])
                          if x.get("name") == "offload_layers"), "?")
                cell += " (k = %s)" % k
        else:
            m = re.search(r"peaks at ([0-9.]+ [KMG]iB)", row.get("note") or "")
            cell = "infeasible (peak %s)" % m.group(1) if m else "infeasible"
        cells[p].append(cell)
print("iteration with unlimited memory: %.3f s" % (ideal / 1e9))
print("| r (oversubscription) | " + " | ".join(ratios) + " |")
print("|---|" + "---|" * len(ratios))
for p in planners:
    print("| %s | %s |" % (p, " | ".join(cells[p])))
PY
