#!/usr/bin/python3
"""A checkpoint that cannot be written (a full disk) costs that checkpoint, not the run.

  check_checkpoint_write_failure.py --tessera BIN --case tests/cases/tiny.json --out DIR

Runs the case for 30 Adam iterations with a checkpoint every 10, the one at iteration 20
failing to write (TESSERA_FAULT=checkpoint_write_fails@20, as if the disk were full). The run
must end normally with its solution written, say so in one warning line, leave no folder of the
failed checkpoint (so a restart never takes it, and a full disk gets its space back), and
complete the later one. Then a
run stopped by its time limit at a checkpoint that fails must not say the checkpoint is written.
"""
import glob
import os
import sys

from checkpoint_samples import ENV, case_arguments, report, run_case  # same folder

SETS = [
    'training.stages=[{"optimizer":"adam","iterations":30,"lr":0.001}]',
    "training.log_every=10",
    "training.checkpoint_every=10",
]


def main():
    args = case_arguments()
    failing = dict(ENV, TESSERA_FAULT="checkpoint_write_fails@20")
    result, _ = run_case(args.tessera, args.case, args.out, SETS, 120, failing)
    failures = []
    if result.returncode != 0:
        failures.append(f"exit {result.returncode}: {result.stderr[-1500:]}")
    warnings = [text for text in result.stderr.splitlines() if "could not be written" in text]
    print("warnings:", warnings)
    if len(warnings) != 1 or "iteration 20" not in warnings[0]:
        failures.append(f"expected one warning naming iteration 20, got {warnings}")
    if "terminate" in result.stderr or "frame #" in result.stderr:
        failures.append("a crash trace on standard error")
    if not glob.glob(os.path.join(args.out, "*.h5")):
        failures.append("no solution (.h5) written")
    failed = os.path.join(args.out, "checkpoints", "00000020")
    if os.path.exists(os.path.join(failed, "manifest.json")):
        failures.append("the failed checkpoint has a manifest")
    if os.path.exists(failed):
        failures.append("the failed checkpoint's folder was left behind")
    if not os.path.exists(os.path.join(args.out, "checkpoints", "00000030", "manifest.json")):
        failures.append("the final checkpoint is not complete")
    # Stopped by the time limit at a checkpoint that fails, the stop line must not claim it.
    sets = ["training.time_limit=0.001", "training.log_every=10"]
    failing = dict(ENV, TESSERA_FAULT="checkpoint_write_fails@10")
    result, _ = run_case(args.tessera, args.case, args.out + "_stopped", sets, 120, failing)
    stop = [text for text in result.stdout.splitlines() if "stopped early" in text]
    print("stop line:", stop)
    if len(stop) != 1 or "could not be written" not in stop[0] or "written to" in stop[0]:
        failures.append(f"expected a stop line saying its checkpoint was not written, got {stop}")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
