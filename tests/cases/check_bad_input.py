#!/usr/bin/python3
"""Runs tessera on a bad input and checks that it fails the way a user needs it to.

  check_bad_input.py --out DIR --expect REGEX [--expect REGEX]... -- TESSERA ARGS...

Passes when tessera exits with a non-zero status of its own (no signal, no crash) within the
timeout, prints exactly one line on stderr, that line matches every --expect regular expression
(the file, key, column or path the user has to fix), there is no crash or MPI noise, and no
training progress was printed (bad input must be rejected before training starts). The command
runs in DIR, so nothing is written outside the build tree.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

NOISE = [
    "terminate called",
    "core dumped",
    "Aborted",
    "Segmentation fault",
    "MPI_Abort",
    "application called",
    "BAD TERMINATION",
    "mpiexec",
    "Traceback",
    "what():",
]
PROGRESS = re.compile(r"^\[\s*\d+/\d+\]", re.MULTILINE)


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("usage: check_bad_input.py --out DIR --expect REGEX... -- TESSERA ARGS...")
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=25.0)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]

    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    print("running:", " ".join(command))
    try:
        run = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"FAIL: still running after {args.timeout} s; bad input must be rejected at once")
        return 1
    print(f"exit code {run.returncode}\n--- stdout\n{run.stdout}--- stderr\n{run.stderr}---")

    problems = []
    if run.returncode == 0:
        problems.append("exit code 0 for bad input")
    elif run.returncode < 0 or run.returncode >= 128:
        problems.append(f"killed by a signal or crashed (exit code {run.returncode})")
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr, expected exactly one")
    message = lines[0] if lines else ""
    for pattern in args.expect:
        if not re.search(pattern, message):
            problems.append(f"the error line does not match {pattern!r}")
    for noise in NOISE:
        if noise in run.stdout + run.stderr:
            problems.append(f"output contains {noise!r}")
    if PROGRESS.search(run.stdout) or os.path.exists(os.path.join(out, "history.jsonl")):
        problems.append("training started before the input was rejected")
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
