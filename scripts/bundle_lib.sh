# Shared by the GPU bundles (scripts/gpu_bundle.sh, scripts/gpu-train-check.sh):
# copies built files with the shared libraries they need, and gives the
# library path a bundle runs with on a machine without the build. Sourced;
# bundles copy it next to their run script, which sources it from there.
#
#   . scripts/bundle_lib.sh
#   bundle_copy OUTDIR bin build/swapplan          # OUTDIR/bin/swapplan + OUTDIR/lib/...
#   bundle_copy OUTDIR lib build/src/libswapplan_runtime.so
#   export LD_LIBRARY_PATH="$(bundle_library_path OUTDIR)"
#
# bundle_copy puts FILE into OUTDIR/SUBDIR and every shared library it needs
# (ldd's closure) that is not glibc's into OUTDIR/lib, except libstdc++ and
# libgcc_s, which go to OUTDIR/lib/fallback: a newer system libstdc++ runs
# this build's code, and is the one libcudart expects. It fails (exit 1)
# when FILE has an unresolved library.
bundle_copy() {
  local out="$1" sub="$2" file="$3" lib
  if ldd "$file" | grep -q "not found"; then
    echo "bundle: $file has unresolved libraries:" >&2; ldd "$file" | grep "not found" >&2
    return 1
  fi
  mkdir -p "$out/$sub" "$out/lib/fallback"
  cp -L "$file" "$out/$sub/"
  # ldd lists the whole closure; glibc's own libraries stay the machine's.
  ldd "$file" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libresolv.so.*) ;;
      libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$out/lib/fallback/" ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
}

# The library path for a bundle at HERE: HERE/lib, the CUDA toolkit's
# libraries and the pip wheel's libcudart (nvidia/cuda_runtime/lib or
# nvidia/cu13/lib) when present, then the bundled libstdc++ / libgcc_s only
# where the machine has none; then the caller's LD_LIBRARY_PATH.
bundle_library_path() {
  local here="$1" path d
  path="$here/lib"
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && path="$path:$d"
  done
  while IFS= read -r d; do path="$path:$d"; done < <(python3 -c '
import os, nvidia
for base in nvidia.__path__:
    for sub in ("cuda_runtime/lib", "cu13/lib"):
        if os.path.isdir(os.path.join(base, sub)): print(os.path.join(base, sub))' 2>/dev/null)
  ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 ' || path="$path:$here/lib/fallback"
  echo "$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# Prints "OUTDIR: N MiB (K KiB), L libraries"; fails (exit 1) when the
# bundle is over LIMIT_MIB.
bundle_size_check() {
  local out="$1" limit_mib="$2" what="$3" kib
  kib=$(du -sk "$out" | cut -f1)
  echo "$what: $out: $((kib / 1024)) MiB ($kib KiB), $(ls "$out/lib" "$out/lib/fallback" | grep -c '\.so')" \
       "libraries"
  if [ "$kib" -gt $((limit_mib * 1024)) ]; then
    echo "$what: the bundle is over $limit_mib MiB" >&2
    return 1
  fi
}
