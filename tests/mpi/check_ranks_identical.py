#!/usr/bin/python3
"""Runs one case on several rank counts and checks the results are bit-identical.

  check_ranks_identical.py --tessera BIN --mpiexec MPIEXEC --case CASE --out DIR [--ranks 1 2 4]
                           [--set path=value]... [--slices K]

Determinism (docs/architecture.md): with no shared parameters every random stream is keyed by
subdomain, never by rank, so 1, 2 and 4 ranks must agree exactly (one thread per rank). Compares
every history.jsonl line (all keys but the timings wall_s and time_s) for exact equality, and
every dataset under /fields in <name>.h5 bitwise (same dtype, shape and bytes; NaNs included).
With --slices K (fbpinn), also checks that run.json shows the K slices shared out: rank r of R
evaluates slices [K r / R, K (r + 1) / R), so every rank does its part of the work.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

TIMINGS = ("wall_s", "time_s")


def run(args, ranks):
    out = os.path.join(os.path.abspath(args.out), f"ranks{ranks}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    command = [args.mpiexec, "-n", str(ranks), args.tessera, "run", os.path.abspath(args.case)]
    for override in args.overrides:
        command += ["--set", override]
    command += ["--set", "output.directory=" + out]
    env = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
    print("running:", " ".join(command), flush=True)
    start = time.monotonic()
    result = subprocess.run(
        command, cwd=out, env=env, capture_output=True, text=True, timeout=args.timeout
    )
    print(
        f"  {ranks} rank(s): exit {result.returncode}, {time.monotonic() - start:.1f} s", flush=True
    )
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-4000:])
        sys.stderr.write(result.stderr[-4000:])
        sys.exit(f"FAIL: tessera on {ranks} rank(s) exited with {result.returncode}")
    return out


def history(out):
    lines = []
    with open(os.path.join(out, "history.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            for key in TIMINGS:
                record.pop(key, None)
            lines.append(record)
    return lines


def fields(out):
    files = glob.glob(os.path.join(out, "*.h5"))
    if len(files) != 1:
        sys.exit(f"FAIL: expected one .h5 file in {out}, found {files}")
    result = {}
    with h5py.File(files[0], "r") as f:
        if "fields" not in f:
            sys.exit(f"FAIL: {files[0]} has no /fields group")
        for name, dataset in f["fields"].items():
            result[name] = dataset[()]
    return os.path.basename(files[0]), result


def history_differences(base, other, base_ranks, ranks):
    """One line per history record that differs (naming its keys), and for unequal lengths."""
    failures = []
    if len(other) != len(base):
        failures.append(
            f"history.jsonl: {len(other)} lines on {ranks} ranks, {len(base)} on {base_ranks}"
        )
    for k, (a, b) in enumerate(zip(base, other)):
        if a != b:
            keys = sorted(key for key in set(a) | set(b) if a.get(key) != b.get(key))
            failures.append(
                f"history.jsonl line {k + 1} differs between {base_ranks} and "
                f"{ranks} ranks in {keys}: {[a.get(key) for key in keys]} vs "
                f"{[b.get(key) for key in keys]}"
            )
    return failures


def slice_failures(out, ranks, slices):
    with open(os.path.join(out, "run.json")) as f:
        run_record = json.load(f)
    failures = []
    if run_record["synchronisation"].get("slices") != slices:
        failures.append(f"run.json on {ranks} rank(s): slices {run_record['synchronisation']}")
    for r, placed in enumerate(run_record["ranks"]):
        expected = [slices * r // ranks, slices * (r + 1) // ranks]
        if placed.get("slices") != expected:
            failures.append(
                f"run.json on {ranks} rank(s): rank {r} has {placed}, expected "
                f"slices {expected}"
            )
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--slices", type=int, default=0)
    args = parser.parse_args()

    outs = {ranks: run(args, ranks) for ranks in args.ranks}
    base_ranks = args.ranks[0]
    base_history = history(outs[base_ranks])
    base_name, base_fields = fields(outs[base_ranks])
    failures = []
    if not base_history:
        failures.append(f"{base_ranks} rank(s): history.jsonl is empty")
    if not base_fields:
        failures.append(f"{base_ranks} rank(s): /fields is empty")
    if args.slices:
        for ranks in args.ranks:
            failures += slice_failures(outs[ranks], ranks, args.slices)
    for ranks in args.ranks[1:]:
        failures += history_differences(base_history, history(outs[ranks]), base_ranks, ranks)
        name, other_fields = fields(outs[ranks])
        if name != base_name:
            failures.append(f"output file {name} on {ranks} ranks, {base_name} on {base_ranks}")
        if sorted(other_fields) != sorted(base_fields):
            failures.append(
                f"/fields on {ranks} ranks holds {sorted(other_fields)}, "
                f"on {base_ranks}: {sorted(base_fields)}"
            )
        for field in sorted(set(base_fields) & set(other_fields)):
            a, b = base_fields[field], other_fields[field]
            same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
            if not same or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                difference = (
                    np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))
                    if a.shape == b.shape
                    else "shape"
                )
                failures.append(
                    f"/fields/{field} differs between {base_ranks} and {ranks} ranks "
                    f"(max |difference| {difference})"
                )
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(
        f"identical on {', '.join(map(str, args.ranks))} ranks: {len(base_history)} history "
        f"lines, /fields/{{{', '.join(sorted(base_fields))}}}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
