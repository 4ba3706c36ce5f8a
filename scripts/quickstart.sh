#!/usr/bin/env bash
# swapplan quick start on a fresh Debian 12 machine.
#
#   scripts/quickstart.sh demo   install what is missing, build, run the main job
#                                (compare every planner) on a bundled trace
#   scripts/quickstart.sh test   install what is missing, build, run every test
#
# Installs only Debian packages (apt), builds with meson/ninja into ./build
# (release), and never touches anything outside the repository but the
# package database.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-demo}"
case "$mode" in demo|test) ;; *) echo "usage: $0 demo|test" >&2; exit 2 ;; esac

# ccache: meson finds it by itself, so rebuilds (CI's too) reuse objects.
pkgs=(g++ meson ninja-build pkg-config protobuf-compiler libprotobuf-dev zlib1g-dev
      libabsl-dev libcli11-dev nlohmann-json3-dev catch2 libbenchmark-dev ccache
      coinor-libcbc-dev libopenmpi-dev openmpi-bin
      libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-protobuf)
if [ "$mode" = test ]; then
  pkgs+=(python3 python3-torch python3-torchvision)
  # .ci/run's install check (scripts/install_check.sh): pip install . in a venv.
  pkgs+=(python3-mesonpy python3-venv python3-pip)
  # .ci/run's sanitizer, fuzzing (libFuzzer) and ThreadSanitizer stages.
  pkgs+=(clang-14 libclang-rt-14-dev)
  # The HTML report's test in headless Chromium (tests/report/browser_test.py).
  pkgs+=(chromium)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
ninja -C build

if [ "$mode" = demo ]; then
  # Llama-2-7B on an Ascend 910B (DP 8, ZeRO-2, sequence 4096; synthesized,
  # see traces/README.md) with 34 GiB of device memory: does it fit, which
  # policy is best and what it costs, and the HTML report of every planner.
  echo "== swapplan advise traces/llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB --html report.html"
  ./build/swapplan advise traces/llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB --html report.html
  echo "== wrote report.html (open it in a browser; it needs no network)"
  exit 0
fi

echo "== meson test"
# The recorder suite skips itself without PyTorch; here PyTorch was installed
# above, so its absence is a failure; the same for Chromium and the report's
# browser test.
SWAPPLAN_REQUIRE_TORCH=1 SWAPPLAN_REQUIRE_CHROMIUM=1 meson test -C build --print-errorlogs
