#!/usr/bin/python3
"""A field of some of the inputs (a(x, y) in a space-time case), end to end with the binary.

  check_field_networks.py --tessera BIN --case cases/inverse_coefficient.json --out DIR
                          [--mpiexec MPIEXEC]

Trains the case shortly (float64, two XPINN subdomains, points and weights fixed) and checks:

1. the output file's a is the same at every output time (exactly), and the run reports a's
   relative error;
2. `tessera evaluate`: a at points that differ only in t is the same value, its derivatives
   along t (a_t, a_xt, a_tt) are exactly zero while a_x is not, and the grid equals the output
   file's a to 1e-12;
3. `tessera export`: torch.jit.load's model gives evaluate's u and a to 1e-9;
4. a run stopped after 20 iterations and continued with --restart latest ends with exactly the
   history of an uninterrupted 40-iteration run (timings aside);
5. a warm start from the run begins at the run's final loss (the networks, a's included, are
   copied);
6. with --mpiexec, the same run on 2 ranks (a subdomain each) has the same history, bit for
   bit (timings aside).
"""
import argparse
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import torch

from history import read_history  # same folder

ENV = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
# A schedule that does not depend on the stage's length, so that 20 + 20 iterations are 40.
STAGE = (
    '[{"optimizer":"adam","iterations":%d,"lr":3e-3,"warmup":0,"decay":{"rate":0.9,"every":10}}]'
)
SETS = [
    "dtype=float64",
    "training.stages=" + STAGE % 40,
    "training.log_every=10",
    'training.collocation={"points":256,"resample_every":0,"adaptive":false}',
    'training.weights={"adaptive":"none"}',
    "network.hidden=[12,12]",
    "fields.1.hidden=[8]",
    "conditions.0.points=64",
    "conditions.1.points=64",
    "conditions.2.points=64",
    'decomposition={"method":"xpinn","split":{"x":2},"interface":{"points":32}}',
    'output.grid={"x":6,"y":5,"t":4}',
]
TIMINGS = ("wall_s", "time_s")


def run(args, command, extra_sets=(), out=None, ranks=1):
    line = [args.tessera] + command
    if out is not None:
        line = [args.tessera, "run", args.case]
        for s in SETS + list(extra_sets) + [f"output.directory={out}"]:
            line += ["--set", s]
        line += command
    if ranks > 1:
        line = [args.mpiexec, "-n", str(ranks)] + line
    print("running:", " ".join(line), flush=True)
    result = subprocess.run(line, env=ENV, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-3000:] + result.stderr[-3000:])
        sys.exit(f"FAIL: exit {result.returncode}")
    return result


def history(out):
    """The run's records without their timings, which differ from run to run."""
    records = read_history(out)
    for record in records:
        for key in TIMINGS:
            record.pop(key, None)
    return records


def values(path):
    with h5py.File(path, "r") as f:
        return {name: f["/values/" + name][()] for name in f["/values"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mpiexec")
    args = parser.parse_args()
    args.case = os.path.abspath(args.case)
    work = os.path.abspath(args.out)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    problems = []

    # 1. The output file.
    whole = os.path.join(work, "whole")
    run(args, [], out=whole)
    with h5py.File(os.path.join(whole, "inverse_coefficient.h5"), "r") as f:
        a = f["/fields/a"][()]
        if "/fields/a_exact" not in f:
            problems.append("the output file has no a_exact")
    if a.shape != (4, 5, 6) or not all(np.array_equal(a[k], a[0]) for k in range(4)):
        problems.append(f"the output file's a {a.shape} changes in time")
    final = history(whole)[-1]
    print("final rel_l2:", final.get("rel_l2"))
    if "a" not in final.get("rel_l2", {}):
        problems.append("the run reports no rel_l2 for a")

    # 2. evaluate: at points that differ in t only, and their derivatives along t.
    rng = np.random.default_rng(5)
    points = rng.uniform(0, 1, size=(30, 3))
    later = points.copy()
    later[:, 2] = rng.uniform(0, 1, size=30)
    derivatives = "a_t,a_xt,a_tt,a_x,u_t"
    for name, p in (("points.h5", points), ("later.h5", later)):
        with h5py.File(os.path.join(work, name), "w") as f:
            f["/points"] = p
        run(
            args,
            ["evaluate", whole, "--points", os.path.join(work, name), "--derivatives", derivatives],
        )
    first = values(os.path.join(work, "points_values.h5"))
    second = values(os.path.join(work, "later_values.h5"))
    if not np.array_equal(first["a"], second["a"]) or np.array_equal(first["u"], second["u"]):
        problems.append("evaluate: a changes with t, or u does not")
    for name in ("a_t", "a_xt", "a_tt"):
        if not np.all(first[name] == 0):
            problems.append(f"evaluate: {name} is not exactly zero: {first[name][:3]}")
    if not np.any(first["a_x"] != 0) or not np.any(first["u_t"] != 0):
        problems.append("evaluate: a_x or u_t is zero everywhere")
    grid_file = os.path.join(work, "grid.h5")
    run(args, ["evaluate", whole, "--grid", "x=6,y=5,t=4", "--out", grid_file])
    with h5py.File(grid_file, "r") as f:
        difference = np.max(np.abs(f["/fields/a"][()] - a))
    print(f"evaluate --grid: a differs from the output file by {difference:.2e}")
    if not difference <= 1e-12:
        problems.append(f"evaluate --grid differs from the output file by {difference}")

    # 3. export.
    model_file = os.path.join(work, "model.pt")
    run(args, ["export", whole, "--out", model_file])
    model = torch.jit.load(model_file)
    if list(model.fields) != ["u", "a"]:
        problems.append(f"export's fields are {list(model.fields)}")
    with torch.no_grad():
        exported = model(torch.tensor(points)).numpy()
    difference = max(
        np.max(np.abs(exported[:, 0] - first["u"])), np.max(np.abs(exported[:, 1] - first["a"]))
    )
    print(f"export: differs from evaluate by {difference:.2e}")
    if not difference <= 1e-9:
        problems.append(f"the exported model differs from evaluate by {difference}")

    # 4. Restart.
    part = os.path.join(work, "part")
    run(args, [], ["training.stages=" + STAGE % 20], out=part)
    run(args, ["--restart", "latest"], out=part)
    if history(part) != history(whole):
        problems.append(f"restarted history differs:\n{history(part)}\n{history(whole)}")

    # 5. Warm start.
    warm = os.path.join(work, "warm")
    run(
        args,
        [],
        [
            f'network.init={{"from":"{whole}"}}',
            "training.log_every=1",
            "training.stages=" + STAGE % 2,
        ],
        out=warm,
    )
    start = history(warm)[0]
    print(f"source final loss {final['loss']!r}, warm-started first loss {start['loss']!r}")
    if start["loss"] != final["loss"]:
        problems.append(f"warm start begins at {start['loss']!r}, not at {final['loss']!r}")

    # 6. Two ranks.
    if args.mpiexec:
        two = os.path.join(work, "two_ranks")
        run(args, [], out=two, ranks=2)
        if history(two) != history(whole):
            problems.append(f"2 ranks give another history:\n{history(two)}\n{history(whole)}")

    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
