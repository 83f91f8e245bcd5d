#!/usr/bin/python3
"""Checks that conditions enforced exactly hold at their points: on every logged line of
history.jsonl, each named condition's loss term (the mean square of u - value over its points)
is at most MAX_SQUARE, i.e. the condition holds there to sqrt(MAX_SQUARE).

  check_exact_conditions.py --out DIR --terms ends,start --max-square 1e-12
"""
import argparse
import sys

from history import read_history  # same folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--terms", required=True)
    parser.add_argument("--max-square", type=float, required=True)
    args = parser.parse_args()
    records = read_history(args.out)
    problems = []
    for name in args.terms.split(","):
        values = [r["terms"][name] for r in records if name in r.get("terms", {})]
        if len(values) != len(records):
            problems.append(f"term '{name}' is missing from some history lines")
        elif max(values) > args.max_square:
            problems.append(f"term '{name}' reached {max(values):.3e} > {args.max_square:.1e}")
        else:
            print(f"{name}: largest mean square {max(values):.3e} over {len(values)} lines")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems or not records else 0


if __name__ == "__main__":
    sys.exit(main())
