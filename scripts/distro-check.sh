#!/usr/bin/env bash
# Builds swapplan and runs its test suite on another Debian release, from
# that release's own packages, in a debootstrap chroot inside the
# repository's build area (docs/building.md, "Debian releases"):
#
#   scripts/distro-check.sh bookworm|trixie [MESON_TEST_ARGS...]
#
# 1. debootstrap (minbase) of RELEASE into build-distro/RELEASE/root, once;
# 2. the working tree (tracked and untracked files git does not ignore)
#    copied to /src/swapplan inside it, ../shared bound read-only beside it
#    when present (the external traces);
# 3. inside, as root: the packages of scripts/debian.sh (build, test and the
#    release's python3-torch: torch 1.13 on bookworm, 2.6 and libtorch-dev
#    on trixie), the
#    versions that matter printed, `meson setup /src/build
#    -Dpython=/usr/bin/python3`, `ninja`, `meson test` (every suite; the
#    browser tests skip without Chromium, which is not installed), then the
#    suite summary and the wall time of each step.
#
# The chroot and its build directory are kept: a second run copies the tree
# again and rebuilds incrementally. Needs root (debootstrap, chroot, mounts
# in a private mount namespace, gone when the script ends) and Debian's
# mirror (DISTRO_MIRROR, default http://deb.debian.org/debian). Slow: on 2
# cores a first run is debootstrap + apt + a full build. Not part of CI.
# DISTRO_JOBS (default 2) is ninja's and meson test's parallelism;
# DISTRO_MESON_ARGS more `meson setup` options (e.g. "-Doptimization=1
# -Dbenchmarks=false" for a quicker build on a loaded machine);
# DISTRO_TARGETS only these ninja targets (default: all), e.g.
# "tests/thread_pool_test" with MESON_TEST_ARGS "--suite thread_pool".
set -euo pipefail

inside() {
  # Runs in the chroot (below): install, configure, build, test.
  local t0 t
  t0=$(date +%s)
  cd /src/swapplan
  # shellcheck source=debian.sh
  . scripts/debian.sh
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2046  # word lists
  apt_install $(debian_packages build test distro-torch)
  t=$(date +%s); echo "== packages: $((t - t0)) s"
  echo "== versions"
  echo "   debian $(cat /etc/debian_version), $(g++ --version | head -1), meson $(meson --version)"
  dpkg-query -W -f='   ${Package} ${Version}\n' catch2 libabsl-dev libcli11-dev libprotobuf-dev \
    libgrpc++-dev python3 python3-torch
  python3 -c 'import sys, torch; print("   python %s, torch %s" % (sys.version.split()[0], torch.__version__))'
  # shellcheck disable=SC2086  # word list
  if [ ! -f /src/build/build.ninja ]; then
    meson setup /src/build -Dpython=/usr/bin/python3 ${DISTRO_MESON_ARGS:-}
  elif [ -n "${DISTRO_MESON_ARGS:-}" ]; then
    meson configure /src/build ${DISTRO_MESON_ARGS}
  fi
  # shellcheck disable=SC2086  # word list
  ninja -C /src/build -j "${DISTRO_JOBS:-2}" ${DISTRO_TARGETS:-}
  echo "== build: $(($(date +%s) - t)) s"
  t=$(date +%s)
  local rc=0
  SWAPPLAN_REQUIRE_TORCH=1 meson test -C /src/build --no-rebuild --print-errorlogs \
    --num-processes "${DISTRO_JOBS:-2}" "$@" > /src/meson-test.log 2>&1 || rc=$?
  grep -E '^ *[0-9]+/[0-9]+ ' /src/meson-test.log | grep -vE ' OK |EXPECTEDFAIL' || true
  sed -n '/^Ok:/,/^Timeout:/p' /src/meson-test.log
  echo "== test: $(($(date +%s) - t)) s (log: build-distro/$(debian_codename)/root/src/meson-test.log)"
  echo "== total inside the chroot: $(($(date +%s) - t0)) s"
  return $rc
}

if [ "${1:-}" = --inside ]; then
  shift
  inside "$@"
  exit
fi

cd "$(dirname "$0")/.."
release=${1:-}
case "$release" in
  bookworm|trixie) shift ;;
  *) echo "usage: $0 bookworm|trixie [MESON_TEST_ARGS...]" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  echo "distro-check.sh: needs root (debootstrap, chroot, mount)" >&2
  exit 2
fi
# shellcheck source=debian.sh
command -v debootstrap > /dev/null || (. scripts/debian.sh && apt_install debootstrap)
start=$(date +%s)
area="$PWD/build-distro/$release"
root="$area/root"
mirror=${DISTRO_MIRROR:-http://deb.debian.org/debian}

if [ ! -f "$area/bootstrapped" ]; then
  echo "== debootstrap $release into build-distro/$release/root"
  rm -rf "$root"
  mkdir -p "$root"
  debootstrap --variant=minbase --include=ca-certificates "$release" "$root" "$mirror" \
    > "$area/debootstrap.log" 2>&1 || { tail -n 20 "$area/debootstrap.log" >&2; exit 1; }
  touch "$area/bootstrapped"
  echo "== debootstrap: $(($(date +%s) - start)) s"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"

# The tree as git sees it, into /src/swapplan: a file whose content changed
# since the last run is written anew (so ninja, which compares modification
# times with the chroot's objects, rebuilds what depends on it), an unchanged
# one keeps its time (incremental rebuilds), a deleted one goes. Keeping the
# checkout's own times instead would miss an edit older than the object.
rm -rf "$root/src/swapplan.new"
mkdir -p "$root/src/swapplan" "$root/src/swapplan.new" "$root/src/shared"
git ls-files -z --cached --others --exclude-standard |
  tar --null -T - --ignore-failed-read -cf - 2> /dev/null | tar -xf - -C "$root/src/swapplan.new"
python3 - "$root/src/swapplan.new" "$root/src/swapplan" <<'PY'
import filecmp, os, shutil, sys
new, dst = sys.argv[1:]
keep = set()
for d, _, files in os.walk(new):
    for f in files:
        s = os.path.join(d, f)
        rel = os.path.relpath(s, new)
        t = os.path.join(dst, rel)
        keep.add(rel)
        if os.path.islink(s):
            if not (os.path.islink(t) and os.readlink(t) == os.readlink(s)):
                if os.path.lexists(t):
                    os.remove(t)
                os.makedirs(os.path.dirname(t), exist_ok=True)
                os.symlink(os.readlink(s), t)
            continue
        if (os.path.isfile(t) and not os.path.islink(t)
                and filecmp.cmp(s, t, shallow=False)):
            continue
        if os.path.lexists(t):
            os.remove(t)
        os.makedirs(os.path.dirname(t), exist_ok=True)
        shutil.copyfile(s, t)  # a new modification time
        shutil.copymode(s, t)
for d, _, files in os.walk(dst):
    for f in files:
        t = os.path.join(d, f)
        if os.path.relpath(t, dst) not in keep:
            os.remove(t)
PY
rm -rf "$root/src/swapplan.new"
shared=""
for d in ../shared ../../shared; do
  [ -d "$d/external-traces" ] && { shared=$(cd "$d" && pwd); break; }
done

# A private mount namespace: /proc, /dev, /dev/shm and shared/ exist inside
# the chroot only while it runs.
unshare --mount --propagation private -- bash -c '
  set -e
  root=$1 shared=$2
  shift 2
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
  if [ -n "$shared" ]; then mount --bind -o ro "$shared" "$root/src/shared"; fi
  exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DISTRO_JOBS="${DISTRO_JOBS:-2}" DISTRO_MESON_ARGS="${DISTRO_MESON_ARGS:-}" \
    DISTRO_TARGETS="${DISTRO_TARGETS:-}" \
    bash /src/swapplan/scripts/distro-check.sh --inside "$@"
' _ "$root" "$shared" "$@" && rc=0 || rc=$?
echo "== distro-check $release: $([ "$rc" = 0 ] && echo passed || echo "FAILED (exit $rc)"), $(($(date +%s) - start)) s in all"
exit "$rc"
