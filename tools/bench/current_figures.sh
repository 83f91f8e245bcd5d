#!/usr/bin/env bash
# The CPU rows of docs/benchmarks.md's "Current figures", measured in one invocation at one
# commit, one after another on an otherwise idle machine:
#
#   tools/bench/current_figures.sh [BUILD_DIR] [OUT_DIR]   # defaults: build, results/current_figures
#
# Each benchmark's output goes to OUT_DIR/<name>.log; OUT_DIR/summary.log gets the commit, the
# machine, and each benchmark's exit status and wall time.
# Needs mpiexec.mpich on PATH and /usr/bin/python3 with torch, numpy and h5py. Every run writes
# into a fresh folder or with --overwrite, so the script can be run again over its own outputs.
set -u
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
out=${2:-results/current_figures}
mkdir -p "$out"
python=/usr/bin/python3
summary=$out/summary.log
{
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (modified)')"
  echo "machine $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "started $(date -u +%FT%TZ)"
} >"$summary"
export TESSERA_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

bench() {  # bench NAME SECONDS COMMAND...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "$name: exit $?, $((SECONDS - start)) s" | tee -a "$summary"
}

bench iteration_speed 900 "$python" tools/bench/iteration_speed.py --tessera "$build/tessera" \
  --iterations 400 --log-every 100 --repeats 3
bench time_to_accuracy 900 "$python" tools/bench/time_to_accuracy.py --tessera "$build/tessera" \
  --skip published
bench data_parallel 900 "$python" tools/bench/data_parallel.py --tessera "$build/tessera" \
  --iterations 500
bench cpu_per_iteration 900 "$python" tools/bench/cpu_per_iteration.py --rounds 10 --short 100 \
  --long 600 "now=$build/tessera"
bench scaling 900 "$python" tools/bench/scaling.py --tessera "$build/tessera"
bench fbpinn_ranks 900 "$python" tools/bench/fbpinn_ranks.py --tessera "$build/tessera"
bench batched_subdomains 300 "$build/bench_batched_subdomains" 8192 8 0.5 60
bench network_node 300 "$build/bench_network_node" 4096 60
bench product_kernel 300 "$build/bench_product_kernel"
bench finish_speed 900 "$python" tools/bench/finish_speed.py --case cases/validation/burgers.json \
  --ranks 1 --adam 2000 --iterations 1000 "now:lbfgs=$build/tessera" "now:ssbroyden=$build/tessera"
bench quasi_newton_update 600 "$build/bench_quasi_newton_update" 7851 23553 8
bench batch_precision 900 "$python" tools/bench/batch_precision.py --tessera "$build/tessera"
echo "finished $(date -u +%FT%TZ)" >>"$summary"
