#!/usr/bin/env bash
# tests/arch/cross-aarch64.sh: builds the AArch64 context switch
# (src/arch/aarch64/, plus src/arch/context_generic.c for start and jump, as
# CMake does for this backend) with tests/arch/test_context.c using the
# Debian cross compiler and runs it under qemu user-mode emulation.
#
# usage: tests/arch/cross-aarch64.sh [BUILD_DIR]   (default: build/cross-aarch64)
#
# Two builds run: plain -O2, and -O2 -mbranch-protection=standard, which
# takes the BTI landing-pad and GNU property path of context.S.
#
# CUnit has no arm64 package on an amd64 machine without dpkg multiarch
# (and multiarch needs the arm64 package lists fetched first), so the cross
# build uses tests/arch/cunit_shim.h, which provides the CU_* calls the test
# uses and prints the same Run Summary table. Only the cross compiler, its
# libc and qemu-user are needed; they are installed with apt-get when
# missing and we are root (exit 77, "skipped", when they cannot be).
#
# Environment: AARCH64_CC (default aarch64-linux-gnu-gcc), QEMU_AARCH64
# (default qemu-aarch64), AARCH64_SYSROOT (default /usr/aarch64-linux-gnu).
# Exits non-zero if any build or test fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/build/cross-aarch64}
cc=${AARCH64_CC:-aarch64-linux-gnu-gcc}
qemu=${QEMU_AARCH64:-qemu-aarch64}
sysroot=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}

have_tools() {
  command -v "$cc" >/dev/null 2>&1 && command -v "$qemu" >/dev/null 2>&1 &&
    [[ -e "$sysroot/lib/ld-linux-aarch64.so.1" ]]
}

if ! have_tools; then
  pkgs=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
  if [[ $(id -u) -ne 0 ]]; then
    echo "cross-aarch64: skipped: need $cc, $qemu and $sysroot (apt-get install ${pkgs[*]})"
    exit 77
  fi
  echo "cross-aarch64: installing ${pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -q
  apt-get -o DPkg::Lock::Timeout=300 install -y -q "${pkgs[@]}"
  if ! have_tools; then
    echo "cross-aarch64: FAILED: tools still missing after apt-get install" >&2
    exit 1
  fi
fi

mkdir -p "$out"
srcs=("$root/src/arch/aarch64/context.S" "$root/src/arch/aarch64/context_make.c"
      "$root/src/arch/context_generic.c" "$root/tests/arch/test_context.c")
common=(-O2 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror
        -I"$root/src" -I"$root/tests/arch" -DCOEXEC_CUNIT_SHIM=1)

echo "cross-aarch64: $("$cc" --version | head -n1); $("$qemu" --version | head -n1)"
pass=0 fail=0
run_variant() {
  local name=$1
  shift
  local exe="$out/test_context-$name"
  echo
  echo "==== aarch64 $name: $cc ${*:-(no extra flags)}"
  if ! "$cc" "${common[@]}" "$@" "${srcs[@]}" -lm -o "$exe"; then
    echo "---- aarch64 $name: FAILED (build)"
    fail=$((fail + 1))
    return
  fi
  if ! readelf -h "$exe" | grep -q 'AArch64'; then
    echo "---- aarch64 $name: FAILED (not an AArch64 binary)"
    fail=$((fail + 1))
    return
  fi
  # Each run is bounded: a broken switch tends to hang rather than crash.
  if timeout -k 10 300 "$qemu" -L "$sysroot" "$exe"; then
    echo "---- aarch64 $name: passed"
    pass=$((pass + 1))
  else
    echo "---- aarch64 $name: FAILED (exit $?)"
    fail=$((fail + 1))
  fi
}

run_variant plain
run_variant bti-pac -mbranch-protection=standard

echo
echo "cross-aarch64: $pass passed, $fail failed"
((fail == 0))
