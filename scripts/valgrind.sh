#!/usr/bin/env bash
# scripts/valgrind.sh: run a program under valgrind's memcheck the way the
# valgrind test stage does.
#
# usage: scripts/valgrind.sh PROGRAM [ARG...]
#
# Exits 1 when memcheck reports any error (invalid accesses, uses of
# undefined values, bad frees, definite leaks), else with the program's
# own status. The options: --error-exitcode=1; --leak-check=full with
# only definite leaks counted as errors (blocks still reachable at exit,
# and blocks an abandoned service call's thread may still hold, are not);
# the suppressions of tests/valgrind/memcheck.supp (each states why it is
# valgrind's limitation, not the program's error); --fair-sched=yes
# (valgrind runs one thread at a time; without it a spinning thread may
# keep the others waiting for many time slices); --child-silent-after-fork
# (a forked child that does not exec is not checked: the tests fork only
# to let a child die on a guard page). COEXEC_VALGRIND_OPTS adds options
# (e.g. --track-origins=yes).
#
# The library must have been built with valgrind/valgrind.h present
# (CMake says so when configuring): it registers its stacks with valgrind
# through it. Under valgrind the service stream never uses io_uring.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -eq 0 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  [[ $# -eq 0 ]] && exit 2 || exit 0
fi
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind.sh: valgrind is not installed (Debian package valgrind;" \
       "scripts/deps.sh test installs it)" >&2
  exit 1
fi
# shellcheck disable=SC2086
exec valgrind --tool=memcheck --error-exitcode=1 \
  --leak-check=full --errors-for-leak-kinds=definite \
  --show-leak-kinds=definite --num-callers=40 --fair-sched=yes \
  --child-silent-after-fork=yes \
  --suppressions="$root/tests/valgrind/memcheck.supp" \
  ${COEXEC_VALGRIND_OPTS:-} "$@"
