#!/usr/bin/env bash
# scripts/bench.sh: build libcoexec in Release (preset "release") and run the
# benchmark suite. Arguments go to coexec-bench unchanged, e.g.
#   scripts/bench.sh --json          scripts/bench.sh --help
# Set COEXEC_NO_DEPS=1 to skip the package check.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[[ -n "${COEXEC_NO_DEPS:-}" ]] || scripts/deps.sh build >&2

jobs=${COEXEC_JOBS:-$(nproc 2>/dev/null || echo 2)}
# Build output goes to stderr so that stdout carries only the results
# (e.g. JSON with --json).
{
  if [[ ! -f build/release/CMakeCache.txt ]]; then
    cmake --preset release
  fi
  cmake --build --preset release -j "$jobs" --target coexec-bench
} >&2

exec build/release/bench/coexec-bench "$@"
