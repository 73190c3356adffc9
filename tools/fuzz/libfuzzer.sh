#!/usr/bin/env bash
# libFuzzer on terasim's readers: the .pir reader (with the checker and the writer's round trip)
# and the JSON loaders of model cards, device specs, instance specs and calibration tables
# (tests/fuzz/libfuzzer/). Needs clang with its libFuzzer runtime (Debian: apt-get install
# clang libclang-rt-14-dev); the default build does not.
#
#   tools/fuzz/libfuzzer.sh [SECONDS_EACH] [TARGET...]
#
# Configures build/fuzz with clang, AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's
# coverage, builds the targets and runs each for SECONDS_EACH (default 60), one after another,
# on a corpus seeded from tests/golden (the .pir targets) or the data files (the JSON ones).
# Crashes land in build/fuzz/crashes/TARGET/. Exits non-zero when a target crashed.
set -euo pipefail
seconds="${1:-60}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(pir model_card device_spec instance_spec calibration_table)
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build/fuzz"
command -v clang++ >/dev/null || { echo "libfuzzer.sh: clang++ not found" >&2; exit 2; }
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTERASIM_FUZZ=ON -DTERASIM_WITH_MPI=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
fi
cmake --build "$build" -j "${JOBS:-2}" --target "${targets[@]/#/fuzz_}"

seed_corpus() {  # TARGET DIR
  case "$1" in
    pir) find "$root/tests/golden" -name '*.pir' -exec cp {} "$2" \; ;;
    model_card) cp "$root"/models/data/*.json "$2" ;;
    device_spec) cp "$root"/models/data/devices/*.json "$2" ;;
    instance_spec) cp "$root"/topologies/data/*.json "$2" ;;
    calibration_table) cp "$root"/traces/data/*.calib.json "$root"/tests/models/data/calibration_small.json "$2" ;;
  esac
}

status=0
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  [[ -n "$(ls -A "$corpus")" ]] || seed_corpus "$t" "$corpus"
  echo "== fuzz_$t for ${seconds} s"
  if ! ASAN_OPTIONS=detect_leaks=0 "$build/tests/fuzz/fuzz_$t" "$corpus" \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
      -artifact_prefix="$crashes/" -print_final_stats=1 2>"$build/fuzz_$t.log"; then
    status=1
    echo "fuzz_$t: crashed (see $build/fuzz_$t.log and $crashes)"
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz_$t.log" || true
done
exit $status
