#!/usr/bin/python3
"""`tessera partition` on an fbpinn case lists every overlapping subdomain with its level and
support, and writes <name>_partition.h5 whose `subdomain` field is the finest cell holding each
point and whose `supports` field counts the supports over all levels that hold it.

  check_fbpinn_partition.py --tessera BIN --case cases/fbpinn/two_frequency.json --out DIR

The case has 30 cells on [-2 pi, 2 pi] with overlap 0.5 and one coarse level: every point lies
in one or two fine supports and in the coarse one, so 2 <= supports <= 3, and the cells increase
along x from 0 to 29.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np
from checkpoint_samples import case_arguments, report  # same folder: the shared arguments


def main():
    args = case_arguments()
    shutil.rmtree(args.out, ignore_errors=True)
    command = [args.tessera, "partition", args.case, "--ranks", "2"]
    command += ["--set", f"output.directory={args.out}", "--set", 'output.grid={"x":301}']
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    print(result.stdout[-1500:])
    failures = []
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit(f"FAIL: tessera partition exited with {result.returncode}")
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+\[x (\S+)\.\.(\S+)\]$", result.stdout, re.M)
    levels = [int(level) for _, level, _, _ in rows]
    if levels != [0] * 30 + [1]:
        failures.append(f"expected 30 subdomains on level 0 and 1 on level 1, got {levels}")
    width = 4 * np.pi / 30
    first = [float(rows[0][2]), float(rows[0][3])] if rows else [0, 0]
    if not np.allclose(first, [-2 * np.pi - width / 4, -2 * np.pi + width * 1.25], atol=1e-4):
        failures.append(f"subdomain 0's support is {first}, expected the first cell widened by 1/4")
    files = glob.glob(os.path.join(args.out, "*_partition.h5"))
    if len(files) != 1:
        sys.exit(f"FAIL: expected one partition file, found {files}")
    with h5py.File(files[0], "r") as f:
        supports = f["fields/supports"][()]
        cells = f["fields/subdomain"][()]
    print(f"supports per point: {supports.min():.0f}..{supports.max():.0f}; cells {cells.min()}..")
    if supports.min() < 2 or supports.max() > 3:
        failures.append(f"supports range {supports.min()}..{supports.max()}, expected 2..3")
    if cells.min() != 0 or cells.max() != 29 or np.any(np.diff(cells) < 0):
        failures.append("the finest cells do not run from 0 to 29 along x")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
