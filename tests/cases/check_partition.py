#!/usr/bin/python3
"""`tessera partition CASE --ranks 2` prints one line per subdomain with its rank and writes
<name>_partition.h5 whose subdomain and rank fields match the printed map.

  check_partition.py --tessera BIN --case cases/poisson2d_xpinn.json --out DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    result = subprocess.run(
        [
            args.tessera,
            "partition",
            args.case,
            "--ranks",
            "2",
            "--set",
            "output.directory=" + args.out,
        ],
        capture_output=True,
        text=True,
        timeout=50,
    )
    print(result.stdout, result.stderr)
    if result.returncode != 0:
        return 1
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+\[", result.stdout, re.M)
    mapping = {int(s): int(r) for s, r in rows}
    if mapping != {0: 0, 1: 0, 2: 1, 3: 1}:
        print("unexpected subdomain -> rank map", mapping)
        return 1
    if "interface" not in result.stdout:
        print("no interface table printed")
        return 1
    name = "poisson2d_xpinn_partition"
    with h5py.File(os.path.join(args.out, name + ".h5"), "r") as h5:
        subdomain = h5["fields/subdomain"][...]
        rank = h5["fields/rank"][...]
        x, y = h5["grid/x"][...], h5["grid/y"][...]
    expected = (x[None, :] > 0.5).astype(int) + 2 * (y[:, None] > 0.5).astype(int)
    if not np.array_equal(subdomain, expected):
        print("subdomain field does not follow the cuts (lower id on a cut)")
        return 1
    if not np.array_equal(rank, np.vectorize(mapping.get)(subdomain)):
        print("rank field does not match the printed map")
        return 1
    if not os.path.exists(os.path.join(args.out, name + ".xmf")):
        print("no .xmf written")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
