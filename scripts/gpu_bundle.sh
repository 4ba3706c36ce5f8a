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

if ldd "$bin" | grep -q "not found"; then
  echo "gpu_bundle: $bin has unresolved libraries:" >&2; ldd "$bin" | grep "not found" >&2; exit 1
fi
mkdir -p "$out/bin" "$out/lib/fallback"
cp -L "$bin" "$out/bin/"
# ldd lists the whole closure; glibc's own libraries stay the machine's.
ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libresolv.so.*) ;;
    libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$out/lib/fallback/" ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled GPU check: run.sh [FLAGS...] (runtime_gpu_check's flags,
# none: its GPU defaults). Exit: 0 OK, 1 a check failed, 2 bad
# flags, 77 no CUDA library or no device.
here="$(cd "$(dirname "$0")" && pwd)"
path="$here/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && path="$path:$d"
done
while IFS= read -r d; do path="$path:$d"; done < <(python3 -c '
import os, nvidia
for base in nvidia.__path__:
    for sub in ("cuda_runtime/lib", "cu13/lib"):
        if os.path.isdir(os.path.join(base, sub)): print(os.path.join(base, sub))' 2>/dev/null)
# This build's libstdc++ / libgcc_s only where the machine has none.
ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 ' || path="$path:$here/lib/fallback"
export LD_LIBRARY_PATH="$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "gpu-check: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
exec "$here/bin/runtime_gpu_check" "$@"
RUN
chmod +x "$out/run.sh"

kib=$(du -sk "$out" | cut -f1)
echo "gpu_bundle: $out: $((kib / 1024)) MiB ($kib KiB), $(ls "$out/lib" "$out/lib/fallback" | grep -c '\.so')" \
     "libraries"
if [ "$kib" -gt $((40 * 1024)) ]; then
  echo "gpu_bundle: the bundle is over 40 MiB" >&2
  exit 1
fi
