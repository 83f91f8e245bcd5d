#!/usr/bin/python3
"""`--merge FILE` applies a JSON merge patch to the case before the --set overrides.

  check_merge.py --tessera BIN --case tests/cases/tiny.json --merge overlays/more.json --out DIR

Runs the case with the patch and one --set of a key the patch also sets, then reads the case
that run.json records (the document after the patch and the overrides): objects merged key by
key (network.hidden kept, network.activation changed), an array replaced whole (the stages),
null removing a key (exact), and the --set winning over the patch (the stage's iterations).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--merge", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    line = [
        args.tessera,
        "run",
        args.case,
        "--merge",
        args.merge,
        "--set",
        "training.stages.0.iterations=3",
        "--set",
        f"output.directory={out}",
    ]
    print("running:", " ".join(line), flush=True)
    run = subprocess.run(line, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        sys.exit(f"FAIL: exit {run.returncode}: {run.stderr}")
    with open(os.path.join(out, "run.json")) as f:
        case = json.load(f)["case"]
    failures = []
    expected = {
        "network": {"hidden": [8], "activation": "sin"},
        "stages": [{"optimizer": "adam", "iterations": 3, "lr": 2e-3}],
        "points": 100,
        "log_every": 10,
    }
    got = {
        "network": case["network"],
        "stages": case["training"]["stages"],
        "points": case["training"]["collocation"]["points"],
        "log_every": case["training"]["log_every"],
    }
    for key, value in expected.items():
        if got[key] != value:
            failures.append(f"{key}: {got[key]!r}, expected {value!r}")
    if "exact" in case:
        failures.append("exact is still in the case; the patch's null removes it")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
