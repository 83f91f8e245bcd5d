#!/usr/bin/env bash
# Builds the Debug + AddressSanitizer/UndefinedBehaviorSanitizer configuration (CMakePresets.json,
# preset "sanitize", into build-sanitize/) and runs the unit and MPI tests under it.
#   tools/sanitize.sh                # unit and MPI tests
#   tools/sanitize.sh -R taylor      # extra arguments go to ctest
# LibTorch, MPICH and HDF5 are not instrumented; ASan still checks every access Tessera's own
# code makes. Leak checking is off: MPICH and LibTorch keep process-lifetime allocations.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/make_data.sh
start=$(date +%s)
if [ ! -f build-sanitize/CMakeCache.txt ]; then
  cmake --preset sanitize >/dev/null
fi
cmake --build build-sanitize -j "$(nproc)"
built=$(date +%s)
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_odr_violation=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
status=0
(cd build-sanitize && ctest --output-on-failure -L 'unit|mpi' "$@") || status=$?
end=$(date +%s)
echo "tools/sanitize.sh: build $((built - start)) s, tests $((end - built)) s"
exit $status
