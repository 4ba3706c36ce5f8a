#!/usr/bin/env bash
# Issue 16, "executed on the runtime": the issue's two scenarios (the MoE run
# and the llama-style run with per-iteration sequence lengths, exact commands
# in docs/varying.md) replayed with `swapplan replay --execute host` — the
# simulated replay of what the runtime does (--model-runtime) and the same
# trace executed through the runtime shim on the host backend — for the
# fuzzy and the naive matcher and, for MoE, the paper's OOM handling
# (Algorithm 3 in WarmUp only). Prints one line per run:
#   scenario  config  iterations differing  then per figure simulated/executed
# and the wall time of each run (both the replay and the execution).
# Bounded: 6 runs of 10-60 s each on the 2-core development machine.
# Usage: bench/replay_execute.sh   (SWAPPLAN_BIN, TMPDIR as usual)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${SWAPPLAN_BIN:-./build/swapplan}"
tmp="${TMPDIR:-/tmp}/swapplan-replay-execute"
mkdir -p "$tmp"
[ -f "$tmp/moe.trace" ] || "$bin" synth --model mixtral-8x7b --layers 2 --hidden 1024 --ffn 2048 \
  --heads 8 --kv-heads 8 --seq 1024 --iterations 120 --validation-every 50 -q -o "$tmp/moe.trace"
[ -f "$tmp/llama.trace" ] || "$bin" synth --model llama2-7b --layers 2 --hidden 1024 --ffn 2816 \
  --heads 8 --kv-heads 8 --seq-lengths 512,1024,2048,4096 --iterations 200 --seed 1 -q \
  -o "$tmp/llama.trace"
printf '%-6s %-14s %6s  %s\n' scenario config differ \
  "stages W/G/S | policies | items found | missed | off-dev | alloc failures | unresolved | passive | Stable passive | Stable policy swaps   (simulated/executed)  wall"
run() {  # scenario, config name, trace, replay args...
  local scenario="$1" config="$2" trace="$3"; shift 3
  local start end
  start=$(date +%s.%N)
  "$bin" replay "$tmp/$trace" "$@" --rows none --execute host --json -q -o "$tmp/out.json"
  end=$(date +%s.%N)
  python3 - "$tmp/out.json" "$scenario" "$config" "$start" "$end" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
e, s = j["totals"], j["execution"]["simulated_totals"]
def pair(k):
    return f'{s[k]}/{e[k]}'
def stages(t):
    return "/".join(str(t[k]) for k in ("num_warmup_iterations", "num_genpolicy_iterations",
                                        "num_stable_iterations"))
print(f'{sys.argv[2]:<6} {sys.argv[3]:<14} {j["execution"]["num_iterations_differing"]:>6}  '
      f'{stages(s)} vs {stages(e)} | {pair("num_policies_generated")} | '
      f'{s["num_matched"] + s["num_mismatched"]}/{e["num_matched"] + e["num_mismatched"]} | '
      f'{pair("num_missed")} | {pair("num_uses_while_off_device")} | {pair("num_ooms")} | '
      f'{pair("num_unresolved_ooms")} | {pair("num_passive_swaps")} | '
      f'{pair("num_stable_passive_swaps")} | {pair("num_stable_policy_swaps")}  '
      f'{float(sys.argv[5]) - float(sys.argv[4]):.1f} s')
EOF
}
run moe fuzzy moe.trace --device-memory 2870MiB
run moe naive moe.trace --device-memory 2870MiB --matcher naive
run moe paper-fuzzy moe.trace --device-memory 2870MiB --oom-handling warmup --max-policy-misses 0
run moe paper-naive moe.trace --device-memory 2870MiB --oom-handling warmup --max-policy-misses 0 \
  --matcher naive
run llama fuzzy llama.trace --device-memory 2250MiB
run llama naive llama.trace --device-memory 2250MiB --matcher naive
