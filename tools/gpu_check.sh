#!/usr/bin/env bash
# The one prepared script for the GPU machine (one H200, CUDA 13 and cuBLAS, no Boost / SQLite /
# OpenBLAS / MPI development files, no NCCL outside Python packages; see FACTS.md).
#
#   tools/gpu_check.sh build          here: configure and build build/gpu/ (Release,
#                                     TERASIM_STATIC: Boost.Program_options, SQLite and OpenBLAS
#                                     linked statically, cuBLAS / CUDA runtime dynamically, no
#                                     NCCL, no MPI): terasim, test_exec_cuda, terasim_gpu_bench,
#                                     stripped into build/gpu/bin/ with libfmt.so.9 (Debian has
#                                     no static fmt) -- the one folder to carry (about 60 MB)
#   tools/gpu_check.sh run OUTDIR     there: run the [gpu] tests, the GPU benchmark and a
#                                     cuda-vs-cpu `terasim exec`; results under OUTDIR
#
# `run` uses build/gpu/bin/ as carried over; when its binaries are missing it tries to build them
# in place first (which needs the development files the GPU machine usually lacks).
# GPU_BUILD_DIR overrides build/gpu (e.g. to check `build` without touching build/).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GPU_BUILD_DIR:-build/gpu}
TARGETS=(terasim test_exec_cuda terasim_gpu_bench)

build() {
  local jobs
  jobs=$(nproc)
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTERASIM_STATIC=ON \
    -DBoost_USE_STATIC_LIBS=ON -DTERASIM_WITH_MPI=OFF -DBUILD_TESTING=ON \
    -DCMAKE_CUDA_ARCHITECTURES="80;90" >/dev/null
  cmake --build "$BUILD_DIR" -j "$jobs" --target "${TARGETS[@]}"
  local bin=$BUILD_DIR/bin
  mkdir -p "$bin"
  strip -o "$bin/terasim" "$BUILD_DIR/tools/terasim"
  strip -o "$bin/test_exec_cuda" "$BUILD_DIR/tests/exec/test_exec_cuda"
  strip -o "$bin/terasim_gpu_bench" "$BUILD_DIR/tools/terasim_gpu_bench"
  local fmt_lib
  fmt_lib=$(ldd "$BUILD_DIR/tools/terasim" | awk '/libfmt/ {print $3}')
  [[ -n $fmt_lib ]] && cp -L "$fmt_lib" "$bin/"
  echo "gpu_check: built ${TARGETS[*]} into $bin ($(du -sh "$bin" | cut -f1));" \
    "dynamic libraries of terasim:"
  ldd "$bin/terasim" | awk '{print "  " $1}'
}

run() {
  local out=${1:?usage: tools/gpu_check.sh run OUTDIR}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  # Data files (model cards) come from this checkout, wherever it lies on this machine.
  export TERASIM_DATA_DIR=$PWD
  local bin=$BUILD_DIR/bin
  export LD_LIBRARY_PATH=$PWD/$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if [[ ! -x $bin/terasim || ! -x $bin/test_exec_cuda ]]; then
    echo "gpu_check: no carried-over binaries in $BUILD_DIR; building here" | tee "$out/build.txt"
    build >>"$out/build.txt" 2>&1 || { echo "gpu_check: build failed (see build.txt)"; exit 1; }
  fi
  local status=0
  { nvidia-smi || true; } >"$out/nvidia-smi.txt" 2>&1
  ldd "$bin/terasim" >"$out/ldd.txt" 2>&1 || true

  echo "gpu_check: tests"
  "$bin/test_exec_cuda" --success --durations yes >"$out/tests.txt" 2>&1 ||
    status=1
  tail -3 "$out/tests.txt"
  if grep -q "GPU test skipped" "$out/tests.txt"; then
    echo "gpu_check: the [gpu] tests were skipped: no usable GPU" | tee -a "$out/tests.txt"
    status=1
  fi

  echo "gpu_check: benchmark"
  for shape in "2048 16 1024" "2048 16 128" "5120 40 512"; do
    read -r hidden heads tokens <<<"$shape"
    "$bin/terasim_gpu_bench" --hidden "$hidden" --heads "$heads" \
      --tokens "$tokens" --json >"$out/bench_h${hidden}_t${tokens}.json" 2>&1 || status=1
  done
  cat "$out"/bench_*.json

  echo "gpu_check: terasim exec, cuda against cpu"
  local pir=$out/tiny_terapipe.pir
  "$bin/terasim" schedule --model tiny-lm --strategy terapipe --dp 2 --pp 2 --tp 2 \
    --slices 4 \
    --output "$pir" >"$out/schedule.txt" 2>&1 || status=1
  for backend in cpu cuda; do
    "$bin/terasim" exec "$pir" --backend "$backend" --iterations 2 --json \
      --trace "$out/exec_$backend.trace.json" >"$out/exec_$backend.json" 2>&1 || status=1
  done
  cat "$out/exec_cpu.json" "$out/exec_cuda.json"
  echo "gpu_check: done (status $status); results in $out"
  return "$status"
}

case "${1:-}" in
  build) build ;;
  run)
    shift
    run "$@"
    ;;
  *)
    echo "usage: tools/gpu_check.sh build | run OUTDIR" >&2
    exit 2
    ;;
esac
