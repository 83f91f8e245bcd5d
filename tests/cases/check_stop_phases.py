#!/usr/bin/python3
"""A stop signal is acted on within seconds in every phase (docs/troubleshooting.md, "Time
limits and signals"): SIGTERM during set-up, and during an L-BFGS stage whose log interval is
far longer than the grace period, ends the run within --within seconds with exit status 75,
run.json status "stopped" and, where one exists, a checkpoint that a restart continues.

  check_stop_phases.py --tessera BIN --case tests/cases/tiny.json --work DIR {setup,lbfgs}
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from history import read_history

EXIT_STOPPED = 75


def start(args, folder, sets, *options):
    command = [args.tessera, "run", args.case, "--set", f"output.directory={folder}"]
    for s in sets:
        command += ["--set", s]
    return subprocess.Popen(
        command + list(options), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def wait_for(condition, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def stop_and_time(process, failures, within):
    sent = time.time()
    process.send_signal(signal.SIGTERM)
    try:
        output = process.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        output = process.communicate()[0]
    took = time.time() - sent
    if took > within:
        failures.append(f"the run ended {took:.1f} s after SIGTERM, expected <= {within} s")
    if process.returncode != EXIT_STOPPED:
        failures.append(f"exit status {process.returncode}, expected {EXIT_STOPPED}")
    return output, took


def setup(args, folder, failures):
    # Thousands of subdomains: building their networks and point sets takes many seconds.
    sets = ['decomposition={"method": "xpinn", "split": {"x": %d}}' % args.subdomains]
    process = start(args, folder, sets)
    run_json = os.path.join(folder, "run.json")
    if not wait_for(lambda: os.path.exists(run_json), 60):
        failures.append("the run never claimed its output folder")
    # The stop handlers are installed before the folder is claimed; the subdomains are built
    # after it, which takes well under a second on a fast machine: signal at once.
    time.sleep(0.05)
    output, took = stop_and_time(process, failures, args.within)
    if "iteration" in "".join(line for line in output.splitlines() if line.startswith("[")):
        failures.append("training started although the signal came during set-up")
    return output, took, read_run(folder)


def lbfgs(args, folder, failures):
    # Adam on 64 points with checkpoints, then L-BFGS on many points: its first log interval
    # lasts far longer than the grace period.
    sets = [
        "training.stages="
        + json.dumps(
            [
                {"optimizer": "adam", "iterations": 200, "lr": 1e-3},
                {"optimizer": "lbfgs", "iterations": 100000, "points": 200000, "tolerance": 1e-30},
            ]
        ),
        "training.log_every=100",
        "training.checkpoint_every=100",
        "network.hidden=[64,64,64]",
    ]
    process = start(args, folder, sets)
    history = os.path.join(folder, "history.jsonl")

    def reached():
        return os.path.exists(history) and any(r["iteration"] == 200 for r in read_history(folder))

    if not wait_for(reached, 120):
        failures.append("the Adam stage never reached iteration 200")
    time.sleep(1.0)
    output, took = stop_and_time(process, failures, args.within)
    run = read_run(folder)
    checkpoint = run.get("checkpoint", "")
    if checkpoint != "checkpoints/00000200":
        failures.append(f"run.json names checkpoint {checkpoint!r}, expected the Adam stage's last")
    # The checkpoint is usable: the run continues from it (one L-BFGS iteration left).
    again = subprocess.run(
        [args.tessera, "run", args.case, "--set", f"output.directory={folder}"]
        + [x for s in sets for x in ("--set", s)]
        + ["--set", "training.stages.1.iterations=1", "--restart", "auto"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if (
        again.returncode != 0
        or "continuing from the checkpoint at iteration 200" not in again.stdout
    ):
        failures.append(
            "--restart auto did not continue from the checkpoint:\n"
            + (again.stdout + again.stderr)[-1500:]
        )
    return output, took, run


def read_run(folder):
    path = os.path.join(folder, "run.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--within", type=float, default=10.0)
    parser.add_argument("--subdomains", type=int, default=6000)
    parser.add_argument("phase", choices=["setup", "lbfgs"])
    args = parser.parse_args()
    args.case = os.path.abspath(args.case)
    folder = os.path.join(os.path.abspath(args.work), args.phase)
    shutil.rmtree(folder, ignore_errors=True)
    failures = []
    output, took, run = globals()[args.phase](args, folder, failures)
    expected_phase = "set-up" if args.phase == "setup" else "training"
    if run.get("status") != "stopped" or run.get("stop_reason") != "SIGTERM":
        failures.append(
            f"run.json: status {run.get('status')!r}, stop_reason "
            f"{run.get('stop_reason')!r}; expected 'stopped', 'SIGTERM'"
        )
    if run.get("stopped_in") != expected_phase:
        failures.append(
            f"run.json: stopped_in {run.get('stopped_in')!r}, expected {expected_phase!r}"
        )
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        print(output[-2000:])
        return 1
    print(f"{args.phase}: SIGTERM acted on in {took:.1f} s, run.json says stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
