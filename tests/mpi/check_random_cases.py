#!/usr/bin/python3
"""Property test of the determinism rule: random small cases give the same bits on any rank count.

  check_random_cases.py --tessera BIN --mpiexec MPIEXEC --out DIR [--count N] [--seed S]
                        [--replay SEED]...

Determinism (docs/architecture.md): with no shared parameters and no data-parallel replicas,
a case trained on 1 rank and on 2 to 4 ranks gives bit-identical history.jsonl (timings aside)
and fields. Each random case draws 1 to 3 coordinates (time among them or not), a method
(XPINN, cPINN, time slabs, FBPINN), a split of 1 to 6 subdomains, Neumann points on one side
or not, balancing on or off, adaptive points on or off, causal weights (the default where time
is a coordinate), batching on or off, the derivative engine, the dtype and the finish (none,
lbfgs, bfgs, ssbroyden; joint or block-diagonal), and runs a few iterations on 1 rank and on
a random 2 to 4. Case k of a run with base seed S has seed S + k; every case prints its seed,
and --replay SEED runs that case alone again (its case file is kept under DIR/<seed>/case.json).
"""
import argparse
import json
import os
import random
import sys
import time

from check_ranks_identical import fields, history, history_differences  # same folder

SPACE = ["x", "y", "z"]


def pick_split(rng, names, method):
    """Pieces per coordinate, 1 to 6 subdomains in all (at least 2 for FBPINN)."""
    while True:
        split = {name: rng.choice([1, 1, 2, 3]) for name in names}
        total = 1
        for pieces in split.values():
            total *= pieces
        if total <= 6 and (method != "fbpinn" or total >= 2):
            return {name: pieces for name, pieces in split.items() if pieces > 1}


def equations(space, timed, method):
    """A diffusion (heat when timed) equation with a closed form solution."""
    lap = " + ".join(f"u_{name}{name}" for name in space)
    product = "*".join(f"sin(pi*{name})" for name in space)
    decay = f"exp(-0.1*{len(space)}*pi^2*t)" if timed else "1"
    exact = f"{product}*{decay}"
    if timed:
        residual = f"u_t - 0.1*({lap})"
        flux = [f"-0.1*u_{name}" for name in space]
    else:
        residual = f"-({lap}) - {len(space)}*pi^2*{product}"
        flux = [f"-u_{name}" for name in space]
    equation = {"name": "pde", "residual": residual}
    if method == "cpinn":
        equation["flux"] = flux
    return [equation], exact, product


def random_case(seed):
    rng = random.Random(seed)
    timed = rng.random() < 0.5
    space = SPACE[: rng.randint(1, 2 if timed else 3)]
    method = rng.choice(
        ["xpinn", "cpinn", "timeslabs", "fbpinn"] if timed else ["xpinn", "cpinn", "fbpinn"]
    )
    cut = ["t"] if method == "timeslabs" else space + (["t"] if timed and method == "xpinn" else [])
    split = pick_split(rng, cut, method)
    eqs, exact, initial = equations(space, timed, method)
    conditions = [
        {
            "name": "walls",
            "type": "dirichlet",
            "on": "boundary",
            "field": "u",
            "value": "0",
            "points": rng.choice([16, 24, 40]),
        }
    ]
    if rng.random() < 0.5:
        # Points on one side only: their subdomains' networks are in a call the others are not.
        conditions.append(
            {
                "name": "right",
                "type": "neumann",
                "on": "x=1",
                "field": "u",
                "value": exact.replace("sin(pi*x)", "pi*cos(pi*x)"),
                "points": rng.choice([8, 16]),
            }
        )
    if timed:
        conditions.append(
            {
                "name": "start",
                "type": "initial",
                "field": "u",
                "value": initial,
                "points": rng.choice([16, 32]),
            }
        )
    finish = rng.choice([None, "lbfgs", "bfgs", "ssbroyden"])
    stages = [{"optimizer": "adam", "iterations": rng.choice([6, 10]), "lr": 1e-3}]
    if finish:
        stage = {"optimizer": finish, "iterations": rng.choice([4, 6])}
        if rng.random() < 0.3:
            stage["hessian"] = "blocks"
        stages.append(stage)
    training = {
        "collocation": {
            "points": rng.choice([40, 64, 100]),
            "sampler": rng.choice(["sobol", "lhs"]),
            "resample_every": rng.choice([0, 3]),
        },
        "stages": stages,
        "log_every": 2,
        "derivatives": rng.choice(["auto", "auto", "autograd"]),
    }
    if rng.random() < 0.5:
        training["collocation"]["adaptive"] = {"every": 4, "candidates": 2}
    elif method != "fbpinn":
        training["collocation"]["adaptive"] = False
    if rng.random() < 0.5:
        training["weights"] = {"adaptive": "grad_norm", "adaptive_every": 3}
    else:
        training["weights"] = {"adaptive": "none"}
    if timed and rng.random() < 0.3:
        training["causal"] = {"enabled": False}
    elif timed:
        training["causal"] = {"chunks": rng.choice([4, 8])}
    if rng.random() < 0.3:
        training["batch"] = {"points": rng.choice([17, 30])}
    decomposition = {"method": "xpinn" if method == "timeslabs" else method}
    if split:
        decomposition["split"] = split
    if method in ("xpinn", "cpinn", "timeslabs") and split:
        decomposition["interface"] = {"points": rng.choice([8, 16])}
    case = {
        "name": "random",
        "seed": seed,
        "dtype": rng.choice(["float32", "float64"]),
        "device": "cpu",
        "coordinates": space,
        "fields": ["u"],
        "geometry": {"box": [[0, 1]] * len(space)} if len(space) > 1 else {"interval": [0, 1]},
        "equations": eqs,
        "conditions": conditions,
        "exact": {"u": exact},
        "decomposition": decomposition,
        "network": {"hidden": [rng.choice([6, 10])] * rng.choice([1, 2]), "activation": "tanh"},
        "training": training,
        "output": {"directory": "out", "grid": {name: 5 for name in space}},
    }
    if timed:
        case["time"] = {"name": "t", "range": [0, 1]}
        case["output"]["grid"]["t"] = 3
    return case, rng.randint(2, 4)


def run(tessera, mpiexec, case_file, out, ranks, timeout):
    import shutil
    import subprocess

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    command = [
        mpiexec,
        "-n",
        str(ranks),
        tessera,
        "run",
        case_file,
        "--set",
        "output.directory=" + out,
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
    result = subprocess.run(
        command, cwd=out, env=env, capture_output=True, text=True, timeout=timeout
    )
    if result.returncode != 0:
        return f"{ranks} rank(s) exited with {result.returncode}: {result.stderr.strip()[-600:]}"
    return ""


def differences(a_out, b_out, ranks):
    # The first differing record is enough to replay from.
    failures = history_differences(history(a_out), history(b_out), 1, ranks)[:2]
    _, fa = fields(a_out)
    _, fb = fields(b_out)
    for name in sorted(set(fa) | set(fb)):
        if name not in fa or name not in fb or fa[name].tobytes() != fb[name].tobytes():
            failures.append(f"/fields/{name} differs")
    return failures


def describe(case):
    training = case["training"]
    coordinates = case["coordinates"] + (["t"] if "time" in case else [])
    flags = [
        name
        for name, on in [
            ("balancing", training["weights"]["adaptive"] != "none"),
            ("adaptive points", training["collocation"].get("adaptive", True) is not False),
            ("causal", "time" in case and training.get("causal", {}).get("enabled", True)),
            ("batch", "batch" in training),
        ]
        if on
    ]
    return (
        f"{','.join(coordinates)} {case['decomposition']['method']} "
        f"{case['decomposition'].get('split', {})} "
        f"{'+'.join(s['optimizer'] for s in training['stages'])} {case['dtype']} "
        f"{training['derivatives']} [{', '.join(flags)}]"
    )


def check(args, seed):
    case, ranks = random_case(seed)
    tessera = os.path.abspath(args.tessera)
    folder = os.path.join(os.path.abspath(args.out), str(seed))
    os.makedirs(folder, exist_ok=True)
    case_file = os.path.join(folder, "case.json")
    with open(case_file, "w") as f:
        json.dump(case, f, indent=1)
    summary = describe(case)
    start = time.monotonic()
    outs = {}
    for count in (1, ranks):
        out = os.path.join(folder, f"ranks{count}")
        failure = run(tessera, args.mpiexec, case_file, out, count, args.timeout)
        if failure:
            return [failure], summary
        outs[count] = out
    failures = differences(outs[1], outs[ranks], ranks)
    print(
        f"seed {seed}: 1 vs {ranks} ranks, {summary}: "
        f"{'FAIL' if failures else 'identical'} ({time.monotonic() - start:.1f} s)",
        flush=True,
    )
    return failures, summary


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--replay", type=int, action="append", default=[])
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    if args.replay:
        seeds = args.replay
    else:
        base = args.seed if args.seed is not None else random.randrange(1, 10**6)
        print(f"base seed {base} (--seed {base} runs these cases again)")
        seeds = [base + k for k in range(args.count)]
    failed = []
    for seed in seeds:
        failures, summary = check(args, seed)
        for failure in failures:
            print(f"FAIL seed {seed} ({summary}): {failure}")
        if failures:
            failed.append(seed)
    if failed:
        print("replay with:", " ".join(f"--replay {seed}" for seed in failed))
        return 1
    print(f"{len(seeds)} random cases identical on 1 rank and on 2 to 4")
    return 0


if __name__ == "__main__":
    sys.exit(main())
