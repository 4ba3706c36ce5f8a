#!/usr/bin/env bash
# Installs swapplan the two ways its users do and uses each install from
# outside the checkout (docs/building.md, "The check"):
#   1. wheel: `pip wheel .` (meson-python, --no-build-isolation with the
#      checkout's .venv, whose meson-python python/requirements.txt pins),
#      then a fresh virtual environment with nothing but pip's torch,
#      numpy, grpcio and protobuf (python/requirements.txt's pins) and that
#      wheel; from a directory outside the checkout, with copies of the
#      files it needs: the package's own paths (the runtime library and the
#      client's messages inside the package, no SWAPPLAN_* variable),
#      `swapplan --version`, `swapplan advise` on a bundled trace, the
#      recorder example (examples/gpt2_small.py, then `swapplan inspect` on
#      what it wrote), examples/runtime/train_with_policy.py (the Fig. 7
#      miniature: identical losses under the policy) and the service client
#      against `swapplan serve` on a loopback port.
#   2. meson install --destdir into a staging root, then an out-of-tree C++
#      program (scripts/install_check/consumer.cc) compiled with nothing but
#      `pkg-config --cflags --libs swapplan_planners swapplan_runtime` against
#      it, and run.
# The wheel compiles the C++ parts in build-pip/ (kept: incremental; ccache
# with CCACHE_BASEDIR = the checkout makes a first build mostly cache hits of
# build/); step 2 needs build/ configured and built. Both need
# scripts/quickstart.sh's .venv and build/ (`quickstart.sh test`). Bounded by
# `timeout` in .ci/run.
#
#   scripts/install_check.sh              # both
#   scripts/install_check.sh wheel|meson  # one
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
what=${1:-all}
venv=${SWAPPLAN_VENV:-.venv}
case "$what" in all|wheel|meson) ;; *) echo "usage: $0 [wheel|meson]" >&2; exit 2 ;; esac
[ -x "$venv/bin/pip" ] || { echo "install_check.sh: no $venv (scripts/quickstart.sh demo|test)" >&2; exit 2; }
work=$(mktemp -d /tmp/swapplan-install-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
export CCACHE_BASEDIR="$root"

if [ "$what" = all ] || [ "$what" = wheel ]; then
  echo "== pip wheel . (build-pip/), then a fresh venv with torch and the wheel"
  start=$(date +%s)
  "$venv/bin/pip" wheel --quiet --no-build-isolation --no-deps -w "$work/dist" \
    --config-settings=builddir="$root/build-pip" "$root"
  wheel=$(ls "$work"/dist/swapplan-*.whl)
  echo "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
  python3 -m venv "$work/venv"
  # shellcheck disable=SC2046  # the pinned lines of the requirements
  "$work/venv/bin/pip" install --quiet \
    $(grep -oE '^(torch|numpy|grpcio|protobuf)==[^ ]+' python/requirements.txt) "$wheel"
  # Only copies of what the checks read: nothing of the checkout on any path.
  mkdir -p "$work/use/examples/runtime"
  cp traces/llama2-7b-dp8-seq4096.trace.gz traces/toy.json "$work/use/"
  cp examples/common.py examples/gpt2_small.py examples/gpt_model.py "$work/use/examples/"
  cp examples/runtime/train_with_policy.py "$work/use/examples/runtime/"
  (
    cd "$work/use"
    unset SWAPPLAN_RUNTIME_LIB SWAPPLAN_BINARY SWAPPLAN_PROTO_PYTHON_DIR PYTHONPATH
    export PATH="$work/venv/bin:$PATH" OMP_NUM_THREADS=1
    test "$(command -v swapplan)" = "$work/venv/bin/swapplan"
    python - <<'PY'
import os, sys
import swapplan, swapplan.recorder, swapplan.runtime, swapplan.client
from swapplan.client import _proto
from swapplan.runtime import _lib
import torch
package = os.path.dirname(swapplan.__file__)
assert package.startswith(sys.prefix), ("not the installed package", package)
lib = _lib.library_path()
assert lib == os.path.join(package, "libswapplan_runtime.so"), ("runtime library", lib)
_lib.load()  # the ABI check
assert _proto.pb.__file__ == os.path.join(package, "client", "planner_service_pb2.py"), (
    "client messages", _proto.pb.__file__)
print("import swapplan %s from %s (torch %s); runtime library %s"
      % (swapplan.__version__, package, torch.__version__, lib))
PY
    swapplan --version
    echo "-- swapplan advise llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB"
    swapplan advise llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB | grep -E '^(verdict|best) '
    echo "-- the recorder: examples/gpt2_small.py, then swapplan inspect"
    python examples/gpt2_small.py --out gpt2.json.gz --vocab 64 --context 16 --d-model 32 \
      --heads 2 --layers 2 --batch 2 > /dev/null
    swapplan inspect gpt2.json.gz | head -n 3
    echo "-- examples/runtime/train_with_policy.py"
    python examples/runtime/train_with_policy.py --steps 6 --layers 2 --d-model 32 --vocab 64 \
      --context 32 --batch 2 --json > fig7.json
    python -c 'import json; r = json.load(open("fig7.json")); print("loss_identical", r["loss_identical"], "stages", sorted(set(s["stage"] for s in r["per_step"])) if "per_step" in r else ""); assert r["loss_identical"] is True'
    echo "-- swapplan.client against swapplan serve"
    python - <<'PY'
import re, subprocess
from swapplan.client import Planner
server = subprocess.Popen(["swapplan", "serve", "--listen", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    for line in server.stderr:
        m = re.search(r"listening on (\S+):(\d+)", line)
        if m:
            break
    else:
        raise SystemExit("swapplan serve did not start")
    plan = Planner("127.0.0.1:" + m.group(2)).plan("toy.json", device_memory="3000B",
                                                   options={"min-tensor-bytes": 0},
                                                   h2d_bandwidth="1GB/s", d2h_bandwidth="1GB/s")
    print("service plan:", {k: plan.report[k] for k in ("planner", "num_items", "feasible")})
    assert plan.report["feasible"]
finally:
    server.terminate()
    server.wait(60)
PY
  )
  echo "wheel install check: $(( $(date +%s) - start )) s"
fi

if [ "$what" = all ] || [ "$what" = meson ]; then
  echo "== meson install --destdir + an out-of-tree program via pkg-config"
  start=$(date +%s)
  meson install -C build --destdir "$work/root" --quiet
  option() {
    meson introspect build --buildoptions |
      python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]==sys.argv[1]))' "$1"
  }
  libdir=$(option libdir)
  prefix=$(option prefix)
  case "$libdir" in /*) ;; *) libdir="$prefix/$libdir" ;; esac
  export PKG_CONFIG_PATH="$work/root$libdir/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$work/root"  # the .pc files name $prefix
  for pc in model core import analysis sim planners eval report runtime; do
    test -f "$PKG_CONFIG_PATH/swapplan_$pc.pc" || { echo "missing swapplan_$pc.pc"; exit 1; }
  done
  # shellcheck disable=SC2046
  c++ -std=c++20 -O1 -o "$work/consumer" scripts/install_check/consumer.cc \
    $(pkg-config --cflags --libs swapplan_planners swapplan_runtime)
  (cd "$work" && LD_LIBRARY_PATH="$work/root$libdir" ./consumer "$root/traces/toy.json")
  echo "meson install check: $(( $(date +%s) - start )) s"
fi
