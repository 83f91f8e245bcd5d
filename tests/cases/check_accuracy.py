#!/usr/bin/python3
"""Checks the final relative L2 error of a finished run against a bound.

  check_accuracy.py --out DIR --field u --max-rel-l2 BOUND [--compare-to DIR2 --max-ratio R]

Reads the last line of DIR/history.jsonl, which must carry "final": true, and compares its
rel_l2[field]; also checks that the .h5 root attribute rel_l2_<field> agrees with it. With
--compare-to, the error must also be at most R times that of the finished run in DIR2 (the same
problem written another way).
"""
import argparse
import glob
import json
import math
import os
import sys

import h5py


def final_error(out, field):
    """rel_l2[field] of the final line of out/history.jsonl, or None (with a FAIL line)."""
    with open(os.path.join(out, "history.jsonl")) as f:
        lines = [line for line in f if line.strip()]
    last = json.loads(lines[-1])
    if last.get("final") is not True:
        print(f'FAIL: the last line of {out}/history.jsonl lacks "final": true:', lines[-1])
        return None
    return last["rel_l2"][field]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--field", default="u")
    parser.add_argument("--max-rel-l2", type=float, required=True)
    parser.add_argument("--compare-to")
    parser.add_argument("--max-ratio", type=float, default=1.0)
    args = parser.parse_args()

    rel_l2 = final_error(args.out, args.field)
    if rel_l2 is None:
        return 1
    print(f"final rel_l2({args.field}) = {rel_l2:.4e}; " f"bound {args.max_rel_l2:.4e}")
    ok = math.isfinite(rel_l2) and rel_l2 < args.max_rel_l2
    if not ok:
        print("FAIL: accuracy regression: rel_l2 is not below the bound")
    if args.compare_to:
        other = final_error(args.compare_to, args.field)
        if other is None:
            return 1
        ratio = rel_l2 / other
        print(
            f"against {args.compare_to}: rel_l2 {other:.4e}, ratio {ratio:.3f} "
            f"(at most {args.max_ratio})"
        )
        if not ratio <= args.max_ratio:
            print("FAIL: the error is more than the allowed multiple of the other run's")
            ok = False

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
