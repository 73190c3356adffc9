#!/usr/bin/env bash
# Installs the build into a temporary prefix (cmake --install) and runs `terasim compare` from
# there with the source tree out of reach: TERASIM_DATA_DIR unset and TERASIM_NO_SOURCE_DATA=1,
# so the only data the binary can find is PREFIX/share/terasim. Then moves that folder away and
# checks that the binary says so.
#   install_test.sh CMAKE_COMMAND BUILD_DIR
set -euo pipefail
cmake_command=$1
build=$2
prefix=$(mktemp -d "${TMPDIR:-/tmp}/terasim_install_test.XXXXXX")
trap 'rm -rf "$prefix"' EXIT

"$cmake_command" --install "$build" --prefix "$prefix" >"$prefix/install.log"
for f in bin/terasim share/terasim/models/data/gpt3-1b.json \
  share/terasim/models/data/devices/v100-sxm2-16gb.json \
  share/terasim/topologies/data/p3.16xlarge.json share/terasim/sim/data/collectives.json \
  share/terasim/tools/data/paper_settings.json share/doc/terasim/README.md \
  share/doc/terasim/docs/architecture.md share/doc/terasim/traces/README.md; do
  [[ -e $prefix/$f ]] || { echo "install_test: $f was not installed" >&2; exit 1; }
done

cd "$prefix"
run() { env -u TERASIM_DATA_DIR TERASIM_NO_SOURCE_DATA=1 "$prefix/bin/terasim" "$@"; }
run compare --model gpt3-1b --cluster p3.16xlarge:2 --max-evaluations 1 \
  --db "$prefix/t.db" --out "$prefix/out" >"$prefix/compare.txt"
cat "$prefix/compare.txt"
grep -q '^gpt3-1b on p3.16xlarge:2' "$prefix/compare.txt"
[[ -s $prefix/out/compare.svg ]] || { echo "install_test: no compare.svg" >&2; exit 1; }

# Without its share/terasim the installed binary finds nothing, and names where it looked.
mv "$prefix/share/terasim" "$prefix/share/terasim.away"
if run models >"$prefix/models.txt" 2>&1; then
  echo "install_test: terasim models found data it should not reach" >&2
  exit 1
fi
grep -q "$prefix/share/terasim (beside the binary: not there)" "$prefix/models.txt" || {
  cat "$prefix/models.txt" >&2
  exit 1
}
echo "install_test: ok"
