#!/usr/bin/env bash
# The runtime's CUDA backend on a real GPU (tests/runtime/gpu_check.cc,
# docs/runtime.md "The GPU check").
#
#   scripts/gpu-check.sh [BUILD_DIR] [FLAGS...]
#
# Runs BUILD_DIR/tests/runtime_gpu_check (BUILD_DIR default: the checkout's
# build) with FLAGS; without them, the program's GPU defaults (64 tensors x
# 64 MiB, 5 verification iterations, 3 overlap iterations, a 4 GiB
# cudaMemsetAsync per op; --tensors 8 --tensor-bytes 1MiB: a quick run). libcudart is
# looked up in $SWAPPLAN_RT_CUDA_LIBRARY, else in /usr/local/cuda/lib64 and
# the pip wheel's nvidia/cuda_runtime/lib (or nvidia/cu13/lib), both added
# to LD_LIBRARY_PATH when present, else the system's. Exits with the
# program's code: 0 OK, 1 a check failed, 2 bad flags, 77 no CUDA library
# or no device.
set -uo pipefail

build="$(dirname "$0")/../build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
bin="$build/tests/runtime_gpu_check"
if [ ! -x "$bin" ]; then
  echo "gpu-check: $bin is not built (meson setup $build && ninja -C $build tests/runtime_gpu_check)" >&2
  exit 2
fi

libs=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && libs+=("$d")
done
# The pip wheel's libcudart (nvidia is a namespace package; failures ignored).
while IFS= read -r d; do libs+=("$d"); done < <(python3 -c '
import os, nvidia
for base in nvidia.__path__:
    for sub in ("cuda_runtime/lib", "cu13/lib"):
        if os.path.isdir(os.path.join(base, sub)): print(os.path.join(base, sub))' 2>/dev/null)
path=$(IFS=:; echo "${libs[*]:-}")
export LD_LIBRARY_PATH="${path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "gpu-check: $bin, LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
"$bin" "$@"
