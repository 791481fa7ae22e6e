#!/usr/bin/env bash
# tests/docs/check_html.sh: builds the HTML reference from the configured
# Doxyfile into OUT (not the build's own docs/html) and fails on any
# Doxygen warning (the Doxyfile sets WARN_AS_ERROR = FAIL_ON_WARNINGS;
# this also fails when a warning is printed all the same).
#
# usage: tests/docs/check_html.sh DOXYGEN DOXYFILE OUT
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 DOXYGEN DOXYFILE OUT" >&2; exit 2; }
doxygen=$1 doxyfile=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
log=$out/doxygen.log
if ! { cat "$doxyfile"; echo "OUTPUT_DIRECTORY = $out"; } | "$doxygen" - >"$log" 2>&1; then
  cat "$log"
  echo "FAIL: doxygen exited non-zero"
  exit 1
fi
if grep -q . "$log"; then
  cat "$log"
  echo "FAIL: doxygen printed warnings"
  exit 1
fi
pages=$(find "$out/html" -name '*.html' | wc -l)
for f in index.html files.html sync_8h.html; do
  [[ -s "$out/html/$f" ]] || { echo "FAIL: html/$f missing"; exit 1; }
done
grep -q 'coexec_mutex_lock' "$out/html/sync_8h.html" || { echo "FAIL: sync_8h.html lacks coexec_mutex_lock"; exit 1; }
echo "ok: $pages HTML pages, no warning"
