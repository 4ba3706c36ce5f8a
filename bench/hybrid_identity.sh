#!/usr/bin/env bash
# Checksums of the hybrid planner's policies on the bundled traces at the
# oversubscriptions 2, 3, 4, 6, 8 and 12, with the default options and with
# hybrid.swap-min-tensor-bytes=0 (issue 23: planning-time work must leave
# every policy byte-identical).
#
#   bench/hybrid_identity.sh build/swapplan > /tmp/before.txt   # on the old code
#   bench/hybrid_identity.sh build/swapplan > /tmp/after.txt    # on the new code
#   diff /tmp/before.txt /tmp/after.txt                         # must be empty
#
# One line per (trace, options, r): the sha256 of the policy that
# `compare --save-policies` writes (the CLI's `plan` is Chameleon's), or the
# planner's error line when it returns none. Traces without link figures run
# at 1 GB/s each way. The policy's `prune_variants` parameter (an option that
# changes planning time, not the policy) is left out of the checksum, so
# builds before and after the option compare; so are `swap_only_last` and
# `swap_only_skip_overhead` (options that change the order variants are
# planned in). Error lines name
# the trace relative to the checkout, so two checkouts compare.
#
#   bench/hybrid_identity.sh build/swapplan --planner-option hybrid.swap-only-last=true
# (extra arguments go to every compare run).
set -u
swapplan=${1:-build/swapplan}
shift || true
given=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
here=$(cd "$(dirname "$0")/.." && pwd)
for trace in "$here"/traces/*.trace.gz "$here"/traces/*.json.gz "$here"/traces/*.json; do
  [ -e "$trace" ] || continue
  for opt in default hybrid.swap-min-tensor-bytes=0; do
    extra=()
    [ "$opt" = default ] || extra=(--planner-option "$opt")
    for r in 2 3 4 6 8 12; do
      out="$dir/hybrid.json"
      rm -f "$out"
      "$swapplan" -q compare "$trace" --planners hybrid --oversubscription "${r}x" "${extra[@]}" \
          ${given[@]+"${given[@]}"} --save-policies "$dir" >"$dir/stdout" 2>"$dir/stderr"
      if grep -q "no h2d bandwidth" "$dir/stderr"; then
        "$swapplan" -q compare "$trace" --planners hybrid --oversubscription "${r}x" "${extra[@]}" \
            --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s ${given[@]+"${given[@]}"} --save-policies "$dir" \
            >"$dir/stdout" 2>"$dir/stderr"
      fi
      name="$(basename "$trace") $opt ${r}x"
      if [ -e "$out" ]; then
        sum=$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ps = p.get("parameters", [])
p["parameters"] = [x for x in ps if x.get("name") not in ("prune_variants", "swap_only_last", "swap_only_skip_overhead")]
sys.stdout.write(json.dumps(p, sort_keys=True))' "$out" | sha256sum | cut -d' ' -f1)
        echo "$name $sum"
      else
        echo "$name none: $(grep -h -m1 '^hybrid:' "$dir/stdout" "$dir/stderr" | sed "s|$here/||g" | cut -c1-160)"
      fi
    done
  done
done
