#!/usr/bin/env bash
# tests/docs/check_man.sh: the manual pages cover the whole public API.
#
# usage: tests/docs/check_man.sh SRC_DIR OUT_DIR [LIBCOEXEC_SO [LIBCOEXEC_MPI_SO]]
#
#  1. scripts/gen_man.py --strict writes the pages into OUT_DIR/man/man3:
#     it fails on a public function with no comment block, or a block that
#     says nothing of Context or Switches;
#  2. every public function (gen_man.py --list) has OUT_DIR/man/man3/NAME.3;
#  3. with LIBCOEXEC_SO: every function libcoexec.so exports (nm -D, type T,
#     coexec_*) is documented, and every documented function is exported;
#     the coexec_mpi_* functions (coexec/mpi.h) are libcoexec-mpi's: they
#     count only when LIBCOEXEC_MPI_SO is given (MPI found);
#  4. groff renders every page with no warning (-ww), when groff is here;
#  5. man -M OUT_DIR/man finds coexec_thread_create, when man is here;
#  6. a copy of include/ with one undocumented public function makes
#     gen_man.py fail, naming it.
# Environment: PYTHON3 (default python3), NM (default nm).
set -uo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 SRC_DIR OUT_DIR [LIBCOEXEC_SO [LIBCOEXEC_MPI_SO]]" >&2; exit 2; }
src=$1 out=$2 lib=${3:-} mpilib=${4:-}
py=${PYTHON3:-python3}
nm=${NM:-nm}
gen=$src/scripts/gen_man.py
failures=0
pass() { printf '  ok    %s\n' "$1"; }
fail() { printf '  FAIL  %s\n' "$1"; failures=$((failures + 1)); }

rm -rf "$out"
mkdir -p "$out"
man3=$out/man/man3

if "$py" "$gen" --strict --out "$out/man" "$src/include" >"$out/gen.log" 2>&1; then
  pass "$(tail -n1 "$out/gen.log")"
else
  fail "gen_man.py --strict:"; sed 's/^/        /' "$out/gen.log"
  echo "man check: $failures failed"; exit 1
fi

"$py" "$gen" --list "$src/include" | sort >"$out/functions"
nfun=$(wc -l <"$out/functions")
missing=$(while read -r fn page; do [[ -s "$man3/$fn.3" ]] || echo "$fn"; done <"$out/functions")
if [[ -z "$missing" ]]; then pass "a page for each of the $nfun public functions"
else fail "no page for: $(echo $missing)"; fi

if [[ -n "$lib" && -e "$lib" ]]; then
  for l in "$lib" ${mpilib:+"$mpilib"}; do
    "$nm" -D --defined-only "$l" | awk '$2 == "T" {print $3}' | sed 's/@.*//'
  done | grep '^coexec_' | grep -v '^coexec__' | sort -u >"$out/exported"
  cut -d' ' -f1 "$out/functions" | { [[ -n "$mpilib" ]] && cat || grep -v '^coexec_mpi_'; } |
    sort -u >"$out/documented"
  undocumented=$(comm -23 "$out/exported" "$out/documented")
  unexported=$(comm -13 "$out/exported" "$out/documented")
  if [[ -z "$undocumented" ]]; then pass "every one of the $(wc -l <"$out/exported") functions libcoexec.so exports has a page"
  else fail "exported by libcoexec.so but not in a header's comment blocks: $(echo $undocumented)"; fi
  if [[ -z "$unexported" ]]; then pass "every documented function is exported by libcoexec.so"
  else fail "documented but not exported by libcoexec.so: $(echo $unexported)"; fi
else
  echo "  skip  the exports of libcoexec.so (not built here)"
fi

if command -v groff >/dev/null 2>&1; then
  bad=0
  for page in "$man3"/*.3; do
    if grep -q '^\.so ' "$page"; then
      target=$(sed -n 's/^\.so //p' "$page")
      [[ -s "$out/man/$target" ]] || { fail "$(basename "$page"): .so target $target missing"; bad=1; }
      continue
    fi
    warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
    [[ -z "$warn" ]] || { fail "groff warns on $(basename "$page"): $warn"; bad=1; }
  done
  [[ $bad -eq 0 ]] && pass "groff renders all $(ls "$man3" | wc -l) pages (links resolved) with no warning"
else
  echo "  skip  groff is not installed"
fi

if command -v man >/dev/null 2>&1; then
  text=$(MANPAGER=cat MANWIDTH=80 man -M "$out/man" coexec_thread_create 2>&1)
  if grep -q '^COEXEC_THREAD(3)' <<<"$text" && grep -q 'coexec_thread_create(' <<<"$text" &&
     grep -q '^CONTEXT' <<<"$text" && grep -q '^RETURN VALUE' <<<"$text"; then
    pass "man -M $out/man coexec_thread_create shows coexec_thread(3)"
  else
    fail "man -M $out/man coexec_thread_create:"; printf '%s\n' "$text" | head -20 | sed 's/^/        /'
  fi
else
  echo "  skip  man is not installed"
fi

# An undocumented public function: a declaration after a blank line, with
# no comment block of its own.
fix=$out/undocumented
mkdir -p "$fix"
cp -r "$src/include" "$fix/"
sed -i 's/^COEXEC_END_DECLS$/\nCOEXEC_API int coexec_undocumented_call(int x);\n\nCOEXEC_END_DECLS/' \
  "$fix/include/coexec/waker.h"
if "$py" "$gen" --out "$fix/man" "$fix/include" >"$fix/log" 2>&1; then
  fail "gen_man.py accepted an undocumented public function"
elif grep -q 'waker.h:[0-9]*: public function with no comment block: .*coexec_undocumented_call' "$fix/log"; then
  pass "an undocumented public function fails the generation: $(grep -m1 coexec_undocumented_call "$fix/log")"
else
  fail "gen_man.py failed without naming the undocumented function:"; sed 's/^/        /' "$fix/log"
fi

echo
if [[ $failures -eq 0 ]]; then echo "man check: all passed"; else echo "man check: $failures failed"; exit 1; fi
