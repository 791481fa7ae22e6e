#!/usr/bin/env bash
# scripts/deps.sh: install the Debian packages libcoexec needs, if missing.
#
# usage: scripts/deps.sh [GROUP...]      (default: all)
#   build   compiler, CMake, Ninja, pkg-config, hwloc, libatomic_ops, CUnit,
#           liburing (optional for the library: the service stream's io_uring
#           path is built when CMake finds it), python3 and binutils (nm,
#           readelf: the layers test, scripts/layers.py)
#   test    build + valgrind (the valgrind stage of scripts/test.sh)
#   cross   AArch64 cross compiler, its libc and qemu-user (context-switch test)
#   all     build + test + cross
#
# Nothing is run when every package is installed already. Otherwise it runs
# `apt-get update` and `apt-get install -y` (as root, or through sudo).
set -euo pipefail

group_build=(cmake ninja-build pkg-config gcc libc6-dev libhwloc-dev hwloc-nox
             libatomic-ops-dev libcunit1-dev libudev-dev liburing-dev
             python3 binutils)
group_test=(valgrind)
group_cross=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

[[ $# -eq 0 ]] && set -- all
want=()
for g in "$@"; do
  case "$g" in
    build) want+=("${group_build[@]}") ;;
    test)  want+=("${group_build[@]}" "${group_test[@]}") ;;
    cross) want+=("${group_cross[@]}") ;;
    all)   want+=("${group_build[@]}" "${group_test[@]}" "${group_cross[@]}") ;;
    -h|--help) usage; exit 0 ;;
    *) echo "deps.sh: unknown group '$g' (build, test, cross, all)" >&2; exit 2 ;;
  esac
done

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps.sh: not a Debian-like system (no dpkg-query); install by hand: ${want[*]}" >&2
  exit 1
fi

missing=()
declare -A seen=()
for p in "${want[@]}"; do
  [[ -n "${seen[$p]:-}" ]] && continue
  seen[$p]=1
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps.sh: all ${#seen[@]} packages present"
  exit 0
fi

echo "deps.sh: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo -n)
else
  echo "deps.sh: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=300 -q)
"${SUDO[@]}" apt-get "${apt_opts[@]}" update
"${SUDO[@]}" apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}"
echo "deps.sh: done"
