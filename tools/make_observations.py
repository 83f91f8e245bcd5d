#!/usr/bin/python3
"""Makes an observation file for a `data` condition (docs/case-format.md, "Conditions"):
/points [n, dims] and /values/<field> [n], from a closed-form solution or from a reference grid
file, with chosen relative noise.

  # from a closed form (numpy syntax; ^ also means power), uniform random points in the box
  tools/make_observations.py --domain x=0:1 --domain t=0:1 --exact 'u=sin(pi*x)*exp(-0.1*pi^2*t)' \
      --points 2000 --noise 0.01 --out cases/data/heat_observations.h5
  # from a reference grid (Tessera's grid layout: /grid/<coord>, /fields/<field>), random nodes
  tools/make_observations.py --reference cases/data/burgers_reference.h5 --coordinates x t \
      --fields u --points 2000 --noise 0.01 --out cases/data/burgers_observations.h5

Noise: value + noise * std(values of that field) * N(0, 1), as in Raissi et al. (2019), with a
seeded generator so the file is reproducible. Columns of /points follow the case's inputs:
the spatial coordinates, then time.
"""
import argparse
import sys

import h5py
import numpy as np


def fail(message):
    print(f"make_observations: {message}", file=sys.stderr)
    sys.exit(1)


def parse_domain(items):
    names, bounds = [], []
    for item in items:
        try:
            name, span = item.split("=")
            lo, hi = (float(v) for v in span.split(":"))
        except ValueError:
            fail(f"--domain '{item}': expected name=lo:hi, e.g. x=0:1")
        if not lo < hi:
            fail(f"--domain '{item}': lo must be below hi")
        names.append(name)
        bounds.append((lo, hi))
    return names, bounds


def from_exact(args, rng):
    if not args.domain:
        fail("--exact needs --domain for every coordinate (spatial first, then time)")
    names, bounds = parse_domain(args.domain)
    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    points = lo + (hi - lo) * rng.random((args.points, len(names)))
    namespace = {
        k: getattr(np, k)
        for k in (
            "sin",
            "cos",
            "tan",
            "exp",
            "log",
            "sqrt",
            "sinh",
            "cosh",
            "tanh",
            "arctan",
            "abs",
            "pi",
            "e",
        )
    }
    namespace.update({name: points[:, k] for k, name in enumerate(names)})
    values = {}
    for item in args.exact:
        field, _, text = item.partition("=")
        if not text:
            fail(f"--exact '{item}': expected field=expression, e.g. u=sin(pi*x)")
        try:
            values[field] = np.broadcast_to(
                np.asarray(
                    eval(text.replace("^", "**"), {"__builtins__": {}}, namespace), dtype=float
                ),
                (args.points,),
            ).copy()
        except Exception as error:  # the user's expression: report it, whatever it was
            fail(f"--exact '{item}': cannot evaluate: {error}")
    return points, values


def from_reference(args, rng):
    if not args.coordinates or not args.fields:
        fail("--reference needs --coordinates (spatial first, then time) and --fields")
    try:
        file = h5py.File(args.reference, "r")
    except OSError as error:
        fail(f"cannot open reference '{args.reference}': {error}")
    with file:
        try:
            axes = [file[f"/grid/{c}"][()] for c in args.coordinates]
            grids = {f: file[f"/fields/{f}"][()] for f in args.fields}
        except KeyError as error:
            fail(f"reference '{args.reference}': missing dataset {error}")
    shape = tuple(len(a) for a in axes)
    count = int(np.prod(shape))
    if args.points > count:
        fail(f"--points {args.points} exceeds the {count} nodes of the reference grid")
    # Random distinct grid nodes: exact reference values, no interpolation error.
    flat = rng.choice(count, size=args.points, replace=False)
    index = np.unravel_index(flat, shape, order="F")  # first coordinate fastest
    points = np.stack([axes[k][index[k]] for k in range(len(axes))], axis=1)
    values = {}
    for field, grid in grids.items():
        if grid.shape != shape[::-1]:
            fail(
                f"reference '{args.reference}': /fields/{field} has shape {grid.shape}, "
                f"expected {shape[::-1]} (last coordinate first)"
            )
        values[field] = grid[tuple(reversed(index))]
    return points, values


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--domain", action="append", default=[], help="name=lo:hi, once per coordinate"
    )
    parser.add_argument("--exact", action="append", default=[], help="field=expression")
    parser.add_argument("--reference", help="a grid file laid out like Tessera's output")
    parser.add_argument(
        "--coordinates", nargs="+", help="with --reference: the case's inputs in order"
    )
    parser.add_argument("--fields", nargs="+", help="with --reference: fields to observe")
    parser.add_argument("--points", type=int, default=2000)
    parser.add_argument("--noise", type=float, default=0.0, help="relative noise, e.g. 0.01")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if bool(args.exact) == bool(args.reference):
        fail("give either --exact or --reference")
    if args.points <= 0 or args.noise < 0:
        fail("--points must be positive and --noise not negative")
    rng = np.random.default_rng(args.seed)
    points, values = from_exact(args, rng) if args.exact else from_reference(args, rng)
    with h5py.File(args.out, "w") as out:
        out["/points"] = points.astype(np.float64)
        for field, v in values.items():
            noisy = v + args.noise * np.std(v) * rng.standard_normal(v.shape)
            out[f"/values/{field}"] = noisy.astype(np.float64)
        out.attrs["noise"] = args.noise
        out.attrs["seed"] = args.seed
    print(f"wrote {args.out}: {len(points)} points, fields {', '.join(values)}, noise {args.noise}")


if __name__ == "__main__":
    main()
