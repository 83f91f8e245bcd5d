#!/usr/bin/python3
"""Gradient accumulation and precision on the seed problem, side by side from one invocation:

    /usr/bin/python3 tools/bench/batch_precision.py [--points 65536] [--iterations 40]

Trains cases/poisson2d.json ([2, 50, 50, 50, 1] tanh, float32) on one rank with one thread for
--iterations Adam steps on --points collocation points, as one pass and in 4 and 16 parts
(training.batch), then with "precision": "fp32" and "bf16" in one pass (and fp32 on the
reverse derivative engine, which bf16 products use). Reported per run:
ms per iteration (the compute phase of the timing table over the iterations), the resident
memory peak of the rank and the part training added to it, and the relative L2 error at the end.
A run with a GPU (--device cuda) adds "tf32".
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from one_thread import ENV, ROOT


def run(binary, out, points, iterations, device, extra):
    command = [
        binary,
        "run",
        os.path.join(ROOT, "cases", "poisson2d.json"),
        "--set",
        f"output.directory={out}",
        "--set",
        f"device={device}",
        "--set",
        f"training.collocation.points={points}",
        "--set",
        f"training.log_every={iterations}",
        "--overwrite",
    ]
    for setting in extra:
        command += ["--set", setting]
    result = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(result.stdout[-2000:] + result.stderr[-2000:])
    text = result.stdout
    compute = float(re.search(r"^\s+compute\s+([0-9.]+)", text, re.M).group(1))
    peak = float(re.search(r"^peak memory per rank, MiB:\s+([0-9.]+)", text, re.M).group(1))
    added = float(re.search(r"^\s+of it added by training:\s+([0-9.]+)", text, re.M).group(1))
    error = json.load(open(os.path.join(out, "run.json")))["final"]["rel_l2"]["u"]
    return 1000 * compute / iterations, peak, added, error


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument("--points", type=int, default=65536)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    def stage(precision):
        extra = f',"precision":"{precision}"' if precision else ""
        return (
            f'training.stages=[{{"optimizer":"adam","iterations":{args.iterations},'
            f'"lr":0.001{extra}}}]'
        )

    runs = [
        ("1 part", [stage("")]),
        ("4 parts", [stage(""), f'training.batch={{"points":{-(-args.points // 4)}}}']),
        ("16 parts", [stage(""), f'training.batch={{"points":{-(-args.points // 16)}}}']),
        ("fp32", [stage("fp32")]),
        # bf16 products run on the reverse engine; fp32 on it too separates the two effects.
        ("fp32 rev", [stage("fp32"), 'training.derivatives="autograd"']),
        ("bf16", [stage("bf16")]),
    ]
    if args.device.startswith("cuda"):
        runs.append(("tf32", [stage("tf32")]))
    print(
        f"seed problem, {args.points} collocation points, {args.iterations} Adam iterations, "
        f"1 rank, {args.device}"
    )
    print(f"{'run':10} {'ms/iter':>9} {'peak MiB':>9} {'training MiB':>13} {'rel L2':>10}")
    with tempfile.TemporaryDirectory() as work:
        for label, extra in runs:
            out = os.path.join(work, label.replace(" ", "_"))
            ms, peak, added, error = run(
                args.tessera, out, args.points, args.iterations, args.device, extra
            )
            print(f"{label:10} {ms:9.1f} {peak:9.1f} {added:13.1f} {error:10.3e}")


if __name__ == "__main__":
    main()
