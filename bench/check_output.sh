#!/usr/bin/env bash
# bench/check_output.sh BENCH SOURCE_DIR WORK_DIR: the ctest bench_output.
# Runs one fast benchmark (ctx_switch, 1 rep) with --json FILE and with
# --json -, and checks that every text line is at most 100 columns, the
# `name value unit` line is there, the JSON parses and has the header
# fields, every repository document the output names exists, and every
# benchmark of --list is listed in docs/BENCHMARKS.md.
set -uo pipefail

bench=$1 src=$2 work=$3
out=$work/bench_output
mkdir -p "$out"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$bench" --reps 1 ctx_switch --json "$out/run.json" >"$out/stdout" \
  2>"$out/stderr" || fail "coexec-bench --json FILE exited with $?"
"$bench" --reps 1 ctx_switch --json - >"$out/stdout.json" \
  2>"$out/stderr2" || fail "coexec-bench --json - exited with $?"
"$bench" --list >"$out/list" || fail "coexec-bench --list exited with $?"

# Text lines: at most 100 columns.
for f in stdout stderr stderr2 list; do
  awk -v f="$f" 'length($0) > 100 {
      printf "FAIL: %s line %d has %d columns: %s\n", f, NR, length($0), $0
      bad = 1 } END { exit bad }' "$out/$f" || failures=$((failures + 1))
done

# The result lines tools parse.
grep -Eq '^ctx_switch [0-9]+(\.[0-9]+)? ns/switch$' "$out/stdout" ||
  fail "no 'ctx_switch VALUE ns/switch' line on stdout"
grep -Eq '^ctx_switch [0-9]+(\.[0-9]+)? ns/switch$' "$out/stderr2" ||
  fail "with --json -, no 'ctx_switch VALUE ns/switch' line on stderr"
grep -q '^# summary' "$out/stderr" || fail "no summary on stderr"

# The JSON: it parses and has the header fields.
fields="suite library_version date cpu_model kernel compiler build_type
git_commit cpus_online cpus_allowed reps warmups results comparisons"
for j in run.json stdout.json; do
  if command -v python3 >/dev/null; then
    python3 - "$out/$j" $fields <<'PY' || fail "$j: see above"
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
missing = [k for k in sys.argv[2:] if k not in d]
if missing:
    sys.exit("missing fields: " + " ".join(missing))
names = [r["name"] for r in d["results"]]
if "ctx_switch" not in names:
    sys.exit("no ctx_switch result")
PY
  else
    for k in $fields; do
      grep -q "\"$k\":" "$out/$j" || fail "$j: no field $k"
    done
  fi
done

# Every repository document the output names exists.
for doc in $(cat "$out/stdout" "$out/stderr" "$out/list" |
             grep -Eo 'docs/[A-Za-z0-9_./-]+\.md' | sort -u); do
  [[ -f "$src/$doc" ]] || fail "the output names $doc, not in $src"
done

# docs/BENCHMARKS.md lists every benchmark.
while read -r name _; do
  grep -q "\`$name\`" "$src/docs/BENCHMARKS.md" ||
    fail "docs/BENCHMARKS.md does not list $name"
done < <(grep -v '^ ' "$out/list")

if ((failures)); then
  echo "bench_output: $failures failure(s); output in $out"
  exit 1
fi
echo "bench_output: ok"
