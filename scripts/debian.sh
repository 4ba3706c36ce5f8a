# Debian facts shared by scripts/quickstart.sh, scripts/distro-check.sh,
# scripts/fuzz.sh and .ci/run (sourced, not run): the release, its clang and
# the packages each purpose needs. Tested on Debian 12 (bookworm) and 13
# (trixie); docs/building.md.
#
#   . scripts/debian.sh
#   debian_packages build       # the C++ build: compiler, meson, libraries
#   swapplan_clang              # 14 on bookworm, 19 on trixie (the newest installed elsewhere)

# The release's code name (bookworm, trixie, ...), empty when unknown.
debian_codename() {
  (. /etc/os-release 2> /dev/null && echo "${VERSION_CODENAME:-}")
}

# The clang major version the sanitizer, fuzzing and TSan builds use: the
# installed clang++-N that the release ships (14 on bookworm, 19 on trixie),
# else the newest clang++-N installed, else the release's (to install).
swapplan_clang() {
  local want v
  case "$(debian_codename)" in
    bookworm) want=14 ;;
    *) want=19 ;;
  esac
  if command -v "clang++-$want" > /dev/null; then echo "$want"; return; fi
  for v in 22 21 20 19 18 17 16 15 14; do
    if command -v "clang++-$v" > /dev/null; then echo "$v"; return; fi
  done
  echo "$want"
}

# debian_packages PURPOSE...: the Debian packages, one per line, for
#   build   the C++ build of swapplan (libraries, CLI, runtime shim) and the
#           virtual environment's Python (python3-venv; pip brings the rest)
#   test    the test suite's extras: Catch2, Google Benchmark, MPI
#   ci      the HTML report's test in headless Chromium, CI's clang stages
#           (sanitizers, libFuzzer, ThreadSanitizer)
#   distro-torch  the second torch point: Debian's own python3-torch and
#           what the Python suites need beside it in /usr/bin/python3; from
#           Debian 13 on (torch 2.6) also libtorch-dev, which python3-torch
#           only recommends: torch's C++ headers, which torch.compile's
#           inductor backend compiles its CPU kernels against
debian_packages() {
  local p clang
  clang=$(swapplan_clang)
  for p in "$@"; do
    case "$p" in
      build)
        printf '%s\n' g++ meson ninja-build pkg-config ccache protobuf-compiler libprotobuf-dev \
          zlib1g-dev libabsl-dev libcli11-dev nlohmann-json3-dev coinor-libcbc-dev \
          libgrpc++-dev protobuf-compiler-grpc libssl-dev python3 python3-venv ;;
      test)
        printf '%s\n' catch2 libbenchmark-dev libopenmpi-dev openmpi-bin ;;
      ci)
        printf '%s\n' chromium "clang-$clang" "libclang-rt-$clang-dev" ;;
      distro-torch)
        printf '%s\n' python3-torch python3-numpy python3-grpcio python3-protobuf python3-pytest \
          python3-hypothesis
        [ "$(debian_codename)" = bookworm ] || echo libtorch-dev ;;
      *) echo "debian_packages: unknown purpose '$p'" >&2; return 2 ;;
    esac
  done
}

# apt_install PACKAGE...: installs those not installed yet (sudo when not root).
apt_install() {
  local missing=() p sudo=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "== installing (apt): ${missing[*]}"
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
