#!/usr/bin/python3
"""Data-parallel replicas and shared parameters, end to end.

  check_replicas.py --tessera BIN --mpiexec MPIEXEC --case tests/mpi/ddp_heat.json
                    --observations-tool tools/make_observations.py --out DIR

Every run keeps the defaults of this space-time case, causal weights included (checked in the
summary each run prints): the replicas of a subdomain must weigh its time chunks by the sums of
the whole sample, as one rank holding every point does. Weights from a replica's own slice
differ from replica to replica and from one rank's by far more than the tolerance.

1. One subdomain: 2 replicas on 2 ranks give the losses, the learned parameter and the output
   fields of 1 rank, to 1e-9 relative (float64; the replicas' partial sums only change the
   order of additions). So do 2 replicas that evaluate their points in parts (training.batch),
   whose causal weights come from a pass over every part first.
2. Two subdomains (XPINN, cut in time): 2 x 2 replicas on 4 ranks equal 2 subdomains on 2 ranks
   likewise.
3. The 4-rank run made one replica gradient all-reduce and one shared-parameter all-reduce per
   Adam step (run.json "synchronisation").
4. A checkpoint of the 2-replica run (iteration 40: networks, Adam moments of the network and
   of the shared parameter) continued on 1 rank without replicas ends like the 1-rank run.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

TOLERANCE = 1e-9
XPINN = ['decomposition={"method":"xpinn","split":{"t":2},"interface":{"points":63}}']
# Parts of at most 64 points: the 301 collocation points in 5 parts, on either replica.
IN_PARTS = ['training.batch={"points":64}']
CAUSAL_SUMMARY = "causal weights: 32 time chunks per subdomain"


def run(args, label, ranks, replicas, overrides, extra=(), fresh=True):
    out = os.path.join(args.out, label)
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
    command = [
        args.mpiexec,
        "-n",
        str(ranks),
        args.tessera,
        "run",
        args.case,
        "--set",
        "conditions.2.file=" + args.observations_file,
        "--set",
        "output.directory=" + out,
    ]
    for override in overrides:
        command += ["--set", override]
    command += [
        "--set",
        f"decomposition.ranks_per_subdomain={replicas}",
        "--set",
        "training.checkpoint_every=10",
    ]
    command += list(extra)
    env = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
    print("running:", " ".join(command), flush=True)
    result = subprocess.run(
        command, cwd=out, env=env, capture_output=True, text=True, timeout=args.timeout
    )
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-3000:])
        sys.stderr.write(result.stderr[-3000:])
        sys.exit(f"FAIL: {label} exited with {result.returncode}")
    if CAUSAL_SUMMARY not in result.stdout:
        sys.stdout.write(result.stdout[-3000:])
        sys.exit(f"FAIL: {label} did not train with causal weights ({CAUSAL_SUMMARY!r})")
    return out


def numbers(record, prefix=""):
    """Flattens a history record's figures (timings excepted) to {key: value}."""
    flat = {}
    for key, value in record.items():
        if key in ("wall_s", "time_s"):
            continue
        if isinstance(value, dict):
            flat.update(numbers(value, prefix + key + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[prefix + key] = float(value)
    return flat


def results(out):
    with open(os.path.join(out, "history.jsonl")) as f:
        history = [numbers(json.loads(line)) for line in f]
    with h5py.File(os.path.join(out, "ddp_heat.h5"), "r") as f:
        arrays = {"/fields/" + k: v[()] for k, v in f["fields"].items()}
        arrays.update(
            {"/parameters/" + k: np.array([v[()]]) for k, v in f.get("parameters", {}).items()}
        )
    return history, arrays


def compare(base_label, base, other_label, other):
    failures = []
    (h1, a1), (h2, a2) = base, other
    if len(h1) != len(h2) or not h1:
        return [f"{other_label}: {len(h2)} history lines, {base_label}: {len(h1)}"]
    worst = 0.0
    for line, (r1, r2) in enumerate(zip(h1, h2), 1):
        if set(r1) != set(r2):
            failures.append(f"history line {line}: keys differ: {sorted(set(r1) ^ set(r2))}")
        for key in set(r1) & set(r2):
            scale = max(abs(r1[key]), abs(r2[key]), 1e-300)
            error = abs(r1[key] - r2[key]) / scale
            worst = max(worst, error)
            if error > TOLERANCE:
                failures.append(
                    f"history line {line} {key}: {r1[key]!r} ({base_label}) vs {r2[key]!r} "
                    f"({other_label}), relative difference {error:.2e}"
                )
    if "parameters.kappa" not in h1[-1]:
        failures.append("history has no parameters.kappa")
    if sorted(a1) != sorted(a2) or "/parameters/kappa" not in a1:
        failures.append(f"datasets differ or lack /parameters/kappa: {sorted(a1)} vs {sorted(a2)}")
    for name in sorted(set(a1) & set(a2)):
        x, y = a1[name].astype(np.float64), a2[name].astype(np.float64)
        scale = max(np.nanmax(np.abs(x)), 1e-300)
        error = np.nanmax(np.abs(x - y)) / scale
        worst = max(worst, error)
        if error > TOLERANCE:
            failures.append(
                f"{name}: max relative difference {error:.2e} between {base_label} and {other_label}"
            )
    print(
        f"{other_label} vs {base_label}: largest relative difference {worst:.2e} "
        f"({len(h1)} history lines, {len(a1)} datasets)"
    )
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--observations-tool", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    args.out, args.case = os.path.abspath(args.out), os.path.abspath(args.case)
    os.makedirs(args.out, exist_ok=True)
    args.observations_file = os.path.join(args.out, "observations.h5")
    subprocess.run(
        [
            "/usr/bin/python3",
            args.observations_tool,
            "--domain",
            "x=0:1",
            "--domain",
            "t=0:1",
            "--exact",
            "u=sin(pi*x)*exp(-0.1*pi^2*t)",
            "--points",
            "201",
            "--noise",
            "0.01",
            "--out",
            args.observations_file,
        ],
        check=True,
    )

    failures = []
    one = results(run(args, "one_rank", 1, 1, []))
    two_replicas = results(run(args, "two_replicas", 2, 2, []))
    failures += compare("1 rank", one, "2 replicas", two_replicas)
    in_parts = results(run(args, "two_replicas_in_parts", 2, 2, IN_PARTS))
    failures += compare("1 rank", one, "2 replicas in parts", in_parts)
    two_subdomains = results(run(args, "xpinn_2_ranks", 2, 1, XPINN))
    out4 = run(args, "xpinn_2x2_replicas", 4, 2, XPINN)
    failures += compare(
        "2 subdomains on 2 ranks", two_subdomains, "2 x 2 replicas on 4 ranks", results(out4)
    )

    with open(os.path.join(out4, "run.json")) as f:
        record = json.load(f)
    sync = record["synchronisation"]
    # Where each rank ran, in rank order (the case pins the CPU).
    placement = record["ranks"]
    if [p["rank"] for p in placement] != [0, 1, 2, 3] or any(
        p["device"] != "cpu" or not p["host"] for p in placement
    ):
        failures.append(
            f"run.json ranks: expected ranks 0-3 with a host and device cpu, got {placement}"
        )
    print("4-rank synchronisation:", sync)
    steps = sync["adam_steps"]
    if steps != 50:
        failures.append(f"expected 50 Adam steps, run.json says {steps}")
    for key in ("replica_gradient_allreduces", "parameter_gradient_allreduces"):
        if sync[key] != steps:
            failures.append(f"{key} = {sync[key]}, expected one per Adam step ({steps})")
    # 4. Continue the 2-replica run from its checkpoint at iteration 40 on one rank.
    restart = os.path.join(args.out, "restart_one_rank")
    shutil.rmtree(restart, ignore_errors=True)
    shutil.copytree(os.path.join(args.out, "two_replicas"), restart)
    shutil.rmtree(os.path.join(restart, "checkpoints", "00000050"))
    run(args, "restart_one_rank", 1, 1, [], ["--restart", "latest"], fresh=False)
    failures += compare(
        "1 rank", one, "2 replicas continued on 1 rank from iteration 40", results(restart)
    )

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
