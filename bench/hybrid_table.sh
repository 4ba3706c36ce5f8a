#!/usr/bin/env bash
# The hybrid planner's table (docs/hybrid.md): overhead over ideal at
# oversubscription r = 2, 3, 4, 6, 8, 12 on the 32-layer Llama-2 7B trace,
# one `compare` run per r. Bounded: 6 runs of a few seconds each (each run
# killed after 120 s). Rows: ideal, chameleon, recompute, hybrid, plus
# selective, te-offload and save-on-cpu when this build registers them.
#
#   bench/hybrid_table.sh [build/swapplan] [trace]
set -euo pipefail
SWAPPLAN=${1:-build/swapplan}
TRACE=${2:-traces/llama2-7b-dp8-seq4096.trace.gz}
PLANNERS=ideal,chameleon,recompute,hybrid
# The help text once (grep -q closing the pipe early would fail the
# pipeline under pipefail and drop later rows).
HELP=$("$SWAPPLAN" compare --help 2>/dev/null || true)
for extra in selective te-offload save-on-cpu; do
  if grep -q -- "$extra" <<<"$HELP"; then PLANNERS="$PLANNERS,$extra"; fi
done
echo "trace $TRACE; planners $PLANNERS"
for r in 2 3 4 6 8 12; do
  echo "== r = ${r}x"
  timeout 120 "$SWAPPLAN" compare "$TRACE" --oversubscription "${r}x" --planners "$PLANNERS" -q \
    | sed -n '/^planner/,/^$/p' || echo "(compare exited $?)"
done
