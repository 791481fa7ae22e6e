#!/usr/bin/env bash
# scripts/test.sh: build libcoexec from scratch and run every test stage.
#
# usage: scripts/test.sh [--keep] [--no-deps] [STAGE...]
#
# Stages (all but cross by default, in this order):
#   default   Debug build (COEXEC_CHECKS on), ctest
#   docs      the manual pages and the HTML reference (Doxygen, warnings
#             as errors), and their ctest entries (label docs)
#   asan      ASan + UBSan build, ctest
#   tsan      TSan build, ctest
#   valgrind  Debug build; the tests labelled memcheck (the unit suites
#             but tests/arch/'s, and the examples) under valgrind's
#             memcheck (scripts/valgrind.sh): any error fails the stage
#   ucontext  Debug build with the ucontext context switch, ctest
#   ao        Debug build with the libatomic_ops atomics, without liburing
#             (the service stream's thread-only file I/O), without the
#             tool events (-DCOEXEC_TOOLS=OFF) and without libcoexec-mpi
#             (-DCOEXEC_MPI=OFF), ctest
# The other ctest stages run libcoexec-mpi's tests under mpiexec (label
# mpi) when CMake found an MPI (scripts/deps.sh installs Open MPI).
#   cross     AArch64 context switch under qemu (tests/arch/cross-aarch64.sh);
#             only when named, or with COEXEC_CROSS=1 (it installs the
#             AArch64 cross toolchain and qemu-user: several hundred MB)
#   install   Release build, install into a temporary prefix, build and run
#             a consumer four ways, find the manual pages with man
#             (tests/install/check.sh)
# Before them, scripts/deps.sh installs the missing packages of the groups
# the chosen stages need (--no-deps skips it). Each build directory is
# build/<preset>, removed first unless --keep is given. Logs go to
# build/test-logs/<stage>.log.
#
# Environment:
#   COEXEC_JOBS         parallel compile jobs (default: number of CPUs)
#   COEXEC_CROSS=1      add the cross stage to the default list (CI does)
#   COEXEC_CTEST_JOBS   parallel tests for every stage (default: per stage)
#   COEXEC_TEST_BUDGET  seconds for the whole run (default 5100); a stage
#                       gets at most what is left, minus a reserve for the
#                       stages after it, and is stopped when it runs over
#
# Prints a summary table, then one line "N passed, M failed" counting the
# stages; exits non-zero if any stage failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
self="$root/scripts/test.sh"
jobs=${COEXEC_JOBS:-$(nproc 2>/dev/null || echo 2)}

# Tests that oversubscribe the cores are slowed down badly under the
# sanitizers, so those stages run one test at a time.
# Valgrind runs one thread of a process at a time: two at once use both cores.
declare -A ctest_jobs=([default]=2 [docs]=2 [asan]=1 [tsan]=1 [valgrind]=2 [ucontext]=2 [ao]=2)
# Longest a stage may take, seconds, and what is kept back for each later stage.
declare -A cap=([deps]=900 [default]=1200 [docs]=600 [asan]=1500 [tsan]=1800
                [valgrind]=1500 [ucontext]=1200 [ao]=1200 [cross]=600 [install]=900)
reserve=180
# Extra configure arguments per stage: the ao stage also builds without
# liburing, without the tool events and without libcoexec-mpi, so the
# builds that lack them are tested too.
declare -A cfg_args=([ao]="-DCOEXEC_WITH_LIBURING=OFF -DCOEXEC_TOOLS=OFF -DCOEXEC_MPI=OFF")
all_stages=(default docs asan tsan valgrind ucontext ao install)
if [[ "${COEXEC_CROSS:-0}" == 1 ]]; then
  all_stages=(default docs asan tsan valgrind ucontext ao cross install)
fi
# The scripts/deps.sh group each stage needs.
declare -A deps_group=([default]=build [docs]=docs [asan]=build [tsan]=build [valgrind]=test
                       [ucontext]=build [ao]=build [cross]=cross [install]=build)

# ---- one stage, run in a child process (so that it can be timed out) -------
ctest_stage() {
  local p=$1
  [[ -n "${COEXEC_KEEP:-}" ]] || rm -rf "build/$p"
  # shellcheck disable=SC2086
  cmake --preset "$p" ${cfg_args[$p]:-} || return 1
  cmake --build --preset "$p" -j "$jobs" || return 1
  ctest --preset "$p" -j "${COEXEC_CTEST_JOBS:-${ctest_jobs[$p]:-1}}"
}

run_stage() {
  case "$1" in
    deps) exec "$root/scripts/deps.sh" ${COEXEC_DEPS_GROUPS:-build} ;;
    default|asan|tsan|ucontext|ao) ctest_stage "$1" ;;
    docs)
      if ! command -v doxygen >/dev/null 2>&1 && [[ -z "${COEXEC_TEST_NO_DEPS:-}" ]]; then
        "$root/scripts/deps.sh" docs || exit 1
      fi
      if ! command -v doxygen >/dev/null 2>&1; then
        echo "error: doxygen is not installed (scripts/deps.sh docs installs it)"
        exit 1
      fi
      ctest_stage docs ;;
    valgrind)
      if ! command -v valgrind >/dev/null 2>&1; then
        echo "error: valgrind is not installed (scripts/deps.sh test installs it)"
        exit 1
      fi
      ctest_stage valgrind ;;
    cross)
      if [[ -f tests/arch/cross-aarch64.sh ]]; then
        exec bash tests/arch/cross-aarch64.sh
      fi
      echo "error: tests/arch/cross-aarch64.sh is missing"
      exit 1 ;;
    install)
      [[ -n "${COEXEC_KEEP:-}" ]] || rm -rf build/release
      cmake --preset release || return 1
      cmake --build --preset release -j "$jobs" || return 1
      exec bash tests/install/check.sh build/release ;;
    *) echo "unknown stage $1"; return 2 ;;
  esac
}

if [[ "${1:-}" == __stage ]]; then
  run_stage "$2"
  exit $?
fi

# ---- driver ------------------------------------------------------------------
deps=1
stages=()
for a in "$@"; do
  case "$a" in
    --keep) export COEXEC_KEEP=1 ;;
    --no-deps) deps=0; export COEXEC_TEST_NO_DEPS=1 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$self" | sed 's/^# \{0,1\}//'; exit 0 ;;
    default|docs|asan|tsan|valgrind|ucontext|ao|cross|install) stages+=("$a") ;;
    *) echo "test.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
if [[ ${#stages[@]} -eq 0 ]]; then
  stages=("${all_stages[@]}")
  [[ " ${stages[*]} " == *" cross "* ]] ||
    echo "test.sh: the cross stage is left out (it installs a cross toolchain): COEXEC_CROSS=1 or 'scripts/test.sh cross' runs it"
fi
groups=()
for s in "${stages[@]}"; do
  [[ " ${groups[*]} " == *" ${deps_group[$s]} "* ]] || groups+=("${deps_group[$s]}")
done
export COEXEC_DEPS_GROUPS="${groups[*]}"
[[ $deps -eq 1 ]] && stages=(deps "${stages[@]}")

budget=${COEXEC_TEST_BUDGET:-5100}
logdir="$root/build/test-logs"
mkdir -p "$logdir"
start=$SECONDS
declare -A result=() took=()
npass=0 nfail=0 nskip=0

stage_pid= interrupted=
on_signal() {
  interrupted=1
  [[ -n "$stage_pid" ]] && kill -TERM "$stage_pid" 2>/dev/null
}
trap on_signal INT TERM

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

for ((i = 0; i < ${#stages[@]}; i++)); do
  s=${stages[$i]}
  later=$(( ${#stages[@]} - i - 1 ))
  left=$(( budget - (SECONDS - start) - later * reserve ))
  limit=${cap[$s]}
  (( left < limit )) && limit=$left
  printf '\n======== stage %s (time limit %s) ========\n' "$s" "$(fmt_time $(( limit > 0 ? limit : 0 )))"
  t0=$SECONDS
  if (( limit < 60 )); then
    echo "no time left in the budget of ${budget}s"
    rc=124
  else
    # timeout runs the stage in its own process group (so that a time-out
    # kills every test process); the trap passes Ctrl-C and TERM on to it.
    exec {logfd}> >(tee "$logdir/$s.log")
    tee_pid=$!
    timeout -k 30 "$limit" "$self" __stage "$s" >&"$logfd" 2>&1 &
    stage_pid=$!
    wait "$stage_pid"
    rc=$?
    while [[ -n "$interrupted" ]] && kill -0 "$stage_pid" 2>/dev/null; do
      wait "$stage_pid"
      rc=$?
    done
    stage_pid=
    exec {logfd}>&-
    wait "$tee_pid" 2>/dev/null
  fi
  if [[ -n "$interrupted" ]]; then
    echo "interrupted"
    exit 130
  fi
  took[$s]=$(( SECONDS - t0 ))
  case $rc in
    0)   result[$s]=passed; npass=$((npass + 1)) ;;
    77)  result[$s]=skipped; nskip=$((nskip + 1)) ;;
    124|137) result[$s]="FAILED (timed out)"; nfail=$((nfail + 1)) ;;
    *)   result[$s]="FAILED (exit $rc)"; nfail=$((nfail + 1)) ;;
  esac
  echo "---- stage $s: ${result[$s]} in $(fmt_time ${took[$s]})"
done

echo
echo "======== summary ========"
printf '%-10s %-20s %s\n' stage result time
for s in "${stages[@]}"; do
  printf '%-10s %-20s %s\n' "$s" "${result[$s]}" "$(fmt_time ${took[$s]})"
done
printf '%-10s %-20s %s\n' total "" "$(fmt_time $(( SECONDS - start )))"
for s in "${stages[@]}"; do
  [[ "${result[$s]}" == FAILED* ]] || continue
  failed_tests=$(sed -n '/^The following tests FAILED:/,$p' "$logdir/$s.log" \
                 | grep -E '^[[:space:]]+[0-9]+ - ' | sed 's/^[[:space:]]*[0-9]* - //')
  [[ -n "$failed_tests" ]] && printf '%s failed tests: %s\n' "$s" "$(echo $failed_tests)"
done
echo "logs: build/test-logs/"
echo
if (( nskip > 0 )); then
  echo "$npass passed, $nfail failed, $nskip skipped"
else
  echo "$npass passed, $nfail failed"
fi
(( nfail == 0 ))
