#!/usr/bin/python3
"""Adam's learning-rate decay and gradient clipping act as the case says.

Runs tests/cases/tiny.json twice (200 Adam iterations, lr 1e-2 halved every 50, log every 50):
- unclipped: history "lr" is 1e-2 * 0.5^floor((iteration - 1) / 50) and the loss falls;
- "clip": 1e-12: Adam's update is m / (sqrt(v) + 1e-8), so gradients clipped to a norm of 1e-12
  leave the network where it started: the loss changes by less than 1e-4 relative.

  check_adam_schedule.py --tessera BIN --case tests/cases/tiny.json --out DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def run(tessera, case, out, stage):
    shutil.rmtree(out, ignore_errors=True)
    command = [
        tessera,
        "run",
        case,
        "--set",
        "training.stages=[" + json.dumps(stage) + "]",
        "--set",
        "training.log_every=50",
        # Fixed weights: balancing would change the logged (weighted) loss without a step.
        "--set",
        'training.weights={"adaptive": "none"}',
        "--set",
        "output.directory=" + out,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=50)
    if result.returncode != 0:
        print(result.stdout, result.stderr)
        sys.exit(1)
    with open(os.path.join(out, "history.jsonl")) as f:
        return [json.loads(line) for line in f]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    stage = {
        "optimizer": "adam",
        "iterations": 200,
        "lr": 1e-2,
        "decay": {"rate": 0.5, "every": 50},
    }
    free = run(args.tessera, args.case, os.path.join(args.out, "free"), stage)
    clipped = run(
        args.tessera, args.case, os.path.join(args.out, "clipped"), dict(stage, clip=1e-12)
    )
    failures = []
    for record in free[:-1]:  # the last line is the final evaluation
        # The record at iteration i reports the lr of its last step, i - 1 (0-based).
        expected = 1e-2 * 0.5 ** ((record["iteration"] - 1) // 50)
        if abs(record["lr"] - expected) > 1e-15:
            failures.append(f"iteration {record['iteration']}: lr {record['lr']} != {expected}")
    if not free[-1]["loss"] < 0.5 * free[0]["loss"]:
        failures.append(f"unclipped loss did not fall: {free[0]['loss']} -> {free[-1]['loss']}")
    change = abs(clipped[-1]["loss"] - clipped[0]["loss"]) / clipped[0]["loss"]
    if not change < 1e-4:
        failures.append(f"clip 1e-12 still moved the loss by {change:.2e} relative")
    print(
        f"lr: {[r['lr'] for r in free[:-1]]}; loss {free[0]['loss']:.3e} -> {free[-1]['loss']:.3e};"
        f" clipped relative change {change:.2e}"
    )
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
