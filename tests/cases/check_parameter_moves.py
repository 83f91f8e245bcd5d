#!/usr/bin/python3
"""Checks that a trainable parameter moved during the L-BFGS stage of a run: its value on the
last Adam line of history.jsonl differs from the final one, and it is finite.

  check_parameter_moves.py --out DIR --name nu

With a single subdomain the shared parameters join L-BFGS, also when other ranks of the job
own nothing (they take the owner's values after every chunk).
"""
import argparse
import math
import sys

from history import read_history  # same folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--name", required=True)
    args = parser.parse_args()
    records = read_history(args.out)
    adam = [r for r in records if r.get("stage") == "adam" and not r.get("final")]
    if not adam or not records[-1].get("final"):
        print("FAIL: history needs Adam lines and a final line")
        return 1
    before = adam[-1]["parameters"][args.name]
    after = records[-1]["parameters"][args.name]
    print(f"{args.name}: {before!r} after Adam, {after!r} after L-BFGS")
    if not math.isfinite(after) or after == before:
        print(f"FAIL: {args.name} did not move during L-BFGS")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
