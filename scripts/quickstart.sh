#!/usr/bin/env bash
# swapplan quick start on a fresh Debian 12 or 13 machine (README).
#
#   scripts/quickstart.sh demo   the advice on a bundled trace, soonest:
#                                Debian's C++ toolchain and libraries (apt),
#                                .venv with torch and python/requirements.txt
#                                (pip), swapplan built (only the command, the
#                                runtime library and the Python package:
#                                build-pip/) and pip-installed into .venv,
#                                then `swapplan advise`
#   scripts/quickstart.sh test   the same .venv and install, plus the test
#                                packages; builds everything in ./build
#                                (release) and runs the whole suite, the
#                                Python tests on .venv/bin/python3
#
# Afterwards `.venv/bin/swapplan` and `.venv/bin/python -c 'from
# swapplan.runtime import SwapRuntime'` work from any directory. Nothing
# outside the repository is touched but the package database (apt, with
# sudo when not root); no step relies on /usr/bin/python3 having torch.
# Environment: SWAPPLAN_VENV (default .venv), SWAPPLAN_PIP_ARGS (extra pip
# arguments, e.g. an index).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

mode="${1:-demo}"
case "$mode" in demo|test) ;; *) echo "usage: $0 demo|test" >&2; exit 2 ;; esac
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }
# ccache in depend mode: a miss compiles once, without the extra
# preprocessor run of its default mode (the compile lines have -MD): with an
# empty cache `demo` took 537 s in the default mode, 457 s in depend mode
# (docs/building.md, "Quick start timing").
export CCACHE_DEPEND=${CCACHE_DEPEND:-1}

# The virtual environment: the machine's python3, pip's torch and the test
# tools, pinned (python/requirements.txt); reinstalled when that file changes.
# Only meson-python is needed to build swapplan's wheel, so the rest (torch)
# installs in the background while apt runs and the wheel builds (its output
# goes to $venv/pip-install.log, shown when it fails).
venv=${SWAPPLAN_VENV:-.venv}
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
pip() {
  # shellcheck disable=SC2086  # word list
  "$venv/bin/pip" "$1" --quiet ${SWAPPLAN_PIP_ARGS:-} "${@:2}"
}
"$venv/bin/python3" -c 'import mesonpy' 2> /dev/null ||
  pip install "$(grep -o '^meson-python==[^ ]*' python/requirements.txt)"
stamp="$venv/.swapplan-requirements"
pip_pid=
if ! cmp -s python/requirements.txt "$stamp"; then
  echo "== pip install -r python/requirements.txt ($venv), in the background"
  (
    pip install -r python/requirements.txt > "$venv/pip-install.log" 2>&1
    cp python/requirements.txt "$stamp"
    echo "== pip: done after $(elapsed)"
  ) &
  pip_pid=$!
fi
wait_for_pip() {
  [ -n "$pip_pid" ] || return 0
  if ! wait "$pip_pid"; then
    cat "$venv/pip-install.log" >&2
    echo "quickstart: pip install -r python/requirements.txt failed (above)" >&2
    exit 1
  fi
  pip_pid=
}

# shellcheck source=debian.sh
. scripts/debian.sh
purposes=(build)
[ "$mode" = test ] && purposes+=(test ci)
# shellcheck disable=SC2046  # word list
apt_install $(debian_packages "${purposes[@]}")
echo "== apt: done after $(elapsed)"

# swapplan into the venv: meson-python builds the wheel in build-pip/ (kept,
# so a second build is incremental; ccache shares build/'s objects: the
# compile lines are the same, pyproject.toml) with Debian's meson and ninja;
# it is installed once the background pip is done.
pip_install_swapplan() {
  echo "== pip wheel . (build-pip/)"
  rm -rf build-pip/dist
  CCACHE_BASEDIR="$root" pip wheel --no-build-isolation --no-deps \
    --config-settings=builddir="$root/build-pip" -w build-pip/dist "$root"
  wait_for_pip
  echo "== pip install build-pip/dist/swapplan-*.whl ($venv)"
  pip install --no-deps --force-reinstall build-pip/dist/swapplan-*.whl
}

if [ "$mode" = demo ]; then
  pip_install_swapplan
  echo "== ready after $(elapsed)"
  # Llama-2-7B on an Ascend 910B (DP 8, ZeRO-2, sequence 4096; synthesized,
  # see traces/README.md) with 34 GiB of device memory: does it fit, which
  # policy is best and what it costs, and the HTML report of every planner.
  echo "== swapplan advise traces/llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB --html report.html"
  "$venv/bin/swapplan" advise traces/llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB \
    --html report.html
  echo "== wrote report.html (open it in a browser; it needs no network); $(elapsed) in all"
  exit 0
fi

python="$root/$venv/bin/python3"
[ "${venv#/}" != "$venv" ] && python="$venv/bin/python3"
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release "-Dpython=$python"
elif [ "$(meson introspect build --buildoptions | "$python" -c \
        'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="python"))')" != "$python" ]; then
  meson configure build "-Dpython=$python"
fi
ninja -C build
pip_install_swapplan

echo "== meson test (Python: $python, torch $("$python" -c 'import torch; print(torch.__version__)'))"
# PyTorch, transformers and Chromium were installed above, so a suite
# skipping itself for their absence is a failure.
SWAPPLAN_REQUIRE_TORCH=1 SWAPPLAN_REQUIRE_TRANSFORMERS=1 SWAPPLAN_REQUIRE_CHROMIUM=1 \
  meson test -C build --print-errorlogs
echo "== quickstart test: $(elapsed)"
