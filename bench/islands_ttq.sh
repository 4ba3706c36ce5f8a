#!/usr/bin/env bash
# Issue 20 target: how long the island model (2 MPI ranks, one thread each)
# takes to reach the result a single process (one thread) gets in 60 s, on
# the 4-layer llama2-7b DP8 trace at r = 3 (where the search improves on its
# seeds the most). Prints the single-process result, then the first elapsed
# time at which the best elite over both islands is at least as fast.
# Usage: bench/islands_ttq.sh [RANKS] [TIME] [TRACE] [R]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="${1:-2}"
limit="${2:-60s}"
trace="${3:-traces/llama2-7b-4layers-dp8-seq4096.trace.gz}"
r="${4:-3}"
tmp="${TMPDIR:-/tmp}/swapplan-islands"
mkdir -p "$tmp"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
./build/swapplan search "$trace" --oversubscription "$r" --threads 1 --time-limit-ns "$limit" \
  --seed 1 --quiet --history "$tmp/single.csv" --json > "$tmp/single.json"
mpirun --oversubscribe -np "$ranks" ./build/swapplan search "$trace" --oversubscription "$r" \
  --threads 1 --time-limit-ns "$limit" --seed 1 --quiet --islands --history "$tmp/islands.csv" \
  --json > "$tmp/islands.json"
python3 - "$tmp" "$ranks" <<'PY'
import csv, json, sys
tmp, ranks = sys.argv[1], sys.argv[2]
single = json.load(open(tmp + "/single.json"))
target = single["iteration_time_ns"]
def rows(name):
    return list(csv.DictReader(open(tmp + "/" + name)))
s = rows("single.csv")
first_single = next((int(x["elapsed_ns"]) for x in s if 0 <= int(x["elite_ns"]) <= target), None)
print("single process: %d ns after %.1f s (%d generations); first reached at %.1f s" % (
    target, single["search_time_ns"] / 1e9, single["num_generations"], first_single / 1e9))
isl = rows("islands.csv")
hit = next((x for x in isl if 0 <= int(x["islands_best_ns"]) <= target), None)
final = json.load(open(tmp + "/islands.json"))
if hit:
    print("%s islands: reached it after %.1f s (generation %s); final %d ns after %.1f s" % (
        ranks, int(hit["elapsed_ns"]) / 1e9, hit["generation"], final["iteration_time_ns"],
        final["search_time_ns"] / 1e9))
else:
    print("%s islands: did not reach it; final %d ns after %.1f s" % (
        ranks, final["iteration_time_ns"], final["search_time_ns"] / 1e9))
PY
