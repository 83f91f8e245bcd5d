#!/usr/bin/env bash
# Configures and builds Tessera into build/ (Release, Ninja, ccache when present, warnings as
# errors: TESSERA_WERROR=OFF in the environment turns that off for a local experiment).
# Used by tools/test.sh and tools/demo.sh; BUILD_DIR overrides the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTESSERA_WERROR="${TESSERA_WERROR:-ON}" >/dev/null
fi
cmake --build "$build_dir" -j "$(nproc)"
