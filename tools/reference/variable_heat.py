#!/usr/bin/python3
"""Tabulated diffusivity and finite-volume reference for the variable-coefficient heat case.

    u_t = div(kappa(x, y) grad u)   on [0, 1]^2 x [0, T],   u = 0 on the boundary,
    u(x, y, 0) = sin(pi x) sin(pi y),
    kappa(x, y) = 0.1 (1 + 0.6 sin(2 pi x) sin(pi y)^2)      (between 0.04 and 0.16)

`--table` writes kappa on a rectilinear grid (/grid/x, /grid/y, /values [ny, nx]), the file a
case's `data` section reads. `--out` writes the reference solution laid out like Tessera's grid
output (/grid/x, /grid/y, /grid/t, /fields/u [nt, ny, nx]).

Method: the conservative second-order finite-volume stencil on a uniform grid of `--cells`
cells per side (unknowns at the interior nodes), with kappa at the cell faces,
    (kappa_{i+1/2} (u_{i+1} - u_i) - kappa_{i-1/2} (u_i - u_{i-1})) / h^2   in each direction,
and Crank-Nicolson in time (`--steps` steps; one sparse LU factorisation, kappa does not change
in time). Second order in h and dt.

Checks (exit non-zero when one fails): with a constant kappa = 0.1 the solver matches the closed
form exp(-2 pi^2 0.1 t) sin(pi x) sin(pi y) to 1e-4 relative; halving h and dt changes the
solution by less than 2e-4 relative (the error of the finer grid is about a quarter of that);
the maximum of |u| does not grow (maximum principle).

The default (256 cells, 400 steps, T = 1) takes about 20 s on one core.

Usage (Debian's /usr/bin/python3 has numpy, scipy and h5py):
    /usr/bin/python3 tools/reference/variable_heat.py --table cases/data/heat_kappa.h5 \\
        --out cases/data/heat_variable_reference.h5
"""
import argparse
import sys

import h5py
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def kappa(x, y):
    return 0.1 * (1.0 + 0.6 * np.sin(2 * np.pi * x) * np.sin(np.pi * y) ** 2)


def initial(x, y):
    return np.sin(np.pi * x) * np.sin(np.pi * y)


def operator(cells, coefficient):
    """The sparse matrix of div(kappa grad u) on the interior nodes, row-major (y slowest)."""
    h = 1.0 / cells
    n = cells - 1
    nodes = np.arange(1, cells) * h
    index = np.arange(n * n).reshape(n, n)  # [iy, ix]
    rows, cols, vals = [], [], []
    X, Y = np.meshgrid(nodes, nodes)  # [iy, ix]
    diagonal = np.zeros((n, n))
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        face = coefficient(X + 0.5 * dx * h, Y + 0.5 * dy * h) / h**2
        diagonal -= face
        iy, ix = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        jy, jx = iy + dy, ix + dx
        inside = (jx >= 0) & (jx < n) & (jy >= 0) & (jy < n)
        rows.append(index[iy[inside], ix[inside]])
        cols.append(index[jy[inside], jx[inside]])
        vals.append(face[inside])
    rows.append(index.ravel())
    cols.append(index.ravel())
    vals.append(diagonal.ravel())
    return (
        sp.csc_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(n * n, n * n),
        ),
        nodes,
    )


def solve(cells, steps, end, times, coefficient):
    """u at `times` on the full node grid [len(times), cells + 1, cells + 1] (boundary zeros)."""
    A, nodes = operator(cells, coefficient)
    dt = end / steps
    eye = sp.identity(A.shape[0], format="csc")
    step = spla.splu(eye - 0.5 * dt * A)
    explicit = eye + 0.5 * dt * A
    X, Y = np.meshgrid(nodes, nodes)
    u = initial(X, Y).ravel()
    out = np.zeros((len(times), cells + 1, cells + 1))
    wanted = {int(round(t / dt)): k for k, t in enumerate(times)}
    largest = np.abs(u).max()
    for s in range(steps + 1):
        if s in wanted:
            out[wanted[s], 1:-1, 1:-1] = u.reshape(cells - 1, cells - 1)
        if s == steps:
            break
        u = step.solve(explicit @ u)
        if np.abs(u).max() > largest * (1 + 1e-12):
            sys.exit("variable_heat: the maximum of |u| grew (maximum principle broken)")
    return out


def relative(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", help="write kappa here (HDF5)")
    parser.add_argument("--table-points", type=int, default=129, help="kappa grid points per axis")
    parser.add_argument("--out", help="write the reference solution here (HDF5)")
    parser.add_argument("--cells", type=int, default=256)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--end", type=float, default=1.0)
    parser.add_argument("--nx", type=int, default=65, help="output points per spatial axis")
    parser.add_argument("--nt", type=int, default=21, help="output times")
    args = parser.parse_args()
    if (args.cells % (args.nx - 1)) or (args.steps % (args.nt - 1)):
        sys.exit("variable_heat: --cells must be a multiple of nx - 1 and --steps of nt - 1")

    if args.table:
        axis = np.linspace(0.0, 1.0, args.table_points)
        X, Y = np.meshgrid(axis, axis)  # [y, x]
        with h5py.File(args.table, "w") as f:
            f["grid/x"] = axis
            f["grid/y"] = axis
            f["values"] = kappa(X, Y)
            f.attrs["description"] = "kappa(x, y) = 0.1 (1 + 0.6 sin(2 pi x) sin(pi y)^2)"
        print(f"wrote {args.table} ({args.table_points} x {args.table_points})")
    if not args.out:
        return

    times = np.linspace(0.0, args.end, args.nt)
    # Check 1: a constant kappa against the closed form.
    constant = solve(args.cells // 2, args.steps // 2, args.end, times, lambda x, y: 0.1 + 0 * x)
    full = np.linspace(0.0, 1.0, args.cells // 2 + 1)
    X, Y = np.meshgrid(full, full)
    closed = np.stack([np.exp(-2 * np.pi**2 * 0.1 * t) * initial(X, Y) for t in times])
    error_constant = relative(constant, closed)
    # Check 2: the variable coefficient on the grid and on one twice as coarse.
    fine = solve(args.cells, args.steps, args.end, times, kappa)
    coarse = solve(args.cells // 2, args.steps // 2, args.end, times, kappa)
    change = relative(fine[:, ::2, ::2], coarse)
    print(
        f"constant kappa vs closed form: {error_constant:.2e}; "
        f"refinement change: {change:.2e} (the fine grid's error is about a quarter)"
    )
    if error_constant > 1e-4 or change > 2e-4:
        sys.exit("variable_heat: a check failed")

    stride = args.cells // (args.nx - 1)
    with h5py.File(args.out, "w") as f:
        axis = np.linspace(0.0, 1.0, args.nx)
        f["grid/x"] = axis
        f["grid/y"] = axis
        f["grid/t"] = times
        f["fields/u"] = fine[:, ::stride, ::stride]
        f.attrs["method"] = "finite volume, Crank-Nicolson"
        f.attrs["cells"] = args.cells
        f.attrs["steps"] = args.steps
        f.attrs["refinement_change"] = change
        f.attrs["command"] = " ".join(sys.argv)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
