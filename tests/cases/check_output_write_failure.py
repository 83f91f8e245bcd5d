#!/usr/bin/python3
"""A run whose results cannot be written (a full disk) ends cleanly and can be finished later.

  check_output_write_failure.py --tessera BIN --case tests/cases/tiny.json --out DIR
                                (--inject | --full-disk)

Runs the case with a checkpoint every 10 iterations, so that its results cannot be written:
  --inject     TESSERA_FAULT=output_write_fails: HDF5's own writes of the output file fail
               (a file size limit, EFBIG), as they do on a disk that fills up during the write;
  --full-disk  the output folder is a 48 KiB tmpfs (needs the right to mount one: without it
               the check is skipped with exit status 77).
The run must end with exit status 74 (no signal), one error line naming the file and the
cause, run.json "status": "failed" with that message, no temporary files and at most two
checkpoints. Then, with room again, `--restart latest` must write the output.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from checkpoint_samples import ENV, report, run_in  # same folder

EXIT_WRITE_FAILED = 74
SETS = ["training.checkpoint_every=10", "training.log_every=10"]
REASON = re.compile(r"No space left on device|File too large|Disk quota exceeded")
CRASH = re.compile(r"Segmentation fault|Caught signal|infinite loop closing|terminate called")


def run(args, out, env, *extra):
    return run_in(args.tessera, args.case, out, SETS, extra, env=env)


def failed_run_problems(result, out):
    """What is wrong with the failed run's exit, message and folder."""
    problems = []
    print(result.stdout[-1500:], result.stderr[-3000:], sep="\n")
    if result.returncode != EXIT_WRITE_FAILED:
        problems.append(f"exit status {result.returncode}, expected {EXIT_WRITE_FAILED}")
    if CRASH.search(result.stderr):
        problems.append("a crash on standard error")
    errors = [text for text in result.stderr.splitlines() if text.startswith("tessera: error")]
    if len(errors) != 1:
        problems.append(f"expected one error line, got {errors}")
    elif not REASON.search(errors[0]) or not re.search(re.escape(out) + r"/\S+", errors[0]):
        problems.append(f"the error line names no file of {out} or no cause: {errors[0]}")
    try:
        with open(os.path.join(out, "run.json")) as f:
            record = json.load(f)
        if record.get("status") != "failed" or not REASON.search(record.get("message", "")):
            problems.append(f"run.json says {record.get('status')!r}: {record.get('message')!r}")
    except (OSError, ValueError) as error:
        problems.append(f"run.json unreadable: {error}")
    checkpoints = glob.glob(os.path.join(out, "checkpoints", "*"))
    if len(checkpoints) > 2:
        problems.append(f"{len(checkpoints)} checkpoints kept: {sorted(checkpoints)}")
    leftovers = [n for n in os.listdir(out) if n.endswith(".partial")]
    if leftovers:
        problems.append(f"temporary output files left behind: {leftovers}")
    return problems


def restart_problems(args, out):
    """What is wrong with the `--restart latest` run that should write the output."""
    result = run(args, out, ENV, "--restart", "latest")
    print(result.stdout[-800:], result.stderr[-1500:], sep="\n")
    if result.returncode != 0:
        return [f"--restart latest exited with {result.returncode}"]
    problems = []
    name = os.path.splitext(os.path.basename(args.case))[0]
    for suffix in (".h5", ".xmf"):
        if not os.path.isfile(os.path.join(out, name + suffix)):
            problems.append(f"--restart latest wrote no {name}{suffix}")
    with open(os.path.join(out, "run.json")) as f:
        status = json.load(f).get("status")
    if status != "completed":
        problems.append(f"after --restart latest run.json says {status!r}")
    return problems


def injected(args):
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    failing = dict(ENV, TESSERA_FAULT="output_write_fails")
    result = run(args, args.out, failing)
    return failed_run_problems(result, args.out) + restart_problems(args, args.out)


def mount_tmpfs(folder, size):
    command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", folder]
    try:
        return subprocess.run(command, capture_output=True, text=True).returncode == 0
    except OSError:
        return False


def full_disk(args):
    folder = os.path.abspath(args.out)
    if os.path.ismount(folder):  # left mounted by a run that was killed
        subprocess.run(["umount", folder])
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    if not mount_tmpfs(folder, "48k"):
        print("skipped: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)")
        sys.exit(77)
    try:
        out = os.path.join(folder, "run")
        problems = failed_run_problems(run(args, out, ENV), out)
        # The user makes room; the checkpoints and the history are still there to go on from.
        remount = ["mount", "-o", "remount,size=4m", folder]
        subprocess.run(remount, check=True)
        return problems + restart_problems(args, out)
    finally:
        subprocess.run(["umount", folder])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    variant = parser.add_mutually_exclusive_group(required=True)
    variant.add_argument("--inject", action="store_true")
    variant.add_argument("--full-disk", action="store_true")
    args = parser.parse_args()
    return report(injected(args) if args.inject else full_disk(args))


if __name__ == "__main__":
    sys.exit(main())
