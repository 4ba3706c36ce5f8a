#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (fuzz/meson.build) for a bounded time
# each and fails on any finding (a crash, a sanitizer report, a timeout or an
# out-of-memory).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 s, every
#                                                          target with a corpus)
#   FUZZ_BUILD_DIR=build-fuzz FUZZ_PARALLEL=2 scripts/fuzz.sh 300 import_kineto
#
# The build directory is configured with clang on first use. Each target
# starts from its seed corpus fuzz/corpus/<name>/ (copied, never modified)
# and grows a working corpus in $FUZZ_BUILD_DIR/fuzz-corpus/<name>/; findings
# go to $FUZZ_BUILD_DIR/fuzz-findings/<name>/. The summary gives executions
# and corpus size per target.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
secs=${1:-60}
shift || true
parallel=${FUZZ_PARALLEL:-2}
if [ ! -f "$build/build.ninja" ]; then
  CC=${CC:-clang-14} CXX=${CXX:-clang++-14} meson setup "$build" "$root" -Dfuzz=true \
    -Dtests=false -Dbenchmarks=false -Db_lundef=false --buildtype=debugoptimized
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for d in "$root"/fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
ninja -C "$build" $(printf 'fuzz/%s ' "${targets[@]}")

run_one() {
  local t=$1
  local corpus="$build/fuzz-corpus/$t" findings="$build/fuzz-findings/$t"
  mkdir -p "$corpus" "$findings"
  cp -n "$root/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  "$build/fuzz/$t" "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=1048576 -print_final_stats=1 -artifact_prefix="$findings/" \
    > "$build/fuzz-$t.log" 2>&1
}

status=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  if [ ${#pids[@]} -ge "$parallel" ]; then
    wait "${pids[0]}" || { echo "FINDING in ${names[0]}: see $build/fuzz-${names[0]}.log"; status=1; }
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "FINDING in ${names[$i]}: see $build/fuzz-${names[$i]}.log"; status=1; }
done

printf '%-20s %12s %8s\n' target executions corpus
for t in "${targets[@]}"; do
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-$t.log" | grep -o '[0-9]*$' || echo "?")
  size=$(ls "$build/fuzz-corpus/$t" | wc -l)
  printf '%-20s %12s %8s\n' "$t" "$execs" "$size"
done
exit $status
