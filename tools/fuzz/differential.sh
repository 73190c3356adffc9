#!/usr/bin/env bash
# The differential fuzz harness's long run (tests/fuzz/differential.h): N mutated generator
# schedules (default 10000), each either refused by the checker or run to the end by both the
# simulator and the executor (cpu back end, in-process transport).
#
#   tools/fuzz/differential.sh [N] [SEED] [BUILD_DIR]
#
# Builds the terasim_differential target in BUILD_DIR (default build/release, configured with
# `cmake --preset release` when missing), writes failing schedules to BUILD_DIR/fuzz-failures/
# and prints "seed S cases N accepted A rejected R unmutated U failures F". Exits 1 on any
# failure.
set -euo pipefail
cases="${1:-10000}"
seed="${2:-1}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${3:-$root/build/release}"
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" --target terasim_differential -j "${JOBS:-2}"
exec "$build/tests/fuzz/terasim_differential" --cases "$cases" --seed "$seed" \
  --failures "$build/fuzz-failures" --progress
