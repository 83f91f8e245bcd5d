#!/usr/bin/python3
"""An FBPINN case against one network of about the same parameter count and against XPINN on
the same cells, at the same budget, side by side from one invocation:

    /usr/bin/python3 tools/bench/fbpinn.py [--case cases/fbpinn/two_frequency.json]
                                           [--iterations N] [--ranks 1] [--out-dir DIR]

The case runs as written (`fbpinn`); then with `decomposition` removed and `network.hidden`
three equal layers whose parameter count is closest to the FBPINN's (`one network`); then with
`"method": "xpinn"` on the finest grid of the case (no levels, the same subdomain networks;
`xpinn`). Every run keeps the case's points, stages and seed; --iterations shortens every
stage to N. Each runs as `mpiexec.mpich -n RANKS build/tessera run CASE --set ...` with one
thread per rank; the table gives the final relative L2 error of every field, the trainable
parameters of all subdomains (from the summary `tessera run` prints) and the training time (run.json wall_s).
"""
import argparse
import json
import os
import re
import subprocess
import sys

from one_thread import ENV, ROOT
from validation import load_case  # same folder: case files with comments


def parameters_of(widths, inputs, outputs):
    total, previous = 0, inputs
    for width in list(widths) + [outputs]:
        total += (previous + 1) * width
        previous = width
    return total


def equal_width_network(target, inputs, outputs, layers=3):
    """Widths of `layers` equal hidden layers whose parameter count is closest to `target`."""
    best = min(
        range(1, 2048), key=lambda w: abs(parameters_of([w] * layers, inputs, outputs) - target)
    )
    return [best] * layers


def run(args, label, overrides):
    out = os.path.join(args.out_dir, label.replace(" ", "_"))
    command = ["mpiexec.mpich", "-n", str(args.ranks), args.tessera, "run", args.case]
    for override in overrides + [f"output.directory={out}"]:
        command += ["--set", override]
    command.append("--overwrite")
    print("running:", " ".join(command), flush=True)
    result = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-3000:] + result.stderr[-3000:])
        sys.exit(f"{label}: tessera exited with {result.returncode}")
    found = re.search(r"\], (\d+) trainable parameters (per subdomain)?", result.stdout)
    subdomains = re.search(r"decomposition: \w+, (\d+) subdomain\(s\)", result.stdout)
    parameters = int(found.group(1)) if found else None
    if parameters and found.group(2) and subdomains:
        parameters *= int(subdomains.group(1))
    record = json.load(open(os.path.join(out, "run.json")))
    final = record.get("final", {})
    return {
        "label": label,
        "parameters": parameters,
        "rel_l2": final.get("rel_l2", {}),
        "wall_s": record.get("wall_s", final.get("wall_s")),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", default=os.path.join(ROOT, "cases/fbpinn/two_frequency.json"))
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build/tessera"))
    parser.add_argument("--iterations", type=int, default=0, help="every stage's iterations")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "results/bench_fbpinn"))
    args = parser.parse_args()
    args.case = os.path.abspath(args.case)
    case = load_case(args.case)
    decomposition = case.get("decomposition", {})
    if decomposition.get("method") != "fbpinn":
        sys.exit(f'{args.case}: expected a case with "method": "fbpinn"')

    common = []
    if args.iterations:
        stages = [dict(s, iterations=args.iterations) for s in case["training"]["stages"]]
        common.append("training.stages=" + json.dumps(stages))
    results = [run(args, "fbpinn", common)]

    inputs = len(case["coordinates"]) + (1 if "time" in case else 0)
    outputs = len(case["fields"])
    one = equal_width_network(results[0]["parameters"], inputs, outputs)
    results.append(
        run(
            args,
            "one network",
            common + ['decomposition={"method":"none"}', "network.hidden=" + json.dumps(one)],
        )
    )
    xpinn = {"method": "xpinn"}
    for key in ("split", "cuts"):
        if key in decomposition:
            xpinn[key] = decomposition[key]
    hidden = case.get("network", {}).get("hidden", [16, 16])
    results.append(
        run(
            args,
            "xpinn",
            common + ["decomposition=" + json.dumps(xpinn), "network.hidden=" + json.dumps(hidden)],
        )
    )

    fields = case["fields"]
    print(f"\n{os.path.relpath(args.case, ROOT)} on {args.ranks} rank(s)\n")
    print("| method | parameters | " + " | ".join(f"rel_l2({f})" for f in fields) + " | wall s |")
    print("| --- | --- | " + " | ".join("---" for _ in fields) + " | --- |")
    for r in results:
        errors = " | ".join(f"{r['rel_l2'].get(f, float('nan')):.3e}" for f in fields)
        wall = f"{r['wall_s']:.0f}" if r["wall_s"] is not None else "?"
        print(f"| {r['label']} | {r['parameters']} | {errors} | {wall} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
