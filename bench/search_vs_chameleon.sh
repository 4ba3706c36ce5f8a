#!/usr/bin/env bash
# Issue 20 target: `search` (the Advisor, seeded, with its default 60 s time
# limit) against Chameleon on the quality set — every entry of quality.json
# plus the llama2-7b 4- and 32-layer DP8 traces at r = 1.25, 1.5, 2, 3.
# Each case is one `compare --planners chameleon,advisor` with the entry's
# settings (the advisor in compare gets compare's own Chameleon policy as a
# seed, judged by the same simulator). Prints one line per case:
#   trace  setting  chameleon_ns  search_ns  change
# Usage: bench/search_vs_chameleon.sh [TIME_LIMIT] [THREADS]   (default 60s, 0 = all cores)
# Takes about (cases x TIME_LIMIT); run from the repository root after a build.
set -euo pipefail
cd "$(dirname "$0")/.."
limit="${1:-60s}"
threads="${2:-0}"
bin=./build/swapplan
run() {  # name, compare args...
  local name="$1"; shift
  local out
  out=$("$bin" compare "$@" --planners chameleon,advisor --json \
        --planner-option advisor.time-limit-ns="$limit" --planner-option advisor.max-generations=0 \
        --planner-option advisor.threads="$threads" 2>/dev/null)
  python3 - "$name" <<PY "$out"
import json, sys
j = json.loads(sys.argv[2])
rows = {r["planner"]: r for r in j["rows"]}
c = rows["chameleon"]["iteration_time_ns"] if rows["chameleon"]["feasible"] else None
a = rows["advisor"]["iteration_time_ns"] if rows["advisor"]["feasible"] else None
ch = "-" if (a is None or c is None) else "%+.2f%%" % (100.0 * (a - c) / c)
print("%-44s %14s %14s %9s" % (sys.argv[1], c, a, ch))
PY
}
L32=traces/llama2-7b-dp8-seq4096.trace.gz
L4=traces/llama2-7b-4layers-dp8-seq4096.trace.gz
PP=traces/llama2-7b-pp4-stage0-seq4096.trace.gz
for r in 1.25 1.5 2 3; do
  run "llama2-7b 32L DP8 r=$r" "$L32" --oversubscription "$r"
  run "llama2-7b 4L DP8 r=$r" "$L4" --oversubscription "$r"
done
run "llama2-7b 32L DP8 40GiB-2GiB" "$L32" --device-memory 40GiB --reserve 2GiB
run "llama2-7b PP4 stage0 r=1.5" "$PP" --oversubscription 1.5
run "llama2-7b PP4 stage0 r=3" "$PP" --oversubscription 3
M0="--planner-option chameleon.min-tensor-bytes=0"
run "gpt2_small r=1.25" traces/gpt2_small.json.gz --iteration 1 --oversubscription 1.25 --h2d-bandwidth 16GB/s --d2h-bandwidth 16GB/s $M0
run "llama_small r=1.25" traces/llama_small.json.gz --iteration 1 --oversubscription 1.25 --h2d-bandwidth 16GB/s --d2h-bandwidth 16GB/s $M0
run "resnet18 r=1.02" traces/resnet18.json.gz --iteration 1 --oversubscription 1.02 --h2d-bandwidth 16GB/s --d2h-bandwidth 16GB/s
run "resnet18 135MiB 10GB/s" traces/resnet18.json.gz --iteration 1 --device-memory 135MiB --h2d-bandwidth 10GB/s --d2h-bandwidth 10GB/s
run "bilstm r=1.1" traces/bilstm.json.gz --iteration 1 --oversubscription 1.1 --h2d-bandwidth 16GB/s --d2h-bandwidth 16GB/s $M0
run "loss_scale_validation r=1.1" traces/loss_scale_validation.json.gz --iteration 1 --oversubscription 1.1 --h2d-bandwidth 16GB/s --d2h-bandwidth 16GB/s $M0
