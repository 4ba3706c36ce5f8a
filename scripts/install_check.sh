#!/usr/bin/env bash
# Installs swapplan the two ways its users do and uses each install from
# outside the checkout (issue 21; docs/building.md):
#   1. pip: a fresh virtual environment (--system-site-packages, for Debian's
#      PyTorch and meson-python), `pip install --no-build-isolation .`, then
#      `import swapplan`, `import swapplan.runtime` (the library found inside
#      the package, no SWAPPLAN_RUNTIME_LIB), `import swapplan.recorder`,
#      `import swapplan.client` (its generated planner_service_pb2 found inside
#      the package) and `swapplan --version` from another directory.
#   2. meson install --destdir into a staging root, then an out-of-tree C++
#      program (scripts/install_check/consumer.cc) compiled with nothing but
#      `pkg-config --cflags --libs swapplan_planners swapplan_runtime` against
#      it, and run.
# The pip build compiles the C++ parts again in build-pip/ (ccache with
# CCACHE_BASEDIR = the checkout makes it mostly cache hits of build/); step 2
# needs build/ configured and built (scripts/quickstart.sh). Bounded by
# `timeout` in .ci/run.
#
#   scripts/install_check.sh            # both
#   scripts/install_check.sh pip|meson  # one
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
what=${1:-all}
python=/usr/bin/python3   # Debian's, with python3-torch and python3-mesonpy
work=$(mktemp -d /tmp/swapplan-install-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
export CCACHE_BASEDIR="$root"

if [ "$what" = all ] || [ "$what" = pip ]; then
  echo "== pip install . (fresh venv)"
  start=$(date +%s)
  "$python" -m venv --system-site-packages "$work/venv"
  # builddir: kept between runs so that a second run is incremental.
  "$work/venv/bin/pip" install --no-build-isolation --no-index --quiet \
    --config-settings=builddir="$root/build-pip" "$root"
  (
    cd "$work"  # not the checkout: the installed package, not python/
    unset SWAPPLAN_RUNTIME_LIB SWAPPLAN_BINARY SWAPPLAN_PROTO_PYTHON_DIR PYTHONPATH
    "$work/venv/bin/python" - <<'PY'
import os, sys
import swapplan
import swapplan.runtime
import swapplan.recorder
import swapplan.client
from swapplan.client import _proto
from swapplan.runtime import _lib
lib = _lib.library_path()
package = os.path.dirname(swapplan.__file__)
assert swapplan.__file__.startswith(sys.prefix), ("not the installed package", swapplan.__file__)
assert lib == os.path.join(package, "libswapplan_runtime.so"), ("runtime library", lib)
_lib.load()  # the ABI check
assert _proto.pb.__file__ == os.path.join(package, "client", "planner_service_pb2.py"), (
    "client messages", _proto.pb.__file__)
print("import swapplan %s from %s; runtime library %s" % (swapplan.__version__, package, lib))
PY
    # shellcheck disable=SC1091
    source "$work/venv/bin/activate"
    test "$(command -v swapplan)" = "$work/venv/bin/swapplan"
    swapplan --version
  )
  echo "pip install check: $(( $(date +%s) - start )) s"
fi

if [ "$what" = all ] || [ "$what" = meson ]; then
  echo "== meson install --destdir + an out-of-tree program via pkg-config"
  start=$(date +%s)
  meson install -C build --destdir "$work/root" --quiet
  libdir=$(meson introspect build --buildoptions |
           "$python" -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
  prefix=$(meson introspect build --buildoptions |
           "$python" -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
  case "$libdir" in /*) ;; *) libdir="$prefix/$libdir" ;; esac
  export PKG_CONFIG_PATH="$work/root$libdir/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$work/root"  # the .pc files name $prefix
  for pc in core import analysis sim planners eval report runtime; do
    test -f "$PKG_CONFIG_PATH/swapplan_$pc.pc" || { echo "missing swapplan_$pc.pc"; exit 1; }
  done
  # shellcheck disable=SC2046
  c++ -std=c++20 -O1 -o "$work/consumer" scripts/install_check/consumer.cc \
    $(pkg-config --cflags --libs swapplan_planners swapplan_runtime)
  (cd "$work" && LD_LIBRARY_PATH="$work/root$libdir" ./consumer "$root/traces/toy.json")
  echo "meson install check: $(( $(date +%s) - start )) s"
fi
