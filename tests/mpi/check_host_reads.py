#!/usr/bin/python3
"""A decomposed case's Adam iteration reads nothing from the device unless it logs, redraws
points, balances the terms or ends its stage: run.json's `synchronisation` counts the reads
(core/host_reads.hpp) of the other, quiet, iterations.

  check_host_reads.py --tessera BIN --mpiexec MPIEXEC --case CASE --out DIR [--ranks 1 2]
                      [--set path=value]...

On one rank every neighbour is on the same rank: no value read and no message copied. On more
ranks each quiet iteration copies the interface values for MPI once and reads no value.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def run(args, ranks):
    out = os.path.abspath(os.path.join(args.out, f"ranks{ranks}"))
    shutil.rmtree(out, ignore_errors=True)
    command = [
        args.mpiexec,
        "-n",
        str(ranks),
        args.tessera,
        "run",
        args.case,
        "--set",
        f"output.directory={out}",
        "--set",
        "training.stages.0.iterations=300",
        "--set",
        "training.stages.1.iterations=5",
    ]
    for override in args.overrides:
        command += ["--set", override]
    result = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    if result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-2000:])
        return [f"{ranks} rank(s): exit {result.returncode}"]
    with open(os.path.join(out, "run.json")) as f:
        sync = json.load(f)["synchronisation"]
    print(f"{ranks} rank(s): {json.dumps({k: v for k, v in sync.items() if 'quiet' in k})}")
    quiet = sync["quiet_adam_iterations"]
    reads = sync["quiet_adam_reads"]
    failures = []
    if quiet < 100:
        failures.append(f"{ranks} rank(s): only {quiet} quiet Adam iterations counted")
    if reads["values"] != 0:
        failures.append(f"{ranks} rank(s): {reads['values']} value reads in quiet iterations")
    expected_messages = 0 if ranks == 1 else quiet
    if reads["messages"] != expected_messages:
        failures.append(
            f"{ranks} rank(s): {reads['messages']} message copies in {quiet} quiet "
            f"iterations, expected {expected_messages}"
        )
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args()
    failures = []
    for ranks in args.ranks:
        failures += run(args, ranks)
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
