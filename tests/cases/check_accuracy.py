#!/usr/bin/python3
"""Checks the final relative L2 error of a finished run against a bound.

  check_accuracy.py --out DIR --field u --max-rel-l2 BOUND

Reads the last line of DIR/history.jsonl, which must carry "final": true, and compares its
rel_l2[field]; also checks that the .h5 root attribute rel_l2_<field> agrees with it.
"""
import argparse
import glob
import json
import math
import os
import sys

import h5py


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--field", default="u")
    parser.add_argument("--max-rel-l2", type=float, required=True)
    args = parser.parse_args()

    with open(os.path.join(args.out, "history.jsonl")) as f:
        lines = [line for line in f if line.strip()]
    last = json.loads(lines[-1])
    if last.get("final") is not True:
        print('FAIL: the last line of history.jsonl lacks "final": true:', lines[-1])
        return 1
    rel_l2 = last["rel_l2"][args.field]
    print(
        f"final rel_l2({args.field}) = {rel_l2:.4e} at iteration {last['iteration']}; "
        f"bound {args.max_rel_l2:.4e}"
    )
    ok = math.isfinite(rel_l2) and rel_l2 < args.max_rel_l2
    if not ok:
        print("FAIL: accuracy regression: rel_l2 is not below the bound")

    outputs = glob.glob(os.path.join(args.out, "*.h5"))
    if len(outputs) != 1:
        print("FAIL: expected one .h5 file in", args.out, "found", outputs)
        return 1
    with h5py.File(outputs[0], "r") as f:
        attribute = float(f.attrs["rel_l2_" + args.field])
    if not math.isclose(attribute, rel_l2, rel_tol=1e-4, abs_tol=1e-12):
        print(
            f"FAIL: the .h5 attribute rel_l2_{args.field} = {attribute} disagrees with the history ({rel_l2})"
        )
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
