#!/usr/bin/python3
"""A stage's `points` draws its sample by the residual when residual-based sampling is on, and
uniformly when it is off.

  check_stage_points.py --tessera BIN --case tests/cases/tiny.json --out DIR

Runs the case with an Adam stage (points redistributed every 50 iterations) and an L-BFGS stage
on 200 points, checkpointing every 10 iterations, then reads a checkpoint taken inside the
L-BFGS stage: the collocation group must hold an adapted sample (which only a residual-based
draw stores) of exactly 200 points. With `training.collocation.adaptive` false the same
checkpoint must hold no adapted sample.
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

STAGE_POINTS = 200
SETS = [
    'training.stages=[{"optimizer":"adam","iterations":100,"lr":0.001},'
    '{"optimizer":"lbfgs","iterations":20,"points":%d}]' % STAGE_POINTS,
    "training.log_every=10",
    "training.checkpoint_every=10",
]


def adapted_samples(args, out, adaptive):
    run_fresh(
        args.tessera, args.case, out, SETS + [f"training.collocation.adaptive={adaptive}"], 120
    )
    inside = [f for i, f in checkpoint_folders(out) if 100 < i <= 120]
    if not inside:
        sys.exit(f"FAIL: no checkpoint inside the L-BFGS stage in {out}/checkpoints")
    return adapted_shapes(inside[0], 0)


def main():
    args = case_arguments()
    failures = []
    adapted = adapted_samples(args, os.path.join(args.out, "adaptive"), '{"every":50}')
    print("residual-based points, the stage's sample:", adapted or "none stored")
    if len(adapted) != 1 or next(iter(adapted.values()))[0] != STAGE_POINTS:
        failures.append(f"expected one adapted sample of {STAGE_POINTS} points, got {adapted}")
    uniform = adapted_samples(args, os.path.join(args.out, "uniform"), "false")
    print("uniform points, the stage's sample:", uniform or "none stored (uniform)")
    if uniform:
        failures.append(f"adaptive false stored an adapted sample: {uniform}")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
