#!/usr/bin/python3
"""A scattered-point reference is scored at its points, and several fields are also scored
stacked; `output.points` writes the fields at given points.

  check_scattered_reference.py --tessera BIN --mpiexec MPIEXEC --out DIR

A two-field case (u and v, each with its own Poisson equation; float64, a few dozen Adam
iterations, XPINN split in x on 2 ranks) takes as `reference.file` 300 random points with the
closed-form values, and as `output.points` the same points. The fields written at those points
give the errors by hand, sqrt(sum (u - u_ref)^2 / sum u_ref^2) per field and over both fields
stacked; run.json, the last line of history.jsonl and the output file's attributes must hold
the same figures (to 1e-9 relative), and the console must print the stacked one. A second run
writes the points as CSV, with the same values.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np


def case(points_file):
    return {
        "name": "scattered",
        "seed": 5,
        "dtype": "float64",
        "coordinates": ["x", "y"],
        "fields": ["u", "v"],
        "geometry": {"box": [[0, 1], [0, 1]]},
        "equations": [
            {"name": "pu", "residual": "-lap(u) - 2*pi^2*sin(pi*x)*sin(pi*y)"},
            {"name": "pv", "residual": "lap(v)"},
        ],
        "conditions": [
            {"name": "wu", "type": "dirichlet", "on": "boundary", "field": "u", "value": "0"},
            {"name": "wv", "type": "dirichlet", "on": "boundary", "field": "v", "value": "x*y"},
        ],
        "reference": {"file": "reference.h5"},
        "decomposition": {"method": "xpinn", "split": {"x": 2}},
        "network": {"hidden": [12, 12], "activation": "tanh"},
        "training": {
            "collocation": {"points": 256},
            "stages": [{"optimizer": "adam", "iterations": 40, "lr": 3e-3}],
            "log_every": 20,
        },
        "output": {"grid": {"x": 11, "y": 11}, "points": points_file},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    work = os.path.abspath(args.out)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    rng = np.random.default_rng(11)
    points = rng.uniform(0, 1, size=(300, 2))
    x, y = points[:, 0], points[:, 1]
    reference = {"u": np.sin(np.pi * x) * np.sin(np.pi * y), "v": x * y}
    with h5py.File(os.path.join(work, "reference.h5"), "w") as f:
        f["/points"] = points
        for name, values in reference.items():
            f["/values/" + name] = values
    with open(os.path.join(work, "points.csv"), "w") as f:
        f.write("x,y\n" + "".join(f"{a!r},{b!r}\n" for a, b in points))

    problems = []
    outputs = {}
    for points_file in ("reference.h5", "points.csv"):
        case_file = os.path.join(work, f"case_{points_file}.json")
        folder = os.path.join(work, "run_" + points_file.replace(".", "_"))
        with open(case_file, "w") as f:
            json.dump(case(points_file), f)
        command = [args.mpiexec, "-n", "2", args.tessera, "run", case_file]
        result = subprocess.run(
            command + ["--set", "output.directory=" + folder],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            sys.stdout.write(result.stdout + result.stderr)
            return 1
        outputs[points_file] = (folder, result.stdout)

    folder, console = outputs["reference.h5"]
    with h5py.File(os.path.join(folder, "scattered_points.h5"), "r") as f:
        written = {name: f["/values/" + name][()] for name in ("u", "v")}
        if not np.array_equal(f["/points"][()], points):
            problems.append("scattered_points.h5: /points is not the points given")
    squares = {name: np.sum((written[name] - reference[name]) ** 2) for name in written}
    norms = {name: np.sum(reference[name] ** 2) for name in written}
    by_hand = {name: np.sqrt(squares[name] / norms[name]) for name in written}
    by_hand["stacked"] = np.sqrt(sum(squares.values()) / sum(norms.values()))
    print("by hand at the reference's points:", by_hand)

    with open(os.path.join(folder, "run.json")) as f:
        final = json.load(f)["final"]
    with open(os.path.join(folder, "history.jsonl")) as f:
        last = json.loads(f.read().splitlines()[-1])
    with h5py.File(os.path.join(folder, "scattered.h5"), "r") as f:
        attributes = {
            "u": f.attrs["rel_l2_u"],
            "v": f.attrs["rel_l2_v"],
            "stacked": f.attrs["rel_l2_stacked"],
        }
    reported = {
        "run.json": dict(final["rel_l2"], stacked=final.get("rel_l2_stacked", -1)),
        "history.jsonl": dict(last["rel_l2"], stacked=last.get("rel_l2_stacked", -1)),
        "scattered.h5 attributes": attributes,
    }
    for where, figures in reported.items():
        print(where, figures)
        for name, value in by_hand.items():
            if not abs(figures.get(name, -1) - value) <= 1e-9 * value:
                problems.append(f"{where}: rel_l2 {name} {figures.get(name)} != {value}")
    stacked_lines = [line for line in console.splitlines() if "rel_l2(stacked)" in line]
    if not stacked_lines:
        problems.append("the console shows no rel_l2(stacked)")

    csv_folder = outputs["points.csv"][0]
    with open(os.path.join(csv_folder, "scattered_points.csv")) as f:
        rows = list(csv.reader(f))
    if rows[0] != ["x", "y", "u", "v"]:
        problems.append(f"scattered_points.csv header {rows[0]}")
    table = np.array(rows[1:], dtype=float)
    spread = np.max(np.abs(table[:, 2:] - np.stack([written["u"], written["v"]], axis=1)))
    print(f"CSV and HDF5 output.points differ by {spread:.2e}")
    if not spread <= 1e-15 or not np.array_equal(table[:, :2], points):
        problems.append("output.points as CSV differs from the HDF5 file")

    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
