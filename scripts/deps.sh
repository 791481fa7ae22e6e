#!/usr/bin/env bash
# scripts/deps.sh: install the packages libcoexec needs, if missing, on
# Debian or Ubuntu (apt-get) and on Fedora, RHEL and their rebuilds (dnf).
#
# usage: scripts/deps.sh [--dry-run] [GROUP...]   (default: build test docs)
#   build   compiler, CMake, Ninja, pkg-config, hwloc, libatomic_ops, CUnit,
#           liburing (optional for the library: the service stream's io_uring
#           path is built when CMake finds it), python3 and binutils (nm,
#           readelf: the layers test, scripts/layers.py; python3 also makes
#           the manual pages), groff and man-db (the manual pages' checks),
#           Open MPI (libcoexec-mpi, its tests under mpiexec, the MPI
#           benchmarks; all are built only when CMake finds an MPI)
#   test    build + valgrind (the valgrind stage of scripts/test.sh)
#   docs    build + doxygen (the HTML reference: the docs stage)
#   cross   the AArch64 cross compiler, its libc and qemu-user (the cross
#           stage; Debian and Ubuntu only): several hundred megabytes,
#           installed only when this group (or all) is named, and announced
#           before it is
#   all     build + test + docs + cross
#
# Nothing is run when every package is installed already. Otherwise it runs
# the package manager's update (apt-get only) and install, as root, or
# through sudo when not root (on a terminal sudo may ask for a password;
# elsewhere it runs as `sudo -n`). With neither root nor sudo it prints the
# commands to run as root and exits 1.
#   --dry-run   print the commands it would run, run none (exit 0)
# Environment:
#   COEXEC_OS_RELEASE  read the distribution from this file instead of
#                      /etc/os-release (tests; derivatives whose ID_LIKE is
#                      not recognised). The packages are then not looked up
#                      on this machine: every one counts as missing.
# On RHEL and its rebuilds, ninja-build, CUnit-devel, libatomic_ops-devel
# and doxygen come from the CRB repository and EPEL: enable them first.
# Fedora's Open MPI is found by CMake once its environment module is
# loaded (`module load mpi/openmpi-x86_64`).
set -euo pipefail

# Package names per family, group by group.
debian_build=(cmake ninja-build pkg-config gcc libc6-dev libhwloc-dev hwloc-nox
              libatomic-ops-dev libcunit1-dev libudev-dev liburing-dev
              python3 binutils groff-base man-db openmpi-bin libopenmpi-dev)
debian_test=(valgrind)
debian_docs=(doxygen)
debian_cross=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
fedora_build=(cmake ninja-build pkgconf-pkg-config gcc glibc-devel hwloc-devel hwloc
              libatomic_ops-devel CUnit-devel systemd-devel liburing-devel
              python3 binutils groff-base man-db openmpi openmpi-devel)
fedora_test=(valgrind valgrind-devel)
fedora_docs=(doxygen)
fedora_cross=()  # no packaged AArch64 sysroot: the cross stage is Debian's

usage() { sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; }

dry=0
groups=()
for a in "$@"; do
  case "$a" in
    --dry-run) dry=1 ;;
    -h|--help) usage; exit 0 ;;
    build|test|docs|cross) groups+=("$a") ;;
    all) groups+=(build test docs cross) ;;
    *) echo "deps.sh: unknown argument '$a' (build, test, docs, cross, all, --dry-run)" >&2; exit 2 ;;
  esac
done
[[ ${#groups[@]} -gt 0 ]] || groups=(build test docs)

# ---- which family ------------------------------------------------------------
os_release=${COEXEC_OS_RELEASE:-/etc/os-release}
[[ -r "$os_release" ]] || { echo "deps.sh: cannot read $os_release" >&2; exit 1; }
os_id=$(. "$os_release" && echo "${ID:-} ${ID_LIKE:-}")
os_name=$(. "$os_release" && echo "${PRETTY_NAME:-${ID:-unknown}}")
family=
for w in $os_id; do
  case "$w" in
    debian|ubuntu) family=debian; break ;;
    fedora|rhel|centos|rocky|almalinux) family=fedora; break ;;
  esac
done
if [[ -z "$family" ]]; then
  echo "deps.sh: $os_name is neither Debian-like nor Fedora-like; install by hand the" >&2
  echo "         equivalents of Debian's: ${debian_build[*]} ${debian_test[*]} ${debian_docs[*]}" >&2
  exit 1
fi

want=()
for g in "${groups[@]}"; do
  case "$g" in
    test|docs) eval "want+=(\"\${${family}_build[@]}\")" ;;
  esac
  eval "want+=(\"\${${family}_${g}[@]}\")"
done
if [[ " ${groups[*]} " == *" cross "* && $family == fedora ]]; then
  echo "deps.sh: the cross group (AArch64 cross compiler with its C library, qemu-user) is" >&2
  echo "         packaged on Debian and Ubuntu only; the cross stage cannot run on $os_name" >&2
  exit 1
fi

# ---- what is missing -----------------------------------------------------------
installed() {
  [[ -z "${COEXEC_OS_RELEASE:-}" ]] || return 1
  case "$family" in
    debian) command -v dpkg-query >/dev/null 2>&1 &&
            [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]] ;;
    fedora) command -v rpm >/dev/null 2>&1 && rpm -q --quiet "$1" 2>/dev/null ;;
  esac
}
missing=()
declare -A seen=()
for p in "${want[@]}"; do
  [[ -n "${seen[$p]:-}" ]] && continue
  seen[$p]=1
  installed "$p" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps.sh: all ${#seen[@]} packages present ($os_name)"
  exit 0
fi

# ---- the commands ------------------------------------------------------------------
case "$family" in
  debian)
    pm=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q)
    cmds=("${pm[*]} update" "${pm[*]} install -y --no-install-recommends ${missing[*]}") ;;
  fedora)
    cmds=("dnf install -y --setopt=install_weak_deps=False ${missing[*]}") ;;
esac

sudo=
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    if [[ -t 0 ]]; then sudo="sudo "; else sudo="sudo -n "; fi
  else
    echo "deps.sh: $os_name is missing: ${missing[*]}" >&2
    echo "deps.sh: neither root nor sudo: run these as root, then again:" >&2
    for c in "${cmds[@]}"; do echo "  $c" >&2; done
    [[ $dry -eq 1 ]] && exit 0
    exit 1
  fi
fi

for p in "${missing[@]}"; do
  for c in "${debian_cross[@]}"; do
    if [[ "$p" == "$c" ]]; then
      echo "deps.sh: note: installing the AArch64 cross toolchain and qemu-user for the cross"
      echo "         stage (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user: several"
      echo "         hundred megabytes)"
      break 2
    fi
  done
done
echo "deps.sh: $os_name ($family family) is missing: ${missing[*]}"
for c in "${cmds[@]}"; do
  echo "+ $sudo$c"
  [[ $dry -eq 1 ]] && continue
  # shellcheck disable=SC2086
  $sudo$c || { echo "deps.sh: failed: $sudo$c" >&2; exit 1; }
done
[[ $dry -eq 1 ]] && { echo "deps.sh: dry run: nothing installed"; exit 0; }
echo "deps.sh: done"
