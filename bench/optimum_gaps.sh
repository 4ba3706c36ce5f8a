#!/usr/bin/env bash
# Issue 20 target: every planner's gap to the MILP bound on traces of at
# most 300 ops — the quality set's loss_scale_validation (251 ops), the
# two-layer toy, and 1- and 2-layer llama2-7b (DP8, ZeRO-2) and gpt2 traces
# synthesized here (`swapplan synth`, written to $TMPDIR). Per case one
# `compare --optimum --optimum-no-recompute` with the Advisor included (the
# swap-only bound: the class of the swap planners), then `optimum` (swap +
# recompute: the hybrid bound, for reference); prints
#   case  ops  swap-only bound  status  incumbent  best-planner  its-gap  [per planner]  hybrid bound
# Usage: bench/optimum_gaps.sh [MILP_LIMIT] [SEARCH_LIMIT]   (default 120s, 30s)
set -euo pipefail
cd "$(dirname "$0")/.."
milp="${1:-120s}"
search="${2:-30s}"
bin="${SWAPPLAN_BIN:-./build/swapplan}"
tmp="${TMPDIR:-/tmp}/swapplan-optimum-gaps"
mkdir -p "$tmp"
for l in 1 2; do
  [ -f "$tmp/llama-${l}l.trace.gz" ] || "$bin" synth --model llama2-7b --layers $l --dp 8 --zero 2 -q -o "$tmp/llama-${l}l.trace.gz"
  [ -f "$tmp/gpt2-${l}l.trace.gz" ] || "$bin" synth --model gpt2 --layers $l -q -o "$tmp/gpt2-${l}l.trace.gz"
done
run() {  # name, compare args...
  local name="$1"; shift
  local out
  out=$("$bin" compare "$@" --planners noswap,chameleon,recompute,vdnn,lru,bucket,advisor \
        --planner-option advisor.time-limit-ns="$search" --planner-option advisor.max-generations=0 \
        --optimum --optimum-no-recompute --optimum-time-limit "$milp" --json 2>/dev/null) || true
  local hybrid
  hybrid=$("$bin" optimum "$@" --time-limit "$milp" --json --quiet 2>/dev/null \
           | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["lower_bound_ns"], j["status"].replace(" ", "_"), j["incumbent_ns"])' \
           2>/dev/null) || hybrid="-"
  python3 - "$name" <<'PY' "$out" "$hybrid"
import json, sys
name, text, hybrid = sys.argv[1], sys.argv[2], sys.argv[3]
if not text.strip():
    print("%-34s (compare failed)" % name); sys.exit()
j = json.loads(text)
o = j.get("optimum", {})
if "error" in o:
    print("%-34s %4d  no bound: %s" % (name, j["num_ops"], o["error"][:80])); sys.exit()
gaps = {r["planner"]: r.get("gap_to_bound_fraction") for r in j["rows"] if r.get("gap_to_bound_fraction") is not None}
best = min(gaps, key=gaps.get) if gaps else "-"
per = " ".join("%s %+.2f%%" % (p, 100 * g) for p, g in sorted(gaps.items(), key=lambda x: x[1]))
print("%-30s %4d  swap-only bound %12d %-24s incumbent %12s proven %-5s best %s %s  [%s]  hybrid: %s" % (
    name, j["num_ops"], o["lower_bound_ns"], o["status"], o["incumbent_ns"], o["proven_optimal"],
    best, ("%+.2f%%" % (100 * gaps[best])) if gaps else "-", per, hybrid))
PY
}
run "two_layers 400B 250MB/s" tests/data/traces/two_layers.json --device-memory 400B --h2d-bandwidth 250MB/s --d2h-bandwidth 250MB/s \
    --planner-option chameleon.min-tensor-bytes=0
run "loss_scale_validation r=1.1" traces/loss_scale_validation.json.gz --iteration 1 --oversubscription 1.1 \
    --h2d-bandwidth 16GB/s --d2h-bandwidth 16GB/s --planner-option chameleon.min-tensor-bytes=0
for r in 1.25 1.5; do
  for m in llama-1l llama-2l gpt2-1l gpt2-2l; do
    run "$m r=$r" "$tmp/$m.trace.gz" --oversubscription $r --planner-option chameleon.min-tensor-bytes=0
  done
done
