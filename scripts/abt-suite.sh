#!/usr/bin/env bash
# scripts/abt-suite.sh: builds Argobots' own test programs (test/basic, with
# the helpers of test/util) unmodified against libcoexec-abt and runs them.
#
#   scripts/abt-suite.sh ARGOBOTS_SRC_DIR [PREFIX]
#
# ARGOBOTS_SRC_DIR is a checkout of github.com/pmodels/argobots, kept outside
# this repository (nothing of it is ever committed here). PREFIX is where
# libcoexec (with COEXEC_ABT on) is installed; without it the script builds
# this tree in Release and installs it into a temporary prefix first.
# Programs are found, compiled and linked only through `pkg-config
# coexec-abt`. Each runs as Argobots' `make check` runs it: exit 0 passes,
# 77 skips, anything else (or ABT_SUITE_TIMEOUT seconds, default 60) fails.
# Prints one line per program and the totals; exits 1 if any program failed.
#
# Environment: ABT_SUITE_TIMEOUT (seconds per program), ABT_SUITE_ONLY (a
# space-separated list of programs to build and run instead of all), CC.
set -u

die() { echo "abt-suite: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: $0 ARGOBOTS_SRC_DIR [PREFIX]"
src=$(cd "$1" 2>/dev/null && pwd) || die "$1: no such directory"
[ -f "$src/test/basic/Makefile.am" ] && [ -f "$src/test/util/abttest.c" ] ||
  die "$src does not look like an Argobots source tree (test/basic, test/util)"
repo=$(cd "$(dirname "$0")/.." && pwd)
timeout_s=${ABT_SUITE_TIMEOUT:-60}
cc=${CC:-cc}
work=$(mktemp -d "${TMPDIR:-/tmp}/abt-suite.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ $# -ge 2 ]; then
  prefix=$(cd "$2" 2>/dev/null && pwd) || die "$2: no such directory"
else
  prefix=$work/prefix
  echo "abt-suite: building libcoexec into $prefix"
  cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCOEXEC_ABT=ON -DCOEXEC_BUILD_TESTS=OFF -DCOEXEC_BUILD_BENCH=OFF \
        -DCOEXEC_BUILD_EXAMPLES=OFF >"$work/cmake.log" 2>&1 &&
    cmake --build "$work/build" -j2 >>"$work/cmake.log" 2>&1 &&
    cmake --install "$work/build" --prefix "$prefix" >>"$work/cmake.log" 2>&1 ||
    { tail -20 "$work/cmake.log" >&2; die "building libcoexec failed"; }
fi

pcdir=$(ls -d "$prefix"/lib*/pkgconfig 2>/dev/null | head -1)
[ -n "$pcdir" ] || die "no pkgconfig directory under $prefix"
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cflags=$(pkg-config --cflags coexec-abt) || die "pkg-config coexec-abt failed"
libs=$(pkg-config --libs coexec-abt) || die "pkg-config coexec-abt failed"
libdir=$(pkg-config --variable=libdir coexec-abt)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The programs make check runs: the TESTS list of test/basic/Makefile.am.
tests=$(sed -n '/^TESTS *=/,/^$/p' "$src/test/basic/Makefile.am" |
        sed -e 's/^TESTS *=//' -e 's/\\//g' | tr -s ' \t\n' '\n' | grep -v '^$')
if [ -n "${ABT_SUITE_ONLY:-}" ]; then
  tests=$(printf '%s\n' $ABT_SUITE_ONLY)
fi

mkdir -p "$work/bin"
# shellcheck disable=SC2086
$cc -O2 -g -c $cflags -I"$src/test/util" "$src/test/util/abttest.c" \
    -o "$work/abttest.o" 2>"$work/abttest.log" ||
  { cat "$work/abttest.log" >&2; die "test/util/abttest.c does not build"; }

pass=0 skip=0 fail=0
failed="" skipped=""
for t in $tests; do
  if ! $cc -O2 -g $cflags -I"$src/test/util" "$src/test/basic/$t.c" \
         "$work/abttest.o" $libs -lpthread -lm -o "$work/bin/$t" \
         >"$work/$t.build.log" 2>&1; then
    echo "FAIL $t (build: $(grep -m1 -E 'error|undefined' "$work/$t.build.log"))"
    fail=$((fail + 1)); failed="$failed $t"
    continue
  fi
  (cd "$work" && timeout -k 5 "$timeout_s" "$work/bin/$t" >"$work/$t.log" 2>&1)
  rc=$?
  case $rc in
    0) echo "PASS $t"; pass=$((pass + 1)) ;;
    77) echo "SKIP $t"; skip=$((skip + 1)); skipped="$skipped $t" ;;
    124|137) echo "FAIL $t (timeout ${timeout_s}s)"; fail=$((fail + 1)); failed="$failed $t" ;;
    *) echo "FAIL $t (exit $rc: $(grep -v '^$' "$work/$t.log" | tail -1 | cut -c1-120))"
       fail=$((fail + 1)); failed="$failed $t" ;;
  esac
done

total=$((pass + skip + fail))
echo "abt-suite: $total programs: $pass passed, $skip skipped, $fail failed"
[ -z "$skipped" ] || echo "abt-suite: skipped:$skipped"
[ -z "$failed" ] || echo "abt-suite: failed:$failed"
[ "$fail" -eq 0 ]
