#!/usr/bin/env bash
# The hybrid planner against the other planners on the smaller traces
# (docs/hybrid.md, "Other traces"): the 4-layer Llama-2 trace, the GPT-2 and
# Mixtral-8x7B (MoE) 4-layer synthesized traces in traces/, the recorded
# traces in traces/ (gpt2_small, llama_small; 16 GB/s links, which they do
# not record) and tests/data/traces, at oversubscription r = 2 and 4 (r =
# 1.25 and 1.5 where r = 2 is out of every planner's reach). Every planner
# at its defaults except the smallest swapped tensor, 0 B for Chameleon and
# the hybrid's swap step on the small recorded traces (KiB-sized tensors).
# Bounded: each compare run is killed after 120 s (about 20 runs of a few
# seconds each).
#
#   bench/hybrid_traces.sh [build/swapplan]
set -euo pipefail
SWAPPLAN=${1:-build/swapplan}
PLANNERS=ideal,chameleon,recompute,hybrid,selective,te-offload,save-on-cpu
# Bundled (traces/README.md): `swapplan synth --model gpt2 --layers 4` and
# `swapplan synth --model mixtral-8x7b --layers 4`.
GPT2=traces/gpt2-4layers.trace.gz
MIXTRAL=traces/mixtral-8x7b-4layers.trace.gz
run() {  # trace, extra compare flags... ($RS: the r values, default "2 4")
  local trace=$1
  shift
  for r in ${RS:-2 4}; do
    echo "== $(basename "$trace") r = ${r}x"
    timeout 120 "$SWAPPLAN" compare "$trace" --oversubscription "${r}x" --planners "$PLANNERS" \
      -q "$@" | sed -n '/^planner/,/^$/p' || echo "(compare exited $?)"
  done
}
run traces/llama2-7b-4layers-dp8-seq4096.trace.gz
RS="1.25 1.5" run "$GPT2"
run "$MIXTRAL"
SMALL=(--planner-option chameleon.min-tensor-bytes=0 --planner-option hybrid.swap_min_tensor_bytes=0)
LINK=(--h2d-bandwidth 16GB/s --d2h-bandwidth 16GB/s)
for t in traces/gpt2_small.json.gz traces/llama_small.json.gz; do
  RS="1.25 1.5" run "$t" "${SMALL[@]}" "${LINK[@]}"
done
for t in tests/data/traces/two_layers.json tests/data/traces/chameleon_toy.json; do
  RS="1.5 2" run "$t" "${SMALL[@]}"
done
