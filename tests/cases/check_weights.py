#!/usr/bin/python3
"""Checks that grad-norm adaptive weighting ran: a loss term's weight in history.jsonl moved
off its initial value and stayed finite and positive on every logged line.

  check_weights.py --out DIR --term walls --initial 100

history.jsonl carries "weights" only when some weight differs from 1 (docs/output-format.md),
so each logged line must have it here (the initial weight is not 1, or it has moved).
"""
import argparse
import math
import sys

from history import read_history  # same folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--term", required=True)
    parser.add_argument("--initial", type=float, required=True)
    args = parser.parse_args()

    records = read_history(args.out)
    problems = []
    values = []
    for r in records:
        weights = r.get("weights")
        if weights is None or args.term not in weights:
            problems.append(
                f"iteration {r.get('iteration')}: no weights.{args.term} in history.jsonl"
            )
            continue
        w = weights[args.term]
        values.append(w)
        if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
            problems.append(
                f"iteration {r.get('iteration')}: weights.{args.term} = {w} is not finite and positive"
            )
    print(
        f"weights.{args.term} over {len(values)} logged lines: initial {args.initial}, "
        + (
            f"first {values[0]:.4g}, last {values[-1]:.4g}, min {min(values):.4g}, max {max(values):.4g}"
            if values
            else "none"
        )
    )
    if values and all(math.isclose(w, args.initial, rel_tol=1e-6) for w in values):
        problems.append(
            f"weights.{args.term} never moved from {args.initial}: grad_norm did not run"
        )
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
