#!/usr/bin/python3
"""Checks that a decomposed run reported the interface jump (history.jsonl and the .h5
attribute agree) and that it is below a bound.

  check_interface.py --out DIR --max-jump 0.05
"""
import argparse
import glob
import os
import sys

import h5py

from history import read_history  # same folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--max-jump", type=float, required=True)
    args = parser.parse_args()
    records = read_history(args.out)
    final = records[-1]
    if "interface_jump" not in final:
        print("history.jsonl: the final record has no interface_jump")
        return 1
    jump = final["interface_jump"]
    (h5_path,) = [p for p in glob.glob(os.path.join(args.out, "*.h5")) if "partition" not in p]
    with h5py.File(h5_path, "r") as h5:
        attribute = float(h5.attrs["interface_jump"])
        subdomains = sorted(set(h5["fields/subdomain"][...].ravel().tolist()))
    print(
        f"interface_jump {jump:.3e} (attribute {attribute:.3e}), subdomains in output {subdomains}"
    )
    if abs(attribute - jump) > 1e-12 * max(1.0, jump):
        print("the .h5 attribute differs from history.jsonl")
        return 1
    if len(subdomains) < 2:
        print("the output shows fewer than two subdomains")
        return 1
    if not jump <= args.max_jump:
        print(f"interface_jump {jump:.3e} is above the bound {args.max_jump:.3e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
