#!/usr/bin/env bash
# Sets up the machine, builds Tessera and runs the default case on 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/make_data.sh
tools/build.sh >/dev/null
case_file=${1:-cases/poisson2d_xpinn.json}
# One intra-op thread per rank: oversubscribed threads slow every rank down (docs/benchmarks.md,
# "One intra-op thread per rank").
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
  mpiexec.mpich -n 4 "${BUILD_DIR:-build}/tessera" run "$case_file"
