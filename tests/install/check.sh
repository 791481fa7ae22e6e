#!/usr/bin/env bash
# tests/install/check.sh: install a built libcoexec into a temporary prefix
# and build the consumer in this directory against it, four ways:
#   1. pkg-config, shared library
#   2. pkg-config --static, libcoexec.a
#   3. CMake find_package(coexec), coexec::coexec        (shared)
#   4. CMake find_package(coexec), coexec::coexec_static
#   5. libcoexec-mpi, when it was built: pkg-config coexec-mpi and CMake
#      coexec::mpi, each run under mpiexec -n 1
# Each program is run. The prefix is moved after installing, so the
# relocatability of coexec.pc and of the CMake package is checked too.
# Also checks that libcoexec.so has SONAME libcoexec.so.0, that every global
# symbol of libcoexec.so and of libcoexec.a starts with coexec_
# (symbols.sh), and that a program defining names the archive once
# exported without the prefix (clash.c) links against libcoexec.a, and
# that the manual pages are installed: `man -M <prefix>/share/man
# coexec_thread_create` finds and shows coexec_thread(3), and groff renders
# the overview coexec(3) without a warning (each where man or groff is
# installed; scripts/deps.sh build installs both).
#
# usage: tests/install/check.sh [BUILD_DIR]     (default: build/release, built)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build/release}
build=$(cd "$build" && pwd)
cc=${CC:-cc}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/coexec-install.XXXXXX")
cleanup() { [[ -n "${COEXEC_KEEP_TMP:-}" ]] || rm -rf "$tmp"; }
trap cleanup EXIT

failures=0
pass() { printf '  ok    %s\n' "$1"; }
fail() { printf '  FAIL  %s\n' "$1"; failures=$((failures + 1)); }
step() { printf '\n== %s\n' "$1"; }

ver=$(sed -n 's/^#define COEXEC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
        "$root/include/coexec/version.h" | paste -sd.)
echo "install check: libcoexec $ver from $build"

step "install into a staging prefix, then move it"
cmake --install "$build" --prefix "$tmp/stage" >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; echo "cmake --install failed"; exit 1; }
mv "$tmp/stage" "$tmp/prefix"
P=$tmp/prefix
pcfile=$(find "$P" -name coexec.pc -path '*/pkgconfig/*' | head -n1)
so=$(find "$P" -name 'libcoexec.so.*.*' -type f | head -n1)
ar=$(find "$P" -name 'libcoexec.a' | head -n1)
libdir=$(dirname "${so:-${ar:-$P/lib/x}}")
for f in "$P/include/coexec.h" "$P/include/coexec/version.h" "$pcfile" "$so" "$ar" \
         "$libdir/libcoexec.so" "$libdir/libcoexec.so.0" \
         "$libdir/cmake/coexec/coexecConfig.cmake" \
         "$libdir/cmake/coexec/coexecConfigVersion.cmake" \
         "$libdir/cmake/coexec/coexecTargets.cmake"; do
  if [[ -n "$f" && -e "$f" ]]; then pass "installed ${f#$P/}"; else fail "missing ${f#$P/}"; fi
done
if [[ -e "$build/bench/coexec-bench" ]]; then
  if [[ -x "$P/bin/coexec-bench" ]]; then pass "installed bin/coexec-bench"
  else fail "bench/coexec-bench was built but not installed"; fi
fi
[[ -n "$so" && -n "$ar" && -n "$pcfile" ]] || { echo "install incomplete"; exit 1; }

step "manual pages"
mandir=$P/share/man
if [[ "$(sed -n 's/^COEXEC_MAN:BOOL=//p' "$build/CMakeCache.txt" 2>/dev/null)" == OFF ]]; then
  echo "  skip  built with COEXEC_MAN=OFF"
else
  for f in coexec.3 coexec_thread.3 coexec_thread_create.3 coexec_mutex_unlock.3; do
    [[ -s "$mandir/man3/$f" ]] && pass "installed share/man/man3/$f" || fail "missing share/man/man3/$f"
  done
  echo "  info  $(ls "$mandir/man3" 2>/dev/null | wc -l) pages in share/man/man3"
  if command -v man >/dev/null 2>&1; then
    where=$(man -M "$mandir" -w coexec_thread_create 2>&1)
    text=$(MANPAGER=cat MANWIDTH=80 man -M "$mandir" coexec_thread_create 2>&1)
    if [[ "$where" == "$mandir/man3/coexec_thread"* ]] &&
       grep -q '^COEXEC_THREAD(3)' <<<"$text" && grep -q 'coexec_thread_create(' <<<"$text"; then
      pass "man -M <prefix>/share/man coexec_thread_create shows coexec_thread(3)"
    else
      fail "man -M <prefix>/share/man coexec_thread_create: $where"
      printf '%s\n' "$text" | head -n 12 | sed 's/^/        /'
    fi
  else
    echo "  skip  man is not installed (scripts/deps.sh build)"
  fi
  if command -v groff >/dev/null 2>&1; then
    warn=$(groff -man -Tutf8 -ww -z "$mandir/man3/coexec.3" 2>&1)
    [[ -z "$warn" ]] && pass "groff renders coexec(3) with no warning" || fail "groff on coexec(3): $warn"
  else
    echo "  skip  groff is not installed (scripts/deps.sh build)"
  fi
fi

step "ABI of libcoexec.so"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [[ "$soname" == libcoexec.so.0 ]]; then pass "SONAME $soname"; else fail "SONAME '$soname', want libcoexec.so.0"; fi
if symout=$("$here/symbols.sh" "$so" "$ar" 2>&1); then
  pass "global symbols of libcoexec.so and libcoexec.a are all coexec_*"
  printf '%s\n' "$symout" | sed 's/^/        /'
else
  fail "global symbols outside coexec_*:"; printf '%s\n' "$symout" | sed 's/^/        /'
fi
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')
echo "  info  NEEDED: $needed"

run() { # name, program: runs it, checks its output
  local name=$1 prog=$2 out
  if out=$("$prog" 2>&1) && grep -q "consumer: ok, libcoexec $ver" <<<"$out"; then
    pass "$name runs: $out"
  else
    fail "$name did not run correctly:"; printf '%s\n' "$out" | sed 's/^/        /'
  fi
}
links_shared() { readelf -d "$1" | grep -q 'NEEDED.*\[libcoexec\.so\.0\]'; }

export PKG_CONFIG_PATH=$(dirname "$pcfile")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
step "pkg-config"
if pkg-config --validate coexec; then pass "pkg-config --validate coexec"; else fail "pkg-config --validate coexec"; fi
pcver=$(pkg-config --modversion coexec)
[[ "$pcver" == "$ver" ]] && pass "modversion $pcver" || fail "modversion $pcver, want $ver"
pcinc=$(pkg-config --variable=includedir coexec)
[[ "$(cd "$pcinc" && pwd -P)" == "$(cd "$P/include" && pwd -P)" ]] \
  && pass "includedir follows the moved prefix" || fail "includedir $pcinc is not under $P"

step "1. pkg-config, shared"
# shellcheck disable=SC2046
if $cc -o "$tmp/pc_shared" "$here/consumer.c" $(pkg-config --cflags --libs coexec) \
       -Wl,-rpath,"$libdir" 2>"$tmp/cc.log"; then
  links_shared "$tmp/pc_shared" && pass "linked against libcoexec.so.0" || fail "pc_shared does not need libcoexec.so.0"
  run "pkg-config shared" "$tmp/pc_shared"
else
  fail "pkg-config shared build"; cat "$tmp/cc.log"
fi

step "2. pkg-config --static, libcoexec.a"
static_libs=$(pkg-config --static --libs coexec | sed 's/-lcoexec\b//')
# shellcheck disable=SC2046,SC2086
if $cc -o "$tmp/pc_static" "$here/consumer.c" $(pkg-config --cflags coexec) \
       -L"$libdir" -Wl,-Bstatic -lcoexec -Wl,-Bdynamic $static_libs 2>"$tmp/cc.log"; then
  links_shared "$tmp/pc_static" && fail "pc_static needs libcoexec.so.0" || pass "libcoexec linked statically"
  run "pkg-config static" "$tmp/pc_static"
else
  fail "pkg-config static build"; cat "$tmp/cc.log"
fi

step "2b. a program with its own wait_block, wait_release..., libcoexec.a"
# shellcheck disable=SC2046,SC2086
if $cc -o "$tmp/clash" "$here/clash.c" $(pkg-config --cflags coexec) \
       -L"$libdir" -Wl,-Bstatic -lcoexec -Wl,-Bdynamic $static_libs 2>"$tmp/cc.log"; then
  pass "clash.c links against libcoexec.a"
  if out=$("$tmp/clash" 2>&1) && grep -q "clash: ok, libcoexec $ver" <<<"$out"; then
    pass "clash runs: $out"
  else
    fail "clash did not run correctly:"; printf '%s\n' "$out" | sed 's/^/        /'
  fi
else
  fail "clash.c does not link against libcoexec.a:"; sed 's/^/        /' "$tmp/cc.log"
fi

step "3+4. CMake find_package(coexec $ver)"
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if cmake -S "$here" -B "$tmp/cmake" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_PREFIX_PATH="$P" -DCOEXEC_WANT_VERSION="$ver" >"$tmp/cmake.log" 2>&1 \
   && cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
  pass "configured and built (coexec_DIR=$(sed -n 's/^coexec_DIR:PATH=//p' "$tmp/cmake/CMakeCache.txt" | sed "s|^$P/||"))"
  links_shared "$tmp/cmake/consumer_shared" && pass "coexec::coexec is the shared library" \
    || fail "coexec::coexec did not link libcoexec.so.0"
  run "find_package coexec::coexec" "$tmp/cmake/consumer_shared"
  links_shared "$tmp/cmake/consumer_static" && fail "coexec::coexec_static linked libcoexec.so.0" \
    || pass "coexec::coexec_static is the static library"
  run "find_package coexec::coexec_static" "$tmp/cmake/consumer_static"
else
  fail "CMake consumer"; cat "$tmp/cmake.log"
fi

step "5. libcoexec-mpi: pkg-config coexec-mpi and coexec::mpi, run under mpiexec -n 1"
mpipc=$(find "$P" -name coexec-mpi.pc -path '*/pkgconfig/*' | head -n1)
if [[ -z "$mpipc" ]]; then
  echo "  skip  libcoexec-mpi was not built (no MPI found)"
else
  mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  runmpi() { # name, program
    local out
    if out=$("${mpiexec:-mpiexec}" -n 1 "$2" 2>&1) && grep -q "mpi_consumer: ok, libcoexec $ver" <<<"$out"; then
      pass "$1 runs: $out"
    else
      fail "$1 did not run correctly:"; printf '%s\n' "$out" | sed 's/^/        /'
    fi
  }
  pkg-config --validate coexec-mpi && pass "pkg-config --validate coexec-mpi" \
    || fail "pkg-config --validate coexec-mpi"
  # shellcheck disable=SC2046
  if $cc -o "$tmp/pc_mpi" "$here/mpi_consumer.c" $(pkg-config --cflags --libs coexec-mpi) \
         -Wl,-rpath,"$libdir" 2>"$tmp/cc.log"; then
    runmpi "pkg-config coexec-mpi" "$tmp/pc_mpi"
  else
    fail "pkg-config coexec-mpi build"; cat "$tmp/cc.log"
  fi
  if [[ -x "$tmp/cmake/consumer_mpi" ]]; then
    runmpi "find_package coexec::mpi" "$tmp/cmake/consumer_mpi"
  else
    fail "find_package: no coexec::mpi consumer built"
  fi
fi

step "find_package version compatibility (SameMinorVersion)"
IFS=. read -r vmaj vmin _ <<<"$ver"
mkdir -p "$tmp/vcheck"
cat >"$tmp/vcheck/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(vcheck LANGUAGES C)
find_package(coexec ${WANT} QUIET)
message(STATUS "coexec_FOUND=${coexec_FOUND}")
CM
vfound() { cmake -S "$tmp/vcheck" -B "$tmp/vcheck/b.$1" -DCMAKE_PREFIX_PATH="$P" -DWANT="$1" 2>&1 \
             | sed -n 's/.*coexec_FOUND=//p'; }
[[ "$(vfound "$vmaj.$vmin")" == 1 ]] && pass "accepts $vmaj.$vmin" || fail "rejects $vmaj.$vmin"
[[ "$(vfound "$vmaj.$((vmin + 1))")" != 1 ]] && pass "rejects $vmaj.$((vmin + 1))" || fail "accepts $vmaj.$((vmin + 1))"
[[ "$(vfound "$((vmaj + 1)).0")" != 1 ]] && pass "rejects $((vmaj + 1)).0" || fail "accepts $((vmaj + 1)).0"

echo
if [[ $failures -eq 0 ]]; then
  echo "install check: all passed"
else
  echo "install check: $failures failed"
  exit 1
fi
