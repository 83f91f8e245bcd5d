#!/usr/bin/python3
"""Checks that a run on an irregular domain wrote its output on the true shape.

  check_geometry_output.py --out DIR --outside 'PYTHON EXPRESSION IN x, y[, z]' [--margin M]
  check_geometry_output.py --out DIR --mesh-measure AREA_OR_VOLUME [--inside EXPR]

Grid output (--outside): every grid point where the expression is true by more than --margin
(a point on the boundary may go either way) must be NaN in every float field and -1 in
/fields/subdomain; every point where it is false by more than the margin must be finite with a
subdomain >= 0. The expression is evaluated with numpy arrays x, y (z) of the grid points, as
a signed distance-like value: "outside" means expression > margin, "inside" means < -margin.

Mesh output (--mesh-measure): /mesh/points [n, dims] and /mesh/cells [m, dims + 1] exist, every
cell has positive area (volume) and they add up to the given measure within 1 %, every field is
[n_points] (or [nt, n_points]) and finite, every mesh point satisfies --inside (<= margin).
"""
import argparse
import glob
import os
import sys

import h5py
import numpy as np


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def grid_check(h5, args):
    names = h5.attrs["coordinates"]
    names = names.decode() if isinstance(names, bytes) else str(names)
    names = names.split(",")
    axes = [h5["grid"][n][()] for n in names]
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]  # C order: first coordinate fastest
    env = {n: m for n, m in zip(names, mesh)}
    env["np"] = np
    value = eval(args.outside, {"__builtins__": {}}, env)
    outside = value > args.margin
    inside = value < -args.margin
    print(
        f"grid {list(mesh[0].shape)}: {int(outside.sum())} points outside, {int(inside.sum())} inside"
    )
    if outside.sum() == 0 or inside.sum() == 0:
        fail("the expression puts no grid point outside (or inside); the check would prove nothing")
    for name, data in h5["fields"].items():
        a = data[()]
        if name == "subdomain":
            if not np.all(a[outside] == -1):
                fail(
                    f"subdomain is not -1 at {int((a[outside] != -1).sum())} points outside the shape"
                )
            if not np.all(a[inside] >= 0):
                fail(f"subdomain is -1 at {int((a[inside] < 0).sum())} points inside the shape")
            continue
        if not np.all(np.isnan(a[outside])):
            fail(
                f"{name} has {int((~np.isnan(a[outside])).sum())} values outside the shape (expected NaN)"
            )
        if not np.all(np.isfinite(a[inside])):
            fail(
                f"{name} is not finite at {int((~np.isfinite(a[inside])).sum())} points inside the shape"
            )
        print(f"  {name}: NaN at all {int(outside.sum())} outside points, finite inside")


def cell_measures(points, cells):
    corners = points[cells]  # [m, k, dims]
    edges = corners[:, 1:, :] - corners[:, :1, :]
    if cells.shape[1] == 3:
        return 0.5 * (edges[:, 0, 0] * edges[:, 1, 1] - edges[:, 0, 1] * edges[:, 1, 0])
    return np.linalg.det(edges) / 6.0


def mesh_check(h5, args):
    if "mesh" not in h5:
        fail("no /mesh group; output.mesh was given")
    points = h5["mesh/points"][()]
    cells = h5["mesh/cells"][()]
    dims = points.shape[1]
    print(
        f"mesh: {points.shape[0]} points, {cells.shape[0]} cells of {cells.shape[1]} vertices, {dims}-D"
    )
    if cells.shape[1] != dims + 1:
        fail(f"cells have {cells.shape[1]} vertices in {dims}-D")
    if cells.min() < 0 or cells.max() >= points.shape[0]:
        fail("a cell refers to a point that does not exist")
    measures = np.abs(cell_measures(points, cells))
    if measures.min() <= 0:
        fail(f"{int((measures <= 0).sum())} degenerate cells")
    total = measures.sum()
    print(f"  total measure {total:.6f}, expected {args.mesh_measure:.6f}")
    if abs(total - args.mesh_measure) > 0.01 * args.mesh_measure:
        fail("the mesh does not cover the shape (measure off by more than 1 %)")
    if args.inside:
        env = {n: points[:, i] for i, n in enumerate("xyz"[:dims])}
        env["np"] = np
        value = eval(args.inside, {"__builtins__": {}}, env)
        if np.any(value > args.margin):
            fail(f"{int((value > args.margin).sum())} mesh points lie outside the shape")
    for name, data in h5["fields"].items():
        a = data[()]
        if a.shape[-1] != points.shape[0]:
            fail(f"/fields/{name} has shape {a.shape}, expected [nt?, {points.shape[0]}]")
        if name == "subdomain":
            if a.min() < 0:
                fail("some mesh points have no subdomain")
        elif not np.all(np.isfinite(a)):
            fail(f"/fields/{name} is not finite everywhere on the mesh")
    print("  every field is finite on every mesh point")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--outside")
    parser.add_argument("--mesh-measure", type=float)
    parser.add_argument("--inside")
    parser.add_argument("--margin", type=float, default=1e-9)
    args = parser.parse_args()
    outputs = [p for p in glob.glob(os.path.join(args.out, "*.h5")) if "partition" not in p]
    if len(outputs) != 1:
        fail(f"expected one .h5 in {args.out}, found {outputs}")
    with h5py.File(outputs[0], "r") as h5:
        if args.outside:
            grid_check(h5, args)
        if args.mesh_measure is not None:
            mesh_check(h5, args)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
