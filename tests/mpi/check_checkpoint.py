#!/usr/bin/python3
"""Checkpoints and restarts, end to end with the tessera binary.

  check_checkpoint.py --tessera BIN --mpiexec MPIEXEC --case tests/mpi/xpinn4.json --out DIR

1. An uninterrupted 2-rank run (Adam then L-BFGS) is the reference.
2. SIGTERM to every rank of the same run after its first log line: the job stops at the next
   log iteration, leaves a complete checkpoint (manifest.json) and says how to continue.
3. `--restart latest` on 2 ranks and, from a copy of the same checkpoint, on 1 and 4 ranks:
   each ends with exactly the reference's history (timings aside) and /fields, bit for bit.
4. kill -9 while the checkpoint of iteration 200 is being written (TESSERA_FAULT makes rank 0
   die after the subdomain files, before the manifest): that folder never counts, the one of
   iteration 180 stays the latest, and a restart from it still ends exactly like the reference.
5. A restart from the reference's checkpoint inside the L-BFGS stage (iteration 620: the
   L-BFGS history comes back from the file) ends exactly like the reference.
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from check_ranks_identical import (
    fields as read_fields,
    history,
)  # same folder: history without timings

ENV = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
SETS = [
    'training.stages=[{"optimizer":"adam","iterations":600,"lr":0.001},{"optimizer":"lbfgs","iterations":40}]',
    "training.log_every=20",
    "training.checkpoint_every=20",
]


def signal_rank(pattern, rank):
    """SIGTERM to the process matching `pattern` whose launcher gave it MPI rank `rank` (MPICH's
    PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK); to every match when none says its rank."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    chosen = []
    for pid in found:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = dict(
                    item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item
                )
        except OSError:
            continue
        value = environ.get(b"PMI_RANK", environ.get(b"OMPI_COMM_WORLD_RANK"))
        if value is not None and int(value) == rank:
            chosen.append(pid)
    for pid in chosen or found:
        os.kill(int(pid), signal.SIGTERM)


def command(args, ranks, out, extra=()):
    line = [args.mpiexec, "-n", str(ranks), args.tessera, "run", args.case]
    for s in SETS + [f"output.directory={out}"]:
        line += ["--set", s]
    return line + list(extra)


def run(args, ranks, out, extra=(), env=ENV, expect_ok=True):
    print("running:", " ".join(command(args, ranks, out, extra)), flush=True)
    result = subprocess.run(
        command(args, ranks, out, extra),
        env=env,
        capture_output=True,
        text=True,
        timeout=args.timeout,
    )
    if expect_ok and result.returncode != 0:
        sys.stdout.write(result.stdout[-3000:])
        sys.stderr.write(result.stderr[-3000:])
        sys.exit(f"FAIL: exit {result.returncode}")
    return result


def fields(out):
    name, arrays = read_fields(out)
    return name, {field: array.tobytes() for field, array in arrays.items()}


def same_as_reference(label, reference, out, failures):
    a, b = history(reference), history(out)
    if a != b:
        first = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        failures.append(
            f"{label}: history differs from the reference from line {first + 1} "
            f"({len(b)} lines vs {len(a)})"
        )
    if fields(reference) != fields(out):
        failures.append(f"{label}: /fields differ from the reference")
    if not failures or not failures[-1].startswith(label):
        print(
            f"{label}: identical to the uninterrupted run ({len(b)} history lines, /fields bitwise)"
        )


def manifests(out):
    return sorted(glob.glob(os.path.join(out, "checkpoints", "*", "manifest.json")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=150.0)
    args = parser.parse_args()
    args.out, args.case = os.path.abspath(args.out), os.path.abspath(args.case)
    shutil.rmtree(args.out, ignore_errors=True)
    failures = []

    reference = os.path.join(args.out, "reference")
    run(args, 2, reference)

    # 2. SIGTERM to every rank once training is under way.
    stopped = os.path.join(args.out, "stopped")
    os.makedirs(stopped)
    process = subprocess.Popen(
        command(args, 2, stopped),
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        path = os.path.join(stopped, "history.jsonl")
        if os.path.exists(path) and os.path.getsize(path) > 0:
            break
        time.sleep(0.05)
    # Rank 1 only: one rank's signal must stop every rank, and rank 0 (which writes run.json)
    # must still name it. Not mpiexec itself, which would report its own status instead.
    signal_rank(f"^{args.tessera} run .*output.directory={stopped}$", 1)
    output, errors = process.communicate(timeout=args.timeout)
    done = [json.loads(line)["iteration"] for line in open(os.path.join(stopped, "history.jsonl"))]
    print(
        f"SIGTERM: exit {process.returncode}, stopped at iteration {done[-1]}, checkpoints {manifests(stopped)}"
    )
    # 75: stopped with a checkpoint to continue from (docs/troubleshooting.md).
    if process.returncode != 75:
        failures.append(f"SIGTERM: exit {process.returncode}, expected 75: {errors.strip()[-500:]}")
    with open(os.path.join(stopped, "run.json")) as f:
        record = json.load(f)
    expected = {
        "status": "stopped",
        "stop_reason": "SIGTERM",
        "checkpoint": "checkpoints/%08d" % done[-1],
    }
    if {key: record.get(key) for key in expected} != expected:
        failures.append(
            f"SIGTERM: run.json status {record.get('status')!r}, "
            f"{record.get('stop_reason')!r}, {record.get('checkpoint')!r}; "
            f"expected {expected}"
        )
    if "stopped early (SIGTERM)" not in output or "--restart latest" not in output:
        failures.append(
            f"SIGTERM: no 'stopped early (SIGTERM) ... --restart latest' message: {output[-800:]}"
        )
    if not manifests(stopped) or done[-1] >= 600:
        failures.append("SIGTERM: no complete checkpoint, or the run was not stopped early")

    # 3. Restart on 2, 1 and 4 ranks from copies of that checkpoint.
    for ranks in (2, 1, 4):
        copy = os.path.join(args.out, f"restart_{ranks}")
        shutil.copytree(stopped, copy)
        run(args, ranks, copy, ["--restart", "latest"])
        same_as_reference(f"restart on {ranks} rank(s)", reference, copy, failures)

    # 4. kill -9 during the checkpoint of iteration 200.
    killed = os.path.join(args.out, "killed")
    result = run(
        args, 2, killed, env=dict(ENV, TESSERA_FAULT="kill_before_manifest@200"), expect_ok=False
    )
    folders = sorted(
        os.path.basename(p) for p in glob.glob(os.path.join(killed, "checkpoints", "*"))
    )
    complete = [os.path.basename(os.path.dirname(p)) for p in manifests(killed)]
    print(
        f"kill -9 in checkpoint 200: exit {result.returncode}, folders {folders}, complete {complete}"
    )
    if result.returncode == 0 or complete != ["00000160", "00000180"] or "00000200" not in folders:
        failures.append(
            f"kill -9: expected 160 and 180 complete and 200 without manifest, got {folders}, "
            f"complete {complete}, exit {result.returncode}"
        )
    run(args, 2, killed, ["--restart", "latest"])
    same_as_reference("restart after kill -9", reference, killed, failures)

    # 5. Restart inside the L-BFGS stage from the reference's own checkpoint of iteration 620.
    inside = os.path.join(args.out, "inside_lbfgs")
    shutil.copytree(reference, inside)
    shutil.rmtree(os.path.join(inside, "checkpoints", "00000640"))
    run(args, 2, inside, ["--restart", "latest"])
    same_as_reference("restart inside L-BFGS", reference, inside, failures)

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
