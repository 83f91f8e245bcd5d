#!/usr/bin/python3
"""Checks that a failure on one rank ends the whole job quickly, with a message that names it.

  check_failure.py --tessera BIN --mpiexec MPIEXEC --case CASE --out DIR --ranks 4
                   --expect TEXT [--expect TEXT]... [--max-seconds 30] [--set path=value]...

Nothing blocks forever (docs/architecture.md): an exception on one rank must end every rank
(MPI_Abort) with a non-zero status and a message naming the rank, never a hang. Runs the case
under a hard timeout, then checks the exit status, the elapsed time, and that the
"tessera: error on rank" line contains every --expect text (a line from the
rank that aborted first: MPI_Abort ends the others before they print).
"""
import argparse
import os
import shutil
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--max-seconds", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args()

    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    command = [args.mpiexec, "-n", str(args.ranks), args.tessera, "run", os.path.abspath(args.case)]
    for override in args.overrides:
        command += ["--set", override]
    command += ["--set", "output.directory=" + out]
    env = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
    print("running:", " ".join(command), flush=True)
    start = time.monotonic()
    try:
        # A new session, so that a hang can be killed with every rank it started.
        process = subprocess.Popen(
            command,
            cwd=out,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        stdout, stderr = process.communicate(timeout=args.timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        stdout, stderr = process.communicate()
        sys.stdout.write(stdout[-4000:])
        sys.stderr.write(stderr[-4000:])
        print(f"FAIL: the job still ran after {args.timeout:.0f} s (hang)")
        return 1
    elapsed = time.monotonic() - start
    sys.stdout.write(stdout[-4000:])
    sys.stderr.write(stderr[-4000:])
    print(f"exit status {code}; {elapsed:.1f} s", flush=True)

    failures = []
    if code == 0:
        failures.append("the job exited with status 0")
    if elapsed >= args.max_seconds:
        failures.append(f"the job took {elapsed:.1f} s (limit {args.max_seconds:.0f} s)")
    # "in", not startswith: two ranks' messages can share a line when both abort at once.
    error_lines = [
        line for line in (stdout + stderr).splitlines() if "tessera: error on rank" in line
    ]
    if not error_lines:
        failures.append("no 'tessera: error on rank ...' line in the output")
    else:
        # One message must carry everything (not "subdomain 3" from one rank, "non-finite" from
        # another).
        if not any(all(text in line for text in args.expect) for line in error_lines):
            missing = [text for text in args.expect if text not in error_lines[0]]
            failures.append(
                f"no error message contains all of {args.expect!r}; the first lacks "
                f"{missing!r}: {error_lines[0]!r}"
            )
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
