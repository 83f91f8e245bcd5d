#!/usr/bin/python3
"""A rank killed with SIGKILL (a node failure, the OOM killer) must end the whole job quickly,
never leave the other ranks waiting for its messages.

  check_killed_rank.py --tessera BIN --mpiexec MPIEXEC --case CASE --out DIR [--ranks 4]
                       [--max-seconds 30]

Starts a long run, waits for its first history line, kills the process of the last rank with
SIGKILL and measures how long the job takes to end; it must end within --max-seconds with a
non-zero status.
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
    parser.add_argument("--max-seconds", type=float, default=30.0)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [
        args.mpiexec,
        "-n",
        str(args.ranks),
        args.tessera,
        "run",
        os.path.abspath(args.case),
        "--set",
        "training.stages.0.iterations=100000",
        "--set",
        "training.log_every=10",
        "--set",
        f"output.directory={out}",
    ]
    job = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    history = os.path.join(out, "history.jsonl")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
        os.path.exists(history) and os.path.getsize(history) > 0
    ):
        time.sleep(0.05)
    pids = subprocess.run(
        ["pgrep", "-f", f"output.directory={out}$"], capture_output=True, text=True
    ).stdout.split()
    ranks = [int(p) for p in pids if os.path.basename(os.readlink(f"/proc/{p}/exe")) == "tessera"]
    if len(ranks) != args.ranks:
        job.kill()
        sys.exit(f"FAIL: expected {args.ranks} tessera processes, found {ranks}")
    victim = max(ranks)  # started last: in practice the last rank
    os.kill(victim, 9)
    killed = time.monotonic()
    try:
        job.communicate(timeout=args.max_seconds + 30)
    except subprocess.TimeoutExpired:
        subprocess.run(["pkill", "-KILL", "-f", f"output.directory={out}$"])
        sys.exit(f"FAIL: the job still ran {args.max_seconds + 30:.0f} s after one rank was killed")
    elapsed = time.monotonic() - killed
    print(f"killed pid {victim}; the job ended {elapsed:.1f} s later with status {job.returncode}")
    if job.returncode == 0:
        sys.exit("FAIL: the job reported success after losing a rank")
    if elapsed > args.max_seconds:
        sys.exit(f"FAIL: the job took {elapsed:.1f} s to end (limit {args.max_seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
