#!/usr/bin/env bash
# Sets up the machine, builds Tessera and runs the whole test suite with CTest.
#   tools/test.sh                 # everything
#   tools/test.sh -L unit         # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/make_data.sh
tools/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure "$@"
