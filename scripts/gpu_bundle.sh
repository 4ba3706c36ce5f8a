#!/usr/bin/env bash
# A self-contained copy of the GPU check (tests/runtime/gpu_check.cc) for a
# machine with a GPU and no swapplan build (docs/runtime.md "The GPU check").
#
#   scripts/gpu_bundle.sh OUTDIR [BUILD_DIR]
#
# Copies BUILD_DIR/tests/runtime_gpu_check (BUILD_DIR default: the
# checkout's build) into
# OUTDIR/bin and every shared library it needs that is not glibc's (ldd:
# libswapplan_runtime, abseil, ...) into OUTDIR/lib, except libstdc++ and
# libgcc_s, which go to OUTDIR/lib/fallback and are used only where the
# machine has none (a newer system libstdc++ runs this build's code and is
# the one libcudart expects). Writes OUTDIR/run.sh: sets LD_LIBRARY_PATH to
# OUTDIR/lib, /usr/local/cuda/lib64 and the pip wheel's libcudart when
# present, and runs the check with the flags given (none: its GPU defaults;
# OUTDIR/run.sh --tensors 8 --tensor-bytes 1MiB: a quick run). Prints the
# bundle's size; fails (exit 1) when it is over 40 MiB.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [BUILD_DIR]" >&2; exit 2; }
out="$1"
build="${2:-$(dirname "$0")/../build}"
bin="$build/tests/runtime_gpu_check"
[ -x "$bin" ] || { echo "gpu_bundle: $bin is not built" >&2; exit 2; }

here="$(cd "$(dirname "$0")" && pwd)"
. "$here/bundle_lib.sh"
bundle_copy "$out" bin "$bin"
cp "$here/bundle_lib.sh" "$out/"

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled GPU check: run.sh [FLAGS...] (runtime_gpu_check's flags,
# none: its GPU defaults). Exit: 0 OK, 1 a check failed, 2 bad
# flags, 77 no CUDA library or no device.
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/bundle_lib.sh"
export LD_LIBRARY_PATH="$(bundle_library_path "$here")"
echo "gpu-check: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
exec "$here/bin/runtime_gpu_check" "$@"
RUN
chmod +x "$out/run.sh"

bundle_size_check "$out" 40 gpu_bundle
