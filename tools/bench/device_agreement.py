#!/usr/bin/python3
"""CPU and GPU agreement on the shipped cases, and GPU runs that repeat bit for bit.

  device_agreement.py [--tessera BIN] [--out DIR] [--iterations N] [--devices cpu cuda]
                      [--tolerance 1e-5] [CASE ...]

Each case (default: the shipped cases that need no generated data: one network, XPINN, cPINN,
time slabs, causal weights, geometry from CSG and a mesh-free L shape, FBPINN) trains its first
stage for N Adam iterations (default 20, logging every 5, the other stages shortened to one
iteration) on the first device, then twice on the second. Prints per case the largest relative
difference of the logged losses and terms between the devices, and whether the second device's
two runs have identical histories (timings aside). Exit status 1 when a difference exceeds the
tolerance or a repeat differs. Float32 runs part within a few hundred iterations as rounding
differs between devices, so the comparison is of the first iterations: a wrong kernel shows at
once, rounding only later. `--devices cpu cpu` checks the script itself on a CPU-only machine.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

CASES = [
    "cases/poisson2d.json",
    "cases/poisson2d_xpinn.json",
    "cases/heat1d_timeslabs.json",
    "cases/burgers1d_cpinn.json",
    "cases/heat1d.json",
    "cases/plate_hole.json",
    "cases/lshape_poisson.json",
    "cases/fbpinn/cosine_2d.json",
]
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TIMINGS = ("wall_s", "time_s")


def stage_count(case):
    with open(os.path.join(ROOT, case)) as f:
        text = re.sub(r"^\s*//.*$", "", f.read(), flags=re.M)
    return len(json.loads(text)["training"]["stages"])


def run(args, case, device, tag):
    out = os.path.join(os.path.abspath(args.out), os.path.basename(case)[:-5], tag)
    shutil.rmtree(out, ignore_errors=True)
    command = [
        args.tessera,
        "run",
        os.path.join(ROOT, case),
        "--set",
        f"device={device}",
        "--set",
        f"output.directory={out}",
        "--set",
        "training.log_every=5",
        "--set",
        f"training.stages.0.iterations={args.iterations}",
    ]
    for i in range(1, stage_count(case)):
        command += ["--set", f"training.stages.{i}.iterations=1"]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1"),
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{case} on {device}: exit {result.returncode}: "
            f"{result.stderr.strip().splitlines()[-1:]}"
        )
    with open(os.path.join(out, "history.jsonl")) as f:
        records = [json.loads(line) for line in f]
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]


def figures(record):
    values = {"loss": record["loss"]}
    values.update({f"terms.{k}": v for k, v in record.get("terms", {}).items()})
    return values


def largest_difference(a, b):
    worst = 0.0
    for x, y in zip(a, b):
        if x.get("stage") != "adam":
            continue
        fx, fy = figures(x), figures(y)
        for key in fx:
            scale = max(abs(fx[key]), abs(fy.get(key, 0.0)), 1e-30)
            worst = max(worst, abs(fx[key] - fy.get(key, float("nan"))) / scale)
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", default=CASES)
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "device_agreement"))
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--devices", nargs=2, default=["cpu", "cuda"])
    parser.add_argument("--tolerance", type=float, default=1e-5)
    args = parser.parse_args()
    first, second = args.devices
    failures = 0
    print(f"| case | largest relative difference, {first} vs {second} | {second} repeats |")
    print("| --- | --- | --- |")
    for case in args.cases:
        try:
            reference = run(args, case, first, first)
            once = run(args, case, second, f"{second}_1")
            again = run(args, case, second, f"{second}_2")
        except RuntimeError as error:
            print(f"| {case} | failed: {error} | - |")
            failures += 1
            continue
        difference = largest_difference(reference, once)
        repeats = once == again
        failures += difference > args.tolerance or not repeats
        print(f"| {case} | {difference:.2e} | {'bit-identical' if repeats else 'DIFFERENT'} |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
