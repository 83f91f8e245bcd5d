#!/usr/bin/python3
"""Interface points are redrawn with the condition points, the same on both sides.

  check_interface_redraw.py --tessera BIN --case tests/mpi/xpinn4.json --out DIR

Runs the 2 x 2 case's Adam stage with checkpoints after 50 and 100 iterations and reads the
stream state each interface side's points were drawn from (`interface<k>.origin`,
docs/output-format.md). With resample_every 50 the states must move between the two
checkpoints, and the two sides of every interface must hold the same one; with resample_every 0
they must not move.
"""
import os
import sys

try:
    import torch  # noqa: F401 (reads the checkpoint archives)
except ImportError:
    print("SKIP: this Python has no torch to read checkpoints with")
    sys.exit(77)

from checkpoint_samples import (
    archive_entries,
    case_arguments,
    checkpoint_folders,
    report,
    run_fresh,
)  # same folder

SUBDOMAINS = 4
SETS = [
    'training.stages=[{"optimizer":"adam","iterations":100,"lr":0.001}]',
    "training.log_every=50",
    "training.checkpoint_every=50",
]


def interface_origins(args, out, every):
    """{iteration: per subdomain, the set of its interface sides' origins}."""
    run_fresh(
        args.tessera, args.case, out, SETS + [f"training.collocation.resample_every={every}"], 200
    )
    found = {}
    for iteration, folder in checkpoint_folders(out):
        found[iteration] = [
            {
                tuple(v.flatten().tolist())
                for k, v in archive_entries(folder, s, ".origin").items()
                if k.startswith("interface")
            }
            for s in range(SUBDOMAINS)
        ]
    return found


def main():
    args = case_arguments()
    failures = []
    redrawn = interface_origins(args, os.path.join(args.out, "redrawn"), 50)
    kept = interface_origins(args, os.path.join(args.out, "kept"), 0)
    for name, found in (("redrawn", redrawn), ("kept", kept)):
        if sorted(found) != [50, 100] or any(len(sides) != 2 for sides in found[50]):
            failures.append(f"{name}: expected 2 interface sides per subdomain at 50 and 100")
    if not failures:
        # Subdomains 0 and 1 share an interface, as do 0 and 2: one common state each.
        for pair in ((0, 1), (0, 2), (1, 3), (2, 3)):
            common = redrawn[100][pair[0]] & redrawn[100][pair[1]]
            if len(common) != 1:
                failures.append(f"subdomains {pair} hold different points on their interface")
        moved = [redrawn[50][s] != redrawn[100][s] for s in range(SUBDOMAINS)]
        print("interface points redrawn between iterations 50 and 100, per subdomain:", moved)
        if not all(moved):
            failures.append("with resample_every 50 the interface points were not redrawn")
        if any(kept[50][s] != kept[100][s] for s in range(SUBDOMAINS)):
            failures.append("with resample_every 0 the interface points changed")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
