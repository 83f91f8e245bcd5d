#!/usr/bin/python3
"""Checks a condition given at points: its loss term on the final line of history.jsonl is at
most MAX_SQUARE, and the output grid's value at POINT, which must be a grid point, is VALUE
within TOLERANCE. POINT names every input in the case's order.

  check_point_condition.py --out DIR --term gauge --max-square 1e-8 \\
      --point x=0.5 --field u --value 1 --tolerance 1e-3
"""
import argparse
import glob
import math
import os
import sys

import h5py
import numpy as np

from history import read_history  # same folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--term", required=True)
    parser.add_argument("--max-square", type=float, required=True)
    parser.add_argument("--point", required=True, help="x=0.5,y=0: every input, in order")
    parser.add_argument("--field", default="u")
    parser.add_argument("--value", type=float, required=True)
    parser.add_argument("--tolerance", type=float, required=True)
    args = parser.parse_args()
    ok = True

    last = read_history(args.out)[-1]
    square = last["terms"][args.term]
    print(f"{args.term}: final mean square {square:.3e}, bound {args.max_square:.1e}")
    if not (math.isfinite(square) and square <= args.max_square):
        print("FAIL: the condition at points does not hold")
        ok = False

    point = [(k, float(v)) for k, v in (item.split("=") for item in args.point.split(","))]
    outputs = glob.glob(os.path.join(args.out, "*.h5"))
    if len(outputs) != 1:
        print("FAIL: expected one .h5 file in", args.out, "found", outputs)
        return 1
    with h5py.File(outputs[0], "r") as f:
        values = f["fields"][args.field][()]
        index = []
        for name, p in point:
            grid = f["grid"][name][()]
            i = int(np.argmin(np.abs(grid - p)))
            if abs(grid[i] - p) > 1e-12:
                print(f"FAIL: {name} = {p} is not a grid value")
                return 1
            index.append(i)
    # Datasets are stored slowest axis first: [.., y, x].
    value = float(values[tuple(reversed(index))])
    print(f"{args.field} at {point} = {value:.6f}, expected {args.value} +- {args.tolerance}")
    if not abs(value - args.value) <= args.tolerance:
        print("FAIL: the field misses the prescribed value at the point")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
