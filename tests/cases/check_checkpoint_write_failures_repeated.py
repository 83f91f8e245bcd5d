#!/usr/bin/python3
"""A disk that stays full costs one warning and a count, and leaves only complete checkpoints.

  check_checkpoint_write_failures_repeated.py --tessera BIN --case tests/cases/tiny.json --out DIR

Runs the case for 80 Adam iterations with a checkpoint every 10, every checkpoint from
iteration 30 on failing to write (TESSERA_FAULT=checkpoint_write_fails_from@30, as if the disk
filled up for good): 6 failures, the final checkpoint's included. The run must end normally with
its solution written, give one warning for the first failure and one line with the count at the
end, and leave the two complete checkpoints written before (20 and 10) and nothing else under
checkpoints/.
"""
import glob
import os
import sys

from checkpoint_samples import ENV, case_arguments, manifest_file_failures, report, run_case

SETS = [
    'training.stages=[{"optimizer":"adam","iterations":80,"lr":0.001}]',
    "training.log_every=10",
    "training.checkpoint_every=10",
]


def main():
    args = case_arguments()
    failing = dict(ENV, TESSERA_FAULT="checkpoint_write_fails_from@30")
    result, _ = run_case(args.tessera, args.case, args.out, SETS, 120, failing)
    failures = []
    if result.returncode != 0:
        failures.append(f"exit {result.returncode}: {result.stderr[-1500:]}")
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    print("warnings:", warnings)
    first = [line for line in warnings if "could not be written" in line]
    if len(first) != 1 or "iteration 30 " not in first[0]:
        failures.append(f"expected one warning naming iteration 30, got {first}")
    counted = [line for line in warnings if "failed 6 times" in line]
    if len(counted) != 1 or "from iteration 30 to 80" not in counted[0]:
        failures.append(f"expected one line counting 6 failures from 30 to 80, got {counted}")
    if len(warnings) != 2:
        failures.append(f"expected 2 warning lines, got {len(warnings)}")
    if "terminate" in result.stderr or "frame #" in result.stderr:
        failures.append("a crash trace on standard error")
    if not glob.glob(os.path.join(args.out, "*.h5")):
        failures.append("no solution (.h5) written")
    left = sorted(os.listdir(os.path.join(args.out, "checkpoints")))
    print("checkpoints left:", left)
    if left != ["00000010", "00000020"]:
        failures.append(f"expected only the complete checkpoints 10 and 20, found {left}")
    for name in left:
        failures += manifest_file_failures(os.path.join(args.out, "checkpoints", name))
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
