#!/usr/bin/python3
"""A float32 Adam stage (with residual-based point redistribution) finished by a float64
SSBroyden stage, stopped and continued.

  check_stage_dtype.py --tessera BIN --mpiexec MPIEXEC --case tests/mpi/xpinn4.json --out DIR
                       [--adam-precision bf16 --restart-ranks 2]
                       [--finish lbfgs --finish-keys '"scaling":"broyden","history":8']

With --adam-precision the Adam stage runs with that precision (bf16: bfloat16 products) and
the finish says "precision": "fp64"; run.json must list both. --finish and --finish-keys
change the float64 stage's optimizer and add keys to it (a history shorter than the finish
puts checkpoints inside a full one).

1. An uninterrupted 2-rank run is the reference; its history names both stages, and the
   SSBroyden stage lowers the loss below the Adam stage's last value.
2. Restarts from the reference's checkpoints on 2 and 1 ranks: at the end of the float32 stage
   (the switch to float64 happens after the restart) and inside the float64 stage (the
   networks and the inverse Hessian come back in float64): each ends with exactly the
   reference's history (timings aside) and /fields, bit for bit.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

from check_checkpoint import same_as_reference  # same folder: history and /fields bitwise

ENV = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
# Runs keep their last two checkpoints: a finish of 20 iterations keeps the one at the switch
# (200), a finish of 40 one inside the float64 stage (220).
STAGES = (
    'training.stages=[{"optimizer":"adam","iterations":200,"lr":0.001%s},'
    '{"optimizer":"%s","iterations":%d%s}]'
)
SETS = [
    "training.log_every=20",
    "training.checkpoint_every=20",
    # Redistributed points too: checkpoints must carry them and their stream's position.
    'training.collocation.adaptive={"every":50}',
]


def run(args, ranks, out, finish, extra=()):
    line = [args.mpiexec, "-n", str(ranks), args.tessera, "run", args.case]
    adam, last = "", ""
    if args.adam_precision:
        adam, last = f',"precision":"{args.adam_precision}"', ',"precision":"fp64"'
    if args.finish_keys:
        last += "," + args.finish_keys
    stages = STAGES % (adam, args.finish, finish, last)
    for s in [stages] + SETS + [f"output.directory={out}"]:
        line += ["--set", s]
    line += list(extra)
    print("running:", " ".join(line), flush=True)
    result = subprocess.run(line, env=ENV, capture_output=True, text=True, timeout=args.timeout)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-3000:])
        sys.stderr.write(result.stderr[-3000:])
        sys.exit(f"FAIL: exit {result.returncode}")
    return result


def continued_from(args, reference, finish, keep_up_to, ranks, label, failures):
    """Copies the reference, drops its checkpoints after `keep_up_to`, restarts from the latest."""
    copy = os.path.join(args.out, label.replace(" ", "_"))
    assert os.path.isdir(os.path.join(reference, "checkpoints", "%08d" % keep_up_to)), keep_up_to
    shutil.copytree(reference, copy)
    for folder in glob.glob(os.path.join(copy, "checkpoints", "*")):
        if int(os.path.basename(folder)) > keep_up_to:
            shutil.rmtree(folder)
    run(args, ranks, copy, finish, ["--restart", "latest"])
    same_as_reference(label, reference, copy, failures)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=150.0)
    parser.add_argument("--adam-precision", default="")
    parser.add_argument("--restart-ranks", default="2,1")
    parser.add_argument("--finish", default="ssbroyden")
    parser.add_argument("--finish-keys", default="")
    args = parser.parse_args()
    args.out, args.case = os.path.abspath(args.out), os.path.abspath(args.case)
    shutil.rmtree(args.out, ignore_errors=True)
    failures = []

    reference = os.path.join(args.out, "reference")
    output = run(args, 2, reference, 40).stdout
    expected = f"{args.finish}, 40 iterations, lr 1, float64" + (
        "" if args.adam_precision else " (default)"
    )
    if expected not in output:
        failures.append(f"the summary does not show '{expected}'")
    short = os.path.join(args.out, "reference_short")
    run(args, 2, short, 20)
    records = [json.loads(line) for line in open(os.path.join(reference, "history.jsonl"))]
    adam = [r["loss"] for r in records if r["stage"] == "adam"]
    finish = [r["loss"] for r in records if r["stage"] == args.finish]
    print(f"adam ends at loss {adam[-1]:.3e}; {args.finish} ends at {finish[-1]:.3e}")
    if not finish or not finish[-1] < adam[-1]:
        failures.append(f"the float64 {args.finish} stage did not lower the loss")
    run_json = json.load(open(os.path.join(reference, "run.json")))
    print("run.json dtype:", run_json.get("case", {}).get("dtype"))
    precision = [args.adam_precision or "fp32", "fp64"]
    if run_json.get("precision") != precision:
        failures.append(f"run.json precision {run_json.get('precision')}, expected {precision}")

    for ranks in [int(r) for r in args.restart_ranks.split(",")]:
        continued_from(
            args, short, 20, 200, ranks, f"restart at the switch on {ranks} ranks", failures
        )
        continued_from(
            args, reference, 40, 220, ranks, f"restart in float64 on {ranks} ranks", failures
        )

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
