#!/usr/bin/python3
"""With several subdomains, residual-based points move between them and their total stays.

  check_points_across_subdomains.py --tessera BIN --case tests/mpi/xpinn4.json --out DIR

Runs the 2 x 2 case's Adam stage (points redistributed every 50 iterations, a checkpoint after
100) and reads every subdomain's adapted sample from the checkpoint: by default the counts must
differ between subdomains and add up to 4 x the configured count; with `across_subdomains`
false every subdomain must hold exactly the configured count.
"""
import os
import sys

try:
    import torch  # noqa: F401 (reads the checkpoint archives)
except ImportError:
    print("SKIP: this Python has no torch to read checkpoints with")
    sys.exit(77)

from checkpoint_samples import (
    adapted_shapes,
    case_arguments,
    checkpoint_folders,
    report,
    run_fresh,
)  # same folder

POINTS = 512
SUBDOMAINS = 4
SETS = [
    'training.stages=[{"optimizer":"adam","iterations":100,"lr":0.001}]',
    f"training.collocation.points={POINTS}",
    "training.log_every=50",
    "training.checkpoint_every=50",
]


def counts(args, out, adaptive):
    run_fresh(
        args.tessera, args.case, out, SETS + [f"training.collocation.adaptive={adaptive}"], 200
    )
    folders = [f for i, f in checkpoint_folders(out) if i == 100]
    if not folders:
        sys.exit(f"FAIL: no checkpoint at iteration 100 in {out}/checkpoints")
    found = []
    for s in range(SUBDOMAINS):
        shapes = list(adapted_shapes(folders[0], s).values())
        found.append(shapes[0][0] if shapes else None)
    return found


def main():
    args = case_arguments()
    failures = []
    shared = counts(args, os.path.join(args.out, "shared"), '{"every":50}')
    print("points per subdomain, shared by the residual:", shared)
    if None in shared or sum(shared) != SUBDOMAINS * POINTS or len(set(shared)) == 1:
        failures.append(f"expected unequal counts adding up to {SUBDOMAINS * POINTS}, got {shared}")
    kept = counts(args, os.path.join(args.out, "kept"), '{"every":50,"across_subdomains":false}')
    print("points per subdomain, each keeping its count:", kept)
    if kept != [POINTS] * SUBDOMAINS:
        failures.append(f"expected {POINTS} in every subdomain, got {kept}")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
