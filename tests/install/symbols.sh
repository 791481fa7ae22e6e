#!/usr/bin/env bash
# tests/install/symbols.sh: every global symbol libcoexec defines starts
# with coexec_ (public; internal ones coexec__), so that no name of the
# library can clash with a program's or another library's.
#   libcoexec.a   every defined global symbol of every member (nm -g)
#   libcoexec.so  every defined dynamic symbol (nm -D), minus the version
#                 nodes (type A, COEXEC_<version>)
# Symbols a sanitizer's instrumentation adds (__asan_*, __tsan_*, __ubsan_*,
# __sancov_*) are not the library's and are skipped; ASan's ODR indicators
# (__odr_asan.NAME, __odr_asan_gen_NAME) are checked as the NAME they stand
# for.
#
# usage: tests/install/symbols.sh LIBRARY...    (.a or .so; exit 1 on a stray)
set -euo pipefail

[[ $# -gt 0 ]] || { echo "usage: $0 LIBRARY..." >&2; exit 2; }
nm=${NM:-nm}
status=0
for lib in "$@"; do
  case "$lib" in
    *.a) syms=$("$nm" -g --defined-only "$lib" | awk 'NF == 3 {print $3}') ;;
    *)   syms=$("$nm" -D --defined-only "$lib" |
                awk 'NF == 3 && !($2 == "A" && $3 ~ /^COEXEC_[0-9.]+$/) {print $3}' |
                sed 's/@.*//') ;;
  esac
  syms=$(printf '%s\n' "$syms" | sed -E 's/^__odr_asan(\.|_gen_)//' |
         grep -Ev '^(__asan_|__tsan_|__ubsan_|__sancov_)' | sort -u | grep . || true)
  n=$(printf '%s\n' "$syms" | grep -c . || true)
  stray=$(printf '%s\n' "$syms" | grep -v '^coexec_' || true)
  if [[ $n -eq 0 ]]; then
    echo "FAIL  $lib: no global symbols found"
    status=1
  elif [[ -n "$stray" ]]; then
    echo "FAIL  $lib: global symbols outside coexec_*:"
    printf '%s\n' "$stray" | sed 's/^/        /'
    status=1
  else
    echo "ok    $lib: $n global symbols, all coexec_*"
  fi
done
exit $status
