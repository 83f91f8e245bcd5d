#!/usr/bin/python3
"""A damaged checkpoint is never continued from (docs/output-format.md, "Checkpoints").

  check_checkpoint_damage.py --tessera BIN --case tests/cases/tiny.json --out DIR
                             [--mpiexec MPIEXEC --ranks N --damage subdomain_<id>.pt]

1. A reference run of 40 Adam iterations with a checkpoint every 10 keeps the checkpoints of
   iterations 30 and 40; their manifests record every file's size and FNV-1a 64 checksum.
2. The newest checkpoint of a copy, its subdomain_0.pt (or --damage) truncated: `--restart
   FOLDER` of it fails with one line naming the file and why, and no crash trace; `--restart latest`
   continues from iteration 30 with one warning naming the damaged checkpoint and ends
   bit-identical to the reference (history without timings, and the .h5 fields).
3. The same with one byte of the file changed (its size unchanged) and `--restart auto`.
4. Manifests without "files" (written before checksums) still count: `--restart latest`
   continues from iteration 40 without a warning.
With --mpiexec every run has N ranks, and the manifests must list the files of every rank.
"""
import argparse
import json
import os
import shutil
import sys

from checkpoint_samples import (  # same folder
    field_bytes,
    history_without_timings,
    manifest_file_failures,
    report,
    run_in,
)

SETS = [
    'training.stages=[{"optimizer":"adam","iterations":40,"lr":0.001}]',
    "training.log_every=10",
    "training.checkpoint_every=10",
]
DAMAGED = os.path.join("checkpoints", "00000040")
PREVIOUS = os.path.join("checkpoints", "00000030")


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mpiexec", help="run every case on --ranks ranks with this launcher")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--damage", default="subdomain_0.pt", help="the file to damage")
    return parser.parse_args()


def rerun(args, out, *options):
    """Runs the case into OUT, as it stands, with the reference's settings and OPTIONS."""
    launch = [args.mpiexec, "-n", str(args.ranks)] if args.mpiexec else []
    return run_in(args.tessera, args.case, out, SETS, options, launch=launch)


def copy_of(reference, name):
    copy = os.path.join(os.path.dirname(reference), name)
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(reference, copy)
    return copy


def truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def flip_a_byte(path):
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x01]))


def crash_trace(text):
    return any(mark in text for mark in ("terminate called", "frame #", "Traceback", "Aborted"))


def check_folder_restart_refused(args, copy, failures):
    """--restart FOLDER of the damaged checkpoint: a non-zero exit and one line naming the file."""
    damaged = os.path.join(copy, DAMAGED)
    result = rerun(args, copy, "--restart", damaged)
    # With several ranks the launcher adds its own lines about the aborted job.
    lines = [line for line in result.stderr.splitlines() if line.startswith("tessera")]
    print(f"--restart FOLDER: exit {result.returncode}, standard error {lines}")
    if result.returncode == 0:
        failures.append("--restart FOLDER of a damaged checkpoint succeeded")
    if len(lines) != 1 or f"damaged ({args.damage}: " not in lines[0]:
        failures.append(f"--restart FOLDER: expected one line naming {args.damage}, got {lines}")
    if crash_trace(result.stderr + result.stdout):
        failures.append("--restart FOLDER: a crash trace")


def check_continues_from_previous(args, reference, copy, option, failures):
    """--restart OPTION skips the damaged newest checkpoint and ends like the reference."""
    result = rerun(args, copy, "--restart", option)
    if result.returncode != 0:
        failures.append(f"--restart {option}: exit {result.returncode}: {result.stderr[-1500:]}")
        return
    warnings = [line for line in result.stderr.splitlines() if "damaged" in line]
    print(f"--restart {option}: warnings {warnings}")
    damaged, previous = os.path.join(copy, DAMAGED), os.path.join(copy, PREVIOUS)
    if (
        len(warnings) != 1
        or f"checkpoint {damaged} is damaged ({args.damage}: " not in warnings[0]
        or f"continuing from {previous}" not in warnings[0]
    ):
        failures.append(
            f"--restart {option}: expected one warning naming {damaged}, got {warnings}"
        )
    if "continuing from the checkpoint at iteration 30" not in result.stdout:
        failures.append(f"--restart {option}: did not continue from iteration 30")
    if history_without_timings(copy) != history_without_timings(reference):
        failures.append(f"--restart {option}: the history differs from the reference's")
    if field_bytes(copy) != field_bytes(reference):
        failures.append(f"--restart {option}: the fields differ from the reference's")


def check_old_manifests_count(args, reference, failures):
    copy = copy_of(reference, "old_manifests")
    for folder in (DAMAGED, PREVIOUS):
        path = os.path.join(copy, folder, "manifest.json")
        with open(path) as f:
            manifest = json.load(f)
        del manifest["files"]
        with open(path, "w") as f:
            json.dump(manifest, f, indent=2)
    result = rerun(args, copy, "--restart", "latest")
    print(f"old manifests: exit {result.returncode}")
    if result.returncode != 0 or "warning" in result.stderr:
        failures.append(f"old manifests: exit {result.returncode}: {result.stderr[-1500:]}")
    elif "continuing from the checkpoint at iteration 40" not in result.stdout:
        failures.append("old manifests: did not continue from iteration 40")


def main():
    args = arguments()
    args.out, args.case = os.path.abspath(args.out), os.path.abspath(args.case)
    shutil.rmtree(args.out, ignore_errors=True)
    reference = os.path.join(args.out, "reference")
    result = rerun(args, reference)
    if result.returncode != 0:
        sys.exit(f"FAIL: reference: exit {result.returncode}: {result.stderr[-1500:]}")
    failures = []
    kept = sorted(os.listdir(os.path.join(reference, "checkpoints")))
    if kept != ["00000030", "00000040"]:
        failures.append(f"reference: expected the checkpoints of iterations 30 and 40, got {kept}")
    for folder in (PREVIOUS, DAMAGED):
        failures += manifest_file_failures(os.path.join(reference, folder))

    truncated = copy_of(reference, "truncated")
    truncate(os.path.join(truncated, DAMAGED, args.damage))
    check_folder_restart_refused(args, truncated, failures)
    check_continues_from_previous(args, reference, truncated, "latest", failures)

    flipped = copy_of(reference, "flipped")
    flip_a_byte(os.path.join(flipped, DAMAGED, args.damage))
    check_continues_from_previous(args, reference, flipped, "auto", failures)

    check_old_manifests_count(args, reference, failures)
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
