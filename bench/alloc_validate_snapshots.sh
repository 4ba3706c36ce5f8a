#!/usr/bin/env bash
# The caching-allocator model against recorded torch.cuda.memory._snapshot()
# files (docs/allocator.md, "Validation"): `swapplan alloc-validate` on each
# file given, one line per file with the error per event (p50 / p99 / max),
# the reserved-peak error, the segments opened the same way, the segments
# at the end with the same blocks, and the rules the model lacks. The
# snapshots are not part of the repository (public recordings are listed in
# docs/allocator.md with their origin); pass their paths.
#
#   bench/alloc_validate_snapshots.sh SNAPSHOT.pickle... [SWAPPLAN=build/swapplan]
set -euo pipefail
SWAPPLAN=${SWAPPLAN:-build/swapplan}
if [ $# -eq 0 ]; then
  echo "usage: $0 SNAPSHOT.pickle..." >&2
  exit 2
fi
for f in "$@"; do
  "$SWAPPLAN" alloc-validate "$f" --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
pct = lambda x: "%.2f%%" % (100 * x)
print("%s: %d entries, %d compared; before the ring %d B in %d segments (%d blocks, %d inferred)"
      % (v["snapshot"], v["events"], v["compared_events"], v["initial_reserved_bytes"],
         v["initial_segments"], v["initial_blocks"], v["inferred_blocks"]))
print("  error/event p50 %s p90 %s p99 %s max %s; peak recorded %d model %d (%s)"
      % (pct(v["error_p50_fraction"]), pct(v["error_p90_fraction"]), pct(v["error_p99_fraction"]),
         pct(v["error_max_fraction"]), v["recorded_peak_reserved_bytes"],
         v["model_peak_reserved_bytes"], pct(v["peak_error_fraction"])))
print("  segments opened: recorded %d model %d same %d, differing allocations %d; at end: recorded %d model %d same size %d same blocks %d"
      % (v["recorded_segment_allocs"], v["model_segment_allocs"], v["matched_segment_allocs"],
         v["divergences"], v["recorded_segments"], v["model_segments"], v["matching_segments"],
         v["matching_layouts"]))
print("  missing rules: %s; within %s: %s" % ("; ".join(v["missing_rules"]) or "none",
      pct(v["tolerance_fraction"]), v["within_tolerance"]))
'
done
