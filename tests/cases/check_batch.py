#!/usr/bin/python3
"""A pass in parts (training.batch) gives the one-pass losses and steps.

  check_batch.py --tessera BIN --case CASE --work DIR --parts 4 [--mpiexec M --ranks N]
                 [--set KEY=VALUE ...]

Runs the case twice, once in one pass and once with training.batch.points chosen so that the
largest point set is cut into --parts parts, and compares every history record to 1e-12
(relative): the loss, every term and the balancing weights. The first record is the loss at the
initial weights; every later one comes after steps (Adam, then L-BFGS, whose steps scale with
the gradient) taken on gradients summed from the parts, so the records also compare the
gradients. Then the final fields.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

from history import read_history


def relative(a, b):
    scale = max(abs(a), abs(b), 1e-300)
    return abs(a - b) / scale


def run(args, folder, extra):
    shutil.rmtree(folder, ignore_errors=True)
    command = [args.tessera, "run", args.case, "--set", f"output.directory={folder}"]
    for setting in args.set + extra:
        command += ["--set", setting]
    if args.ranks > 1:
        command = [args.mpiexec, "-n", str(args.ranks)] + command
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        print(result.stdout[-2000:] + result.stderr[-2000:])
        sys.exit(f"FAIL: {' '.join(command)} exited with {result.returncode}")
    return read_history(folder), result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--points", type=int, required=True, help="largest point set")
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()

    whole_dir = os.path.join(args.work, "one_pass")
    parts_dir = os.path.join(args.work, f"{args.parts}_parts")
    batch = math.ceil(args.points / args.parts)
    one, _ = run(args, whole_dir, [])
    parts, console = run(args, parts_dir, [f'training.batch={{"points": {batch}}}'])

    failures = []
    if f"{args.parts} part(s) per pass" not in console:
        failures.append(f"the run in parts does not say it makes {args.parts} parts per pass")
    if len(one) != len(parts):
        failures.append(f"{len(one)} history records in one pass, {len(parts)} in parts")
    worst = worst_all = 0.0
    for k, (a, b) in enumerate(zip(one, parts)):
        bound = 1e-12
        pairs = [("loss", a["loss"], b["loss"])]
        pairs += [(f"terms.{t}", a["terms"][t], b["terms"][t]) for t in a["terms"]]
        pairs += [(f"weights.{t}", a["weights"][t], b["weights"][t]) for t in a["weights"]]
        for name, x, y in pairs:
            if k == 0:
                worst = max(worst, relative(x, y))
            worst_all = max(worst_all, relative(x, y))
            if relative(x, y) > bound:
                failures.append(
                    f"iteration {a['iteration']}: {name} {x!r} in one pass, {y!r} in parts "
                    f"(relative {relative(x, y):.1e} > {bound:.0e})"
                )
    name = json.load(open(os.path.join(whole_dir, "run.json")))["case"]["name"]
    with h5py.File(os.path.join(whole_dir, f"{name}.h5")) as f, h5py.File(
        os.path.join(parts_dir, f"{name}.h5")
    ) as g:
        for field in f["fields"]:
            x, y = np.asarray(f["fields"][field]), np.asarray(g["fields"][field])
            difference = np.linalg.norm(x - y) / max(np.linalg.norm(x), 1e-300)
            if difference > 1e-9:
                failures.append(f"field {field}: relative difference {difference:.1e} > 1e-9")
    for failure in failures[:20]:
        print("FAIL:", failure)
    if not failures:
        print(
            f"{len(one)} records agree; worst relative difference {worst:.1e} in the first "
            f"record, {worst_all:.1e} in all "
            f"({args.parts} parts of <= {batch} points, {args.ranks} rank(s))"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
