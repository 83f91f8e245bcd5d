#!/usr/bin/python3
"""The divergence guard: a run whose loss turns non-finite rolls the subdomain back to
its last good state with a halved learning rate, and stops after the third failure with one
message naming the subdomain, the term and the iteration.

  check_divergence.py --out DIR --exit CODE --rollbacks N [--expect TEXT]... -- TESSERA ARGS...

Checks the exit status, the number of "rolled back" warnings, every --expect text in the
output, and (for a recovered run, exit 0) that the output file was written; run.json says
"completed" or, for a run that stopped with the error, "failed" with the message, and
tessera.log then ends with the error line printed on stderr.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--exit", type=int, required=True)
    parser.add_argument("--rollbacks", type=int, required=True)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [a for a in args.command if a != "--"]
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    command += ["--set", f"output.directory={out}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    text = result.stdout + result.stderr
    rollbacks = text.count("rolled back to iteration")
    failures = []
    if result.returncode != args.exit:
        failures.append(f"exit {result.returncode}, expected {args.exit}")
    if rollbacks != args.rollbacks:
        failures.append(f"{rollbacks} roll-backs, expected {args.rollbacks}")
    failures += [f"output lacks '{e}'" for e in args.expect if e not in text]
    # tessera.log keeps what the console showed and every warning, with its time.
    log_path = os.path.join(out, "tessera.log")
    log = open(log_path).read() if os.path.exists(log_path) else ""
    if not log.startswith("=== "):
        failures.append(f"{log_path} is missing or lacks its header line")
    if log.count("rolled back to iteration") != args.rollbacks:
        failures.append(
            f"{log_path} holds {log.count('rolled back to iteration')} roll-back "
            f"warnings, expected {args.rollbacks}"
        )
    if args.exit == 0 and "done in" not in log:
        failures.append(f"{log_path} lacks the console's final progress line")
    if args.exit == 0 and not glob.glob(os.path.join(out, "*.h5")):
        failures.append("the recovered run wrote no output file")
    # A run that fails after its log is open ends the log with the line it ends with on stderr.
    if args.exit != 0:
        errors = [line for line in result.stderr.splitlines() if "tessera: error" in line]
        last = log.rstrip("\n").splitlines()[-1] if log.strip() else ""
        if not errors or not last.endswith(errors[-1]):
            failures.append(f"{log_path} does not end with the error line {errors[-1:]}: {last!r}")
    # A run that fails leaves run.json with status "failed" and the message.
    run_path = os.path.join(out, "run.json")
    run = json.load(open(run_path)) if os.path.exists(run_path) else {}
    expected_status = "completed" if args.exit == 0 else "failed"
    if run.get("status") != expected_status:
        failures.append(f"{run_path}: status {run.get('status')!r}, expected {expected_status!r}")
    if args.exit != 0 and "diverged" not in run.get("message", ""):
        failures.append(f"{run_path} lacks the failure message")
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        print(text[-3000:])
        return 1
    print(f"exit {result.returncode}, {rollbacks} roll-back(s), messages as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
