#!/usr/bin/env python3
"""Iteration time of cases/poisson2d_xpinn.json (4 subdomains) on 1, 2 and 4 ranks, and the
share of neighbour exchange + wait in it, from one invocation:

    /usr/bin/python3 tools/bench/decomposition_scaling.py [--iterations 300] [--ranks 1 2 4]

Each run trains Adam only (no L-BFGS) with one thread per rank and reads the per-phase table
(min/mean/max over ranks) that `tessera run` prints at the end. Ratios are against 1 rank.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from one_thread import ENV, ROOT, adam_command


def run(tessera, ranks, iterations, out, overrides=None, case=None):
    """One job of `iterations` Adam steps of `case` (default poisson2d_xpinn); `overrides` maps
    case keys to extra --set values. Returns its per-phase table and final history record."""
    command = adam_command(
        tessera,
        ranks,
        case or os.path.join(ROOT, "cases", "poisson2d_xpinn.json"),
        iterations,
        out,
    )
    for key, value in (overrides or {}).items():
        command += ["--set", f"{key}={value}"]
    text = subprocess.run(command, env=ENV, check=True, capture_output=True, text=True).stdout
    phases = {}
    for name in ("compute", "exchange", "wait", "sync"):
        m = re.search(rf"^\s+{name}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", text, re.M)
        phases[name] = {
            "min": float(m.group(1)),
            "mean": float(m.group(2)),
            "max": float(m.group(3)),
        }
    with open(os.path.join(out, "history.jsonl")) as f:
        final = [json.loads(line) for line in f][-1]
    return phases, final


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    args = parser.parse_args()
    print(
        f"poisson2d_xpinn, 4 subdomains, {args.iterations} Adam iterations, 1 thread per rank, "
        f"{os.cpu_count()} cores"
    )
    print(f"{'ranks':>5} {'ms/iter':>9} {'speed-up':>9} {'exchange+wait':>14} {'rel_l2':>10}")
    base = None
    with tempfile.TemporaryDirectory() as scratch:
        for ranks in args.ranks:
            phases, final = run(
                args.tessera, ranks, args.iterations, os.path.join(scratch, str(ranks))
            )
            total = sum(p["mean"] for p in phases.values())
            ms = 1000 * total / args.iterations
            share = (phases["exchange"]["mean"] + phases["wait"]["mean"]) / total
            base = base or ms
            print(
                f"{ranks:>5} {ms:>9.1f} {base / ms:>9.2f} {100 * share:>13.1f}% "
                f"{final['rel_l2']['u']:>10.3e}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
