#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/meson.build) in build-fuzz with
# clang (through ccache; 14 on Debian 12, 19 on 13: scripts/debian.sh) under
# AddressSanitizer + UndefinedBehaviorSanitizer
# — only the targets asked for and the layers they link — then runs each for
# SECONDS, two at a time (the CI machine has 2 cores), and fails on any finding.
#
#   scripts/fuzz.sh SECONDS [TARGET...]     e.g. scripts/fuzz.sh 60
#                                                scripts/fuzz.sh 180 trace_json gzip
#
# SECONDS = 0 only builds the targets (CI builds them beside the sanitizer
# suite and runs them later).
#
# Without TARGETs every entry of fuzz_targets runs. Each target starts from
# its seed corpus fuzz/corpus/<name>/ (read only; new inputs go to
# $FUZZ_BUILD_DIR/corpus/<name>/, kept between runs) and writes crashes to
# $FUZZ_BUILD_DIR/artifacts/<name>/. Prints executions and corpus size per
# target; exits 1 when any target found something (crash, sanitizer report,
# leak, timeout over 10 s per input, out-of-memory over 2 GiB) or failed to
# run — except targets listed in fuzz/known_findings.txt (findings another
# change owns), which run in fork mode and are reported as KNOWN.
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS or FUZZ_PARALLEL
# (targets at a time, default 2), FUZZ_CXX / FUZZ_CC (default clang++-N /
# clang-N of scripts/debian.sh), FUZZ_MAX_LEN (bytes per input, default 65536).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [TARGET...]" >&2
  exit 2
fi
seconds="$1"
shift
jobs="${FUZZ_JOBS:-${FUZZ_PARALLEL:-2}}"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
# shellcheck source=debian.sh
. scripts/debian.sh
cxx="${FUZZ_CXX:-clang++-$(swapplan_clang)}"
cc="${FUZZ_CC:-clang-$(swapplan_clang)}"
max_len="${FUZZ_MAX_LEN:-65536}"

all_targets=$(sed -n "s/^  '\([a-z_0-9]*\)' : \[files(.*/\1/p" fuzz/meson.build)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  read -r -a targets <<< "$(echo $all_targets)"
fi
for t in "${targets[@]}"; do
  if ! grep -qx "$t" <<< "$all_targets"; then
    echo "fuzz.sh: unknown target '$t' (known: $(echo $all_targets))" >&2
    exit 2
  fi
done

if ! command -v "$cxx" > /dev/null; then
  echo "fuzz.sh: $cxx not found (apt-get install ${cc#*/})" >&2
  exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
  launcher=""
  command -v ccache > /dev/null && launcher="ccache "
  # -O1 with line tables: libFuzzer's usual setting, and the cheapest build
  # whose reports still name file and line.
  CC="$launcher$cc" CXX="$launcher$cxx" meson setup "$build" -Doptimization=1 -Ddebug=false \
    -Dcpp_args=-gline-tables-only -Dfuzz=true -Db_lundef=false -Dtests=false -Dbenchmarks=false \
    > "$build.setup.log" 2>&1 || { cat "$build.setup.log" >&2; exit 1; }
  rm -f "$build.setup.log"
fi
ninja -C "$build" $(for t in "${targets[@]}"; do echo "fuzz/${t}_fuzz"; done) > /dev/null
if [ "$seconds" -eq 0 ]; then
  echo "== built ${#targets[@]} fuzz target(s) in $build"
  exit 0
fi

# Targets with findings owned by another change (fuzz/known_findings.txt).
known_targets=$( (grep -v '^#' fuzz/known_findings.txt 2> /dev/null || true) | awk 'NF { print $1 }' | sort -u)
export known_targets

run_one() {
  local t="$1"
  local known=0
  grep -qx "$t" <<< "$known_targets" && known=1
  local mode=()
  [ "$known" -eq 1 ] && mode=(-fork=1 -ignore_crashes=1)
  local corpus="$build/corpus/$t" artifacts="$build/artifacts/$t" log="$build/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  # A fresh artifact directory per run: anything in it afterwards is a finding.
  rm -f "$artifacts"/*
  local rc=0
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ASAN_OPTIONS=detect_leaks=1 \
    "$build/fuzz/${t}_fuzz" "$corpus" "fuzz/corpus/$t" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "${mode[@]}" > "$log" 2>&1 || rc=$?
  local execs corpus_files
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus_files=$(find "$corpus" -type f | wc -l)
  local findings
  findings=$(find "$artifacts" -type f | wc -l)
  if [ "$known" -eq 1 ]; then
    # Fork mode prints its totals as "#N DONE ... exec/s" lines.
    [ -z "$execs" ] && execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    printf '%-17s KNOWN   %s executions, corpus %s files, %s finding(s) in %s (see fuzz/known_findings.txt)\n' \
      "$t" "${execs:-?}" "$corpus_files" "$findings" "$artifacts"
    return 0
  fi
  if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    printf '%-17s FAILED  exit %s, %s finding(s) in %s; log %s\n' "$t" "$rc" "$findings" \
      "$artifacts" "$log"
    grep -m3 -E "ERROR|SUMMARY|contract broken|runtime error" "$log" | sed 's/^/    /' || true
    return 1
  fi
  printf '%-17s ok      %s executions, corpus %s files (+%s seeds)\n' "$t" "${execs:-?}" \
    "$corpus_files" "$(find "fuzz/corpus/$t" -type f | wc -l)"
}
export -f run_one
export seconds max_len build

echo "== fuzzing ${#targets[@]} target(s), ${seconds} s each, $jobs at a time"
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} || status=1
exit $status
