#!/usr/bin/env bash
# `terasim check` of a million-op schedule (issue #12 target: under 1 s and under 200 MB).
# Writes the schedule once with `terasim schedule` (gpt3-175b TeraPipe dp1 pp48 tp8, 16 slices
# per sequence, batch 8: 979 k ops, 157 MB of text), then runs `terasim check` on it REPEATS
# times (default 3) under GNU time: wall time, user + system CPU time and peak RSS of each run.
# A benchmark, not a test.
#   tools/bench/check_bench.sh [path/to/terasim] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/release/tools/terasim}
repeats=${2:-3}
pir=$(mktemp --suffix=.pir)
log=$(mktemp)
trap 'rm -f "$pir" "$log"' EXIT
"$bin" schedule --model gpt3-175b --strategy terapipe --pp 48 --tp 8 --batch 8 --slices 16 \
  -o "$pir" >/dev/null
echo "schedule: $(grep -c '^op ' "$pir") ops, $(($(stat -c %s "$pir") >> 20)) MB of text"
for _ in $(seq "$repeats"); do
  /usr/bin/time -f '%e %U %S %M' -o "$log" "$bin" check "$pir" >/dev/null
  read -r wall user sys rss <"$log"
  echo "check: wall ${wall} s, cpu $(echo "$user + $sys" | bc) s, peak rss $((rss / 1024)) MB"
done
