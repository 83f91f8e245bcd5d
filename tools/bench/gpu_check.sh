#!/usr/bin/env bash
# The GPU checks of a build against a CUDA LibTorch, in one run on a machine with a GPU:
#
#   tools/bench/gpu_check.sh [BUILD_DIR] [OUT_DIR]     # defaults: build, results/gpu_check
#
# 1. test_nccl on 1 and 2 ranks (2 ranks on one GPU exercise the host-copy path NCCL needs);
# 2. the seed problem at 1,000,000 points on both derivative engines beside the seed's PyTorch
#    script (iteration_speed.py);
# 3. the xpinn4 test case on 1 and 2 ranks on the GPU: bit-identical history and fields;
# 4. gradient accumulation and precisions, tf32 included (batch_precision.py);
# 5. the data-parallel inverse case (4 ranks: 2 subdomains x 2 replicas) on the GPU, shortened;
# 6. a restart onto another device: xpinn4 stopped on the GPU after its Adam stage, continued
#    on the CPU from that checkpoint;
# 7. the XPINN case's Adam iterations between log iterations read nothing from the GPU (run.json
#    counts the reads; check_host_reads.py), on 1 and 2 ranks;
# 8. CPU and GPU histories of eight shipped cases agree to 1e-5 over their first 20 Adam
#    iterations, and two GPU runs of each are bit-identical (device_agreement.py);
# 9. the XPINN case (4 x 1,024 points) on one rank: Adam iterations per second on the GPU.
# Each step's output goes to OUT_DIR/<step>.log and a one-line verdict to OUT_DIR/summary.log.
# Needs mpiexec.mpich (or MPIEXEC) on PATH and a python3 with torch, numpy and h5py (PYTHON).
set -u
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
out=${2:-results/gpu_check}
mkdir -p "$out"
mpiexec=${MPIEXEC:-mpiexec.mpich}
python=${PYTHON:-python3}
summary=$out/summary.log
: >"$summary"

step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local status=$?
  echo "$name: exit $status, $((SECONDS - start)) s" | tee -a "$summary"
}

step nccl_1rank 120 "$mpiexec" -n 1 "$build/tests/mpi/test_nccl"
step nccl_2ranks 120 "$mpiexec" -n 2 "$build/tests/mpi/test_nccl"
step speed 300 "$python" tools/bench/iteration_speed.py --tessera "$build/tessera" \
  --python "$python" --points 1000000 --device cuda --iterations 200 --log-every 50
step identical 300 "$python" tests/mpi/check_ranks_identical.py --tessera "$build/tessera" \
  --mpiexec "$mpiexec" --case tests/mpi/xpinn4.json --out "$out/identical" --ranks 1 2 \
  --timeout 120 --set device=cuda
step precision 300 "$python" tools/bench/batch_precision.py --tessera "$build/tessera" \
  --device cuda --points 1000000 --iterations 40
step data_parallel 300 "$mpiexec" -n 4 "$build/tessera" run cases/inverse_heat_ddp.json \
  --set device=cuda --set "output.directory=$out/data_parallel" --overwrite \
  --set 'training.stages=[{"optimizer": "adam", "iterations": 500}]'
restart=$out/restart
step restart_gpu 300 "$build/tessera" run tests/mpi/xpinn4.json --set device=cuda \
  --set "output.directory=$restart" --overwrite --set training.stages.1.iterations=1 \
  --set training.checkpoint_every=50
step restart_on_cpu 300 "$build/tessera" run tests/mpi/xpinn4.json --set device=cpu \
  --set "output.directory=$restart" --restart "$restart/checkpoints/00000150" \
  --set training.checkpoint_every=50
step host_reads 300 "$python" tests/mpi/check_host_reads.py --tessera "$build/tessera" \
  --mpiexec "$mpiexec" --case cases/poisson2d_xpinn.json --out "$out/host_reads" --ranks 1 2 \
  --set device=cuda
step agreement 300 "$python" tools/bench/device_agreement.py --tessera "$build/tessera" \
  --out "$out/agreement"
xpinn=$out/xpinn_speed
step xpinn_speed 300 "$build/tessera" run cases/poisson2d_xpinn.json --set device=cuda \
  --set "output.directory=$xpinn" --overwrite --set training.stages.0.iterations=3000 \
  --set training.stages.1.iterations=1
"$python" - "$xpinn/history.jsonl" >>"$summary" <<'RATE'
import json, sys
adam = [r for r in map(json.loads, open(sys.argv[1])) if r.get("stage") == "adam"]
first, last = adam[0], adam[-1]
rate = (last["iteration"] - first["iteration"]) / (last["wall_s"] - first["wall_s"])
print(f"xpinn_speed: {rate:.0f} Adam iterations per second (iterations {first['iteration']} to {last['iteration']})")
RATE
grep -h -E "ms/it|reverse / forward|seed script / forward" "$out/speed.log" >>"$summary"
grep -h -A9 "^run " "$out/precision.log" >>"$summary"
grep -h "identical on" "$out/identical.log" >>"$summary"
grep -h -E "rank\(s\):" "$out/host_reads.log" >>"$summary"
grep -h "^| cases" "$out/agreement.log" >>"$summary"
