#!/usr/bin/python3
"""Runs one short `tessera run` into a fresh output folder and checks that it finished cleanly.

  run_case.py --tessera BIN --source SRC --out DIR --case cases/poisson2d.json [--set path=value]...

The case path is relative to the source tree; output.directory is always set to DIR (absolute),
so nothing is written outside the build tree. Prints the final line of history.jsonl and the
CPU and wall time the run took, which is what the accuracy bounds in CMakeLists.txt were
measured from.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--mpiexec", help="run under this launcher (mpiexec.mpich)")
    parser.add_argument("--ranks", type=int, default=1)
    args = parser.parse_args()

    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    command = [args.tessera, "run", os.path.join(args.source, args.case)]
    if args.mpiexec:
        command = [args.mpiexec, "-n", str(args.ranks)] + command
    for override in args.overrides:
        command += ["--set", override]
    command += ["--set", "output.directory=" + out]
    print("running:", " ".join(command), flush=True)

    start = time.monotonic()
    run = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=args.timeout)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    print(
        f"exit code {run.returncode}; wall {wall:.1f} s; cpu {usage.ru_utime + usage.ru_stime:.1f} s"
    )

    problems = []
    if run.returncode != 0:
        problems.append(f"tessera exited with {run.returncode}")
    if "terminate called" in run.stderr or "core dumped" in run.stderr:
        problems.append("tessera crashed")
    history = os.path.join(out, "history.jsonl")
    if not os.path.isfile(history):
        problems.append(f"{history} was not written")
    else:
        with open(history) as f:
            lines = [line for line in f if line.strip()]
        if not lines:
            problems.append(f"{history} is empty")
        else:
            last = json.loads(lines[-1])
            print("final history line:", json.dumps(last))
            if last.get("final") is not True:
                problems.append('the last line of history.jsonl lacks "final": true')
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
