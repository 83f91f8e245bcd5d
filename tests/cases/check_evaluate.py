#!/usr/bin/python3
"""`tessera evaluate` and `tessera export` give the values of the run's output file, for every
kind of model.

  check_evaluate.py --tessera BIN --mpiexec MPIEXEC --loader LOAD_EXPORTED_MODEL --out DIR

Trains a small 2-D Poisson case (float64, a few dozen Adam iterations) six ways: one network
with the boundary condition built in (exact enforcement), an XPINN and a cPINN split in x
(trained on 2 ranks), an FBPINN with two windows, one network with every network option
(modified MLP, Fourier features, adaptive sine activation, weight factorisation), and one with
two exactly enforced conditions on different walls (their values blended). Then, for each run
and on 1 and 2 ranks:

- `evaluate --grid` on the output grid equals the output file's u to 1e-12, and the
  residual asked for with --derivatives equals the file's residual_poisson;
- `evaluate --points` at the same grid points (HDF5), and at random points (CSV and HDF5),
  gives the same values whatever the rank count and the file format;
- `export` writes one TorchScript file that Python's torch.jit.load (Debian's python3-torch)
  and a C++ program using LibTorch alone (load_exported_model.cpp) evaluate at the random
  points to evaluate's values within 1e-6 (they compute the same products, so the difference
  is rounding).
- definitions (with derivatives of the fields inside) give the residual of their hand
  expansion to 1e-12, in the forward and the reverse derivative engine, and the two engines
  agree to 1e-12.
Bad command lines get one line naming the option.
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
import torch

NX, NY = 11, 9
RESIDUAL = "-lap(u) - 2*pi^2*sin(pi*x)*sin(pi*y)"


def case(method):
    document = {
        "name": "evaluate_" + method,
        "seed": 7,
        "dtype": "float64",
        "coordinates": ["x", "y"],
        "fields": ["u"],
        "geometry": {"box": [[0, 1], [0, 1]]},
        "equations": [{"name": "poisson", "residual": RESIDUAL, "flux": ["-u_x", "-u_y"]}],
        "conditions": [
            {
                "name": "walls",
                "type": "dirichlet",
                "on": "boundary",
                "field": "u",
                "value": "0",
                "points": 64,
            }
        ],
        "exact": {"u": "sin(pi*x)*sin(pi*y)"},
        "network": {"hidden": [12, 12], "activation": "tanh"},
        "training": {
            "collocation": {"points": 256},
            "stages": [{"optimizer": "adam", "iterations": 40, "lr": 3e-3}],
            "log_every": 20,
        },
        "output": {"grid": {"x": NX, "y": NY}},
    }
    if method == "exact":
        document["conditions"][0]["enforce"] = "exact"
    elif method == "options":
        document["network"].update(
            {
                "architecture": "modified_mlp",
                "activation": "sin",
                "fourier_features": {"count": 6, "scale": 0.5},
                "adaptive_activation": {"scale": 10},
                "weight_factorization": True,
            }
        )
    elif method == "blended":
        walls = document["conditions"][0]
        document["conditions"] = [
            dict(walls, name="left", on="x=0", value="y*(1-y)", enforce="exact"),
            dict(walls, name="top", on="y=1", value="0", enforce="exact"),
            dict(walls, name="others", on="x=1|y=0"),
        ]
    else:
        document["decomposition"] = {"method": method, "split": {"x": 2}}
    if method == "fbpinn":
        del document["equations"][0]["flux"]
    return document


def run(command, cwd, expect_ok=True):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    if expect_ok and result.returncode != 0:
        sys.stdout.write(result.stdout + result.stderr)
        raise SystemExit(f"FAIL: {' '.join(command)} exited with {result.returncode}")
    return result


def launcher(args, ranks):
    return [args.mpiexec, "-n", str(ranks)] if ranks > 1 else []


def output_grid(folder, name):
    with h5py.File(os.path.join(folder, name + ".h5"), "r") as f:
        x, y = f["/grid/x"][()], f["/grid/y"][()]
        u = f["/fields/u"][()].reshape(-1)
        residual = f["/fields/residual_poisson"][()].reshape(-1)
    points = np.stack([np.tile(x, len(y)), np.repeat(y, len(x))], axis=1)
    return points, u, residual


def read_values(path):
    if path.endswith(".csv"):
        with open(path) as f:
            rows = list(csv.reader(f))
        header, data = rows[0], np.array(rows[1:], dtype=float)
        return {name: data[:, k] for k, name in enumerate(header)}
    with h5py.File(path, "r") as f:
        values = {name: f["/values/" + name][()] for name in f["/values"]}
        values["x"], values["y"] = f["/points"][:, 0], f["/points"][:, 1]
        return values


def check_run(args, method, train_ranks, work, problems):
    folder = os.path.join(work, method)
    case_file = os.path.join(work, method + ".json")
    with open(case_file, "w") as f:
        json.dump(case(method), f)
    run(
        launcher(args, train_ranks)
        + [args.tessera, "run", case_file, "--set", "output.directory=" + folder],
        work,
    )
    points, u, residual = output_grid(folder, "evaluate_" + method)
    with h5py.File(os.path.join(work, "grid_points.h5"), "w") as f:
        f["/points"] = points
    rng = np.random.default_rng(3)
    scattered = rng.uniform(0, 1, size=(50, 2))
    with h5py.File(os.path.join(work, "random.h5"), "w") as f:
        f["/points"] = scattered
    with open(os.path.join(work, "random.csv"), "w") as f:
        f.write("y,x\n")  # columns in another order than the case's, named by the header
        for x, y in scattered:
            f.write(f"{y!r},{x!r}\n")

    at_random = []
    for ranks in (1, 2):
        label = f"{method} (trained on {train_ranks}, evaluated on {ranks} rank(s))"
        evaluate = launcher(args, ranks) + [args.tessera, "evaluate", folder]
        grid_file = os.path.join(work, f"{method}_grid_{ranks}.h5")
        run(
            evaluate + ["--grid", f"x={NX},y={NY}", "--out", grid_file, "--derivatives", RESIDUAL],
            work,
        )
        with h5py.File(grid_file, "r") as f:
            grid_u = f["/fields/u"][()].reshape(-1)
            grid_residual = f["/fields/" + RESIDUAL.replace(" ", "")][()].reshape(-1)
            if f["/fields/u"].shape != (NY, NX):
                problems.append(f"{label}: grid values shaped {f['/fields/u'].shape}")
        du = np.max(np.abs(grid_u - u))
        dr = np.max(np.abs(grid_residual - residual)) / max(1.0, np.max(np.abs(residual)))
        print(f"{label}: --grid u differs by {du:.2e}, the residual by {dr:.2e}")
        if not du <= 1e-12 or not dr <= 1e-12:
            problems.append(f"{label}: --grid differs from the output file ({du:.2e}, {dr:.2e})")

        points_out = os.path.join(work, f"{method}_points_{ranks}.h5")
        run(evaluate + ["--points", "grid_points.h5", "--out", points_out], work)
        dp = np.max(np.abs(read_values(points_out)["u"] - u))
        print(f"{label}: --points at the grid points differ by {dp:.2e}")
        if not dp <= 1e-12:
            problems.append(f"{label}: --points differs from the output file by {dp:.2e}")

        for source in ("random.csv", "random.h5"):
            run(evaluate + ["--points", source, "--derivatives", "u_x,u_y"], work)
            stem, extension = os.path.splitext(source)
            values = read_values(os.path.join(work, stem + "_values" + extension))
            if not np.array_equal(values["x"], scattered[:, 0]):
                problems.append(f"{label}: {source}: the points written back differ")
            at_random.append(np.stack([values["u"], values["u_x"], values["u_y"]], axis=1))
    spread = max(np.max(np.abs(a - at_random[0])) for a in at_random)
    print(f"{method}: random points, 1 or 2 ranks, CSV or HDF5: values differ by {spread:.2e}")
    if not spread <= 1e-12:
        problems.append(f"{method}: values at random points depend on ranks or format")
    check_export(args, method, folder, scattered, at_random[0][:, 0], work, problems)


def check_export(args, method, folder, points, evaluated, work, problems):
    model_file = os.path.join(work, method + ".pt")
    run([args.tessera, "export", folder, "--out", model_file], work)
    model = torch.jit.load(model_file)
    if list(model.inputs) != ["x", "y"] or list(model.fields) != ["u"]:
        problems.append(f"{method}: export's inputs {model.inputs}, fields {model.fields}")
    with torch.no_grad():
        in_python = model(torch.tensor(points))[:, 0].numpy()
    points_file = os.path.join(work, "plain_points.csv")
    np.savetxt(points_file, points, delimiter=",", fmt="%.17g")
    in_cpp = run([args.loader, model_file, points_file], work).stdout
    in_cpp = np.array([float(line) for line in in_cpp.split()])
    scale = max(1.0, np.max(np.abs(evaluated)))
    for where, values in (("torch.jit.load", in_python), ("C++ torch::jit::load", in_cpp)):
        difference = np.max(np.abs(values - evaluated)) / scale
        print(f"{method}: exported model in {where} differs from evaluate by {difference:.2e}")
        if not difference <= 1e-6:
            problems.append(f"{method}: the exported model in {where} differs by {difference}")


DEFINITIONS = {"kappa": "1 + x^2", "dkappa": "2*x", "res": "-(kappa*lap(u) + dkappa*u_x)"}
EXPANDED = "-((1 + x^2)*lap(u) + 2*x*u_x)"


def check_definitions(args, work, problems):
    folder = os.path.join(work, "exact")
    results = {}
    for engine in ("taylor", "autograd"):
        out = os.path.join(work, f"definitions_{engine}.h5")
        run(
            [args.tessera, "evaluate", folder, "--grid", f"x={NX},y={NY}", "--out", out]
            + ["--set", "definitions=" + json.dumps(DEFINITIONS)]
            + ["--set", "training.derivatives=" + engine, "--derivatives", "res," + EXPANDED],
            work,
        )
        with h5py.File(out, "r") as f:
            results[engine] = (f["/fields/res"][()], f["/fields/" + EXPANDED.replace(" ", "")][()])
    scale = max(1.0, np.max(np.abs(results["autograd"][1])))
    for engine, (defined, expanded) in results.items():
        difference = np.max(np.abs(defined - expanded)) / scale
        print(f"definitions ({engine}): differ from the hand expansion by {difference:.2e}")
        if not difference <= 1e-12:
            problems.append(f"definitions ({engine}) differ from the expansion by {difference}")
    between = np.max(np.abs(results["taylor"][0] - results["autograd"][0])) / scale
    print(f"definitions: the two derivative engines differ by {between:.2e}")
    if not between <= 1e-12:
        problems.append(f"definitions: the derivative engines differ by {between}")


def check_bad_lines(args, work, problems):
    folder = os.path.join(work, "exact")
    bad = {
        "no --points or --grid": ([folder], "--points FILE or --grid"),
        "unknown coordinate": ([folder, "--grid", "z=5"], "--grid: 'z=5'"),
        "unknown derivative": (
            [folder, "--grid", "x=5", "--derivatives", "u_z"],
            "--derivatives 'u_z'",
        ),
        "not a run folder": ([work, "--grid", "x=5"], "has no run.json"),
        "bad extension": ([folder, "--points", "p.txt"], "unknown extension"),
        "option of another command": ([folder, "--grid", "x=5", "--ranks", "2"], "--ranks"),
        "a --set that changes the model": (
            [folder, "--grid", "x=5", "--set", "network.activation=sin"],
            "'network' would change the trained model",
        ),
    }
    export_on_two = run(launcher(args, 2) + [args.tessera, "export", folder], work, expect_ok=False)
    if export_on_two.returncode == 0 or "without mpiexec" not in export_on_two.stderr:
        problems.append("export on 2 ranks is not refused with one line")
    with open(os.path.join(work, "short.csv"), "w") as f:
        f.write("0.5\n")
    bad["short row"] = ([folder, "--points", "short.csv"], "line 1: 1 column(s), expected 2")
    for what, (arguments, needle) in bad.items():
        result = run([args.tessera, "evaluate"] + arguments, work, expect_ok=False)
        text = result.stdout + result.stderr
        lines = [line for line in text.splitlines() if "error" in line]
        print(f"bad input ({what}): {lines}")
        if result.returncode == 0 or len(lines) != 1 or needle not in lines[0]:
            problems.append(f"bad input ({what}): expected one error line with '{needle}'")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--loader", required=True, help="load_exported_model")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    work = os.path.abspath(args.out)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    problems = []
    runs = (("exact", 1), ("xpinn", 2), ("cpinn", 2), ("fbpinn", 1), ("options", 1), ("blended", 1))
    for method, train_ranks in runs:
        check_run(args, method, train_ranks, work, problems)
    check_definitions(args, work, problems)
    check_bad_lines(args, work, problems)
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
