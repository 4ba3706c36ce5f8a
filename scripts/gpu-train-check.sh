#!/usr/bin/env bash
# The GPU training check (bench/gpu_train/driver.py, docs/runtime.md
# "Training on a GPU"): a GPT-style model trains under budgets it does not
# fit, with swapplan's policies and with save_on_cpu, checkpointing and
# torchtune's OffloadActivations, side by side.
#
#   scripts/gpu-train-check.sh bundle [--no-wheels] [BUILD_DIR]  # here: build/gpu-train
#   scripts/gpu-train-check.sh run OUT [DRIVER FLAGS]   # there, from the checkout
#   scripts/gpu-train-check.sh --dry-run OUT [BUILD_DIR] [DRIVER FLAGS]  # here, CPU
#
# bundle: copies BUILD_DIR's swapplan CLI (bin/, its libraries in lib/, run
# through the wrapper ./swapplan) and libswapplan_runtime.so (runtime/, with
# only the abseil libraries it needs, so the Python process's own zlib,
# OpenSSL, ... stay the machine's) into build/gpu-train (or
# $SWAPPLAN_GPU_TRAIN_BUNDLE), downloads the wheels of
# bench/gpu_train/wheels.txt for Python 3.12 into whl/, checks that they
# install into a Python 3.12 target (pip install --target --python-version
# 3.12 --only-binary=:all: --no-deps) and that the bundled swapplan runs,
# and writes build/gpu-train.tar.gz, what travels (fails over 40 MiB).
# --no-wheels: no download (offline; the torchtune row then says torchtune
# does not import).
#
# run: on the GPU machine (torch with CUDA, no network), with
# build/gpu-train.tar.gz carried (unpacked into /tmp/gpu-train-bundle):
# installs the wheels into /tmp/gpu-train-site, points the Python package at
# the bundled runtime and CLI and runs the driver with OUT as its output
# folder (results.json after every row, table.md, log.txt,
# memory_snapshot.pickle.gz, artifacts.tar.gz); work files in
# /tmp/gpu-train-work ($SWAPPLAN_GPU_TRAIN_TMP instead of /tmp). Planned to
# end within 8 minutes (--time-limit-s 450). $PYTHON (default python3) runs it.
#
# --dry-run: the same driver on the CPU with toy sizes and the host backend,
# against BUILD_DIR (default: the checkout's build).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
bundle="${SWAPPLAN_GPU_TRAIN_BUNDLE:-$root/build/gpu-train}"
. "$here/bundle_lib.sh"
usage() { sed -n '7,9p' "$0" | sed 's/^# *//' >&2; exit 2; }
[ $# -ge 1 ] || usage
mode="$1"; shift

case "$mode" in
bundle)
  wheels=1
  if [ "${1:-}" = "--no-wheels" ]; then wheels=0; shift; fi
  build="${1:-$root/build}"
  for f in "$build/swapplan" "$build/src/libswapplan_runtime.so"; do
    [ -f "$f" ] || { echo "gpu-train-check: $f is not built (ninja -C $build swapplan)" >&2; exit 2; }
  done
  rm -rf "$bundle"
  mkdir -p "$bundle/whl"
  bundle_copy "$bundle" bin "$build/swapplan"
  bundle_copy "$bundle/runtime" lib "$build/src/libswapplan_runtime.so"
  cp "$here/bundle_lib.sh" "$bundle/"
  cat > "$bundle/swapplan" <<'WRAP'
#!/usr/bin/env bash
# The bundled swapplan CLI with its own libraries (scripts/gpu-train-check.sh).
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/bundle_lib.sh"
LD_LIBRARY_PATH="$(bundle_library_path "$here")" exec "$here/bin/swapplan" "$@"
WRAP
  chmod +x "$bundle/swapplan"
  "$bundle/swapplan" devices >/dev/null
  if [ "$wheels" = 1 ]; then
    grep -v '^#' "$root/bench/gpu_train/wheels.txt" | grep . > "$bundle/wheels.txt"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$bundle/whl" -r "$bundle/wheels.txt"
    target="$(mktemp -d)"
    trap 'rm -rf "$target"' EXIT
    python3 -m pip install -q --no-index --no-deps --no-compile --only-binary=:all: \
      --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
      --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
      --target "$target" "$bundle"/whl/*.whl
    echo "gpu-train-check: $(ls "$bundle/whl" | wc -l) wheels install into a Python 3.12 target:" \
         "$(ls "$bundle/whl" | sed 's/-py.*\|-cp.*//' | tr '\n' ' ')"
  fi
  bundle_size_check "$bundle" 80 gpu-train-check
  # What travels: one archive (the checkout and it stay under the 64 MiB a
  # GPU machine's call carries).
  tar -czf "$bundle.tar.gz" -C "$bundle" .
  kib=$(du -k "$bundle.tar.gz" | cut -f1)
  echo "gpu-train-check: $bundle.tar.gz: $((kib / 1024)) MiB ($kib KiB)"
  if [ "$kib" -gt $((40 * 1024)) ]; then
    echo "gpu-train-check: the archive is over 40 MiB" >&2; exit 1
  fi
  ;;
run)
  [ $# -ge 1 ] || usage
  out="$1"; shift
  tmp="${SWAPPLAN_GPU_TRAIN_TMP:-/tmp}"
  if [ ! -x "$bundle/swapplan" ] && [ -f "$bundle.tar.gz" ]; then
    rm -rf "$tmp/gpu-train-bundle"
    mkdir -p "$tmp/gpu-train-bundle"
    tar -xzf "$bundle.tar.gz" -C "$tmp/gpu-train-bundle"
    bundle="$tmp/gpu-train-bundle"
  fi
  [ -x "$bundle/swapplan" ] || { echo "gpu-train-check: no bundle at $bundle(.tar.gz) (run 'bundle' here, carry build/gpu-train.tar.gz)" >&2; exit 2; }
  site="$tmp/gpu-train-site"
  if ls "$bundle"/whl/*.whl >/dev/null 2>&1; then
    "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target "$site" "$bundle"/whl/*.whl ||
      echo "gpu-train-check: the wheels did not install; the torchtune row will say so" >&2
  fi
  rm -rf "$tmp/gpu-train-work"
  export PYTHONPATH="$root/python:$site${PYTHONPATH:+:$PYTHONPATH}"
  export SWAPPLAN_BINARY="$bundle/swapplan"
  export SWAPPLAN_RUNTIME_LIB="$bundle/runtime/lib/libswapplan_runtime.so"
  # The runtime's abseil (names no other library on the machine has).
  export LD_LIBRARY_PATH="$(bundle_library_path "$bundle/runtime")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  exec "${PYTHON:-python3}" "$root/bench/gpu_train/driver.py" --out "$out" \
    --work "$tmp/gpu-train-work" "$@"
  ;;
--dry-run)
  [ $# -ge 1 ] || usage
  out="$1"; shift
  build="$root/build"
  if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
  export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
  export SWAPPLAN_BINARY="${SWAPPLAN_BINARY:-$build/swapplan}"
  export SWAPPLAN_RUNTIME_LIB="${SWAPPLAN_RUNTIME_LIB:-$build/src/libswapplan_runtime.so}"
  exec "${PYTHON:-python3}" "$root/bench/gpu_train/driver.py" --dry-run --out "$out" "$@"
  ;;
*) usage ;;
esac
