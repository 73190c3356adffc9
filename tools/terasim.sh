#!/usr/bin/env bash
# terasim's one setup / build / test script.
#   tools/terasim.sh run   install what is missing, build (release), run the main job
#                          (terasim compare with its defaults; extra words go to it)
#   tools/terasim.sh test  install what is missing, build (debug: ASan + UBSan), run every test
#                          and the formatting check; exits non-zero on any failure
#   tools/terasim.sh package build (release) and the Debian package
#                          build/release/terasim_VERSION_ARCH.deb (`apt install ./...deb`)
#   tools/terasim.sh format  reformat every C++ source in place
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ pkg-config ccache libboost-graph-dev libboost-program-options-dev
          libsqlite3-dev sqlite3 catch2 nlohmann-json3-dev libfmt-dev libopenblas-dev
          libopenmpi-dev openmpi-bin clang-format)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "terasim: installing ${missing[*]}" >&2
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
}

build() {
  local preset=$1
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)"
}

check_format() {
  local files
  mapfile -t files < <(git ls-files -co --exclude-standard -- '*.h' '*.cpp' '*.cu' '*.cuh')
  if ((${#files[@]})); then
    clang-format --dry-run --Werror "${files[@]}"
  fi
  echo "terasim: formatting ok (${#files[@]} files)"
}

case "${1:-}" in
  run)
    install_missing
    build release
    shift
    ./build/release/tools/terasim compare "$@"
    ;;
  test)
    install_missing
    build debug
    check_format
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    ctest --preset debug -j "$(nproc)"
    ;;
  package)
    install_missing
    cmake --preset release >/dev/null
    cmake --build --preset release -j "$(nproc)" --target terasim
    (cd build/release && cpack -G DEB)
    ;;
  format)
    git ls-files -co --exclude-standard -- '*.h' '*.cpp' '*.cu' '*.cuh' | xargs -r clang-format -i
    ;;
  *)
    echo "usage: tools/terasim.sh run|test|package|format" >&2
    exit 2
    ;;
esac
