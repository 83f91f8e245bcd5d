#!/usr/bin/python3
"""An FBPINN case on several rank counts, side by side from one invocation: time per Adam
iteration, speed-up, and whether every rank count ends on the same bits:

    /usr/bin/python3 tools/bench/fbpinn_ranks.py [--case cases/fbpinn/cosine_2d.json]
                                                 [--iterations 300] [--ranks 1 2 4]
                                                 [--rounds 2] [--tessera build/tessera]

Every rank trains the windowed sum on its share of the case's slices of the points
(decomposition.slices, docs/case-format.md), so the work per rank falls with the rank count
while the answer stays the same. Each run trains the case's points for N Adam iterations only
(one thread per rank, output grid 21 x 21), through tools/bench/decomposition_scaling.py's run().
The rank counts alternate within each round, so load from other tenants falls on all alike;
ms/iteration is the median over rounds of the training time (the final record's wall_s) over
N. "same bits" compares the final history record (timings aside) with the first rank
count's. More ranks than cores oversubscribe the machine, which the output says.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import decomposition_scaling  # same folder: run() runs one job and reads its phase table
from one_thread import ROOT


def run(tessera, case, ranks, iterations, out):
    """One job: its training seconds per iteration, final record without the timings, and
    slice count."""
    _, final = decomposition_scaling.run(tessera, ranks, iterations, out, case=case)
    with open(os.path.join(out, "run.json")) as f:
        slices = json.load(f)["synchronisation"].get("slices")
    seconds = final["wall_s"] / iterations
    final = {key: value for key, value in final.items() if key not in ("wall_s", "time_s")}
    return seconds, final, slices


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default=os.path.join(ROOT, "cases", "fbpinn", "cosine_2d.json"))
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    args = parser.parse_args()
    case = os.path.abspath(args.case)
    walls = {ranks: [] for ranks in args.ranks}
    finals, slices = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            for ranks in args.ranks:
                out = os.path.join(scratch, f"round{round_index}_ranks{ranks}")
                seconds, finals[ranks], slices[ranks] = run(
                    args.tessera, case, ranks, args.iterations, out
                )
                walls[ranks].append(seconds)
    cores = os.cpu_count()
    print(
        f"{os.path.relpath(case, ROOT)}: {args.iterations} Adam iterations, one thread per rank, "
        f"{cores} cores, median of {args.rounds} round(s)"
    )
    print(f"{'ranks':>5} {'slices':>6} {'ms/iter':>9} {'speed-up':>9} {'same bits':>10}")
    base_ranks = args.ranks[0]
    base = statistics.median(walls[base_ranks])
    for ranks in args.ranks:
        ms = statistics.median(walls[ranks])
        same = "yes" if finals[ranks] == finals[base_ranks] else "NO"
        note = f"  (oversubscribed: {ranks} ranks on {cores} cores)" if ranks > cores else ""
        print(f"{ranks:>5} {slices[ranks]:>6} {1000 * ms:>9.2f} {base / ms:>9.2f} {same:>10}{note}")
    return 0 if all(finals[r] == finals[base_ranks] for r in args.ranks) else 1


if __name__ == "__main__":
    sys.exit(main())
