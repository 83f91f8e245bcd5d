#!/usr/bin/python3
"""Reference solution of the steady lid-driven cavity (Re = 100) for Tessera's `"reference"` key.

    (u . grad) u + grad p = (1/Re) lap u,   div u = 0,   (x, y) in [0, 1]^2,
    u = (1, 0) on the lid y = 1 (its two corners included),  u = (0, 0) on the other walls,
    p fixed by p(0, 0) = 0.

Method. Streamfunction-vorticity form (u = psi_y, v = -psi_x, omega = v_x - u_y):

    -lap psi = omega,   psi_y omega_x - psi_x omega_y = (1/Re) lap omega,

second-order central differences on a uniform grid of N x N cells, psi = 0 on the walls and
the wall vorticity from the second-order (Jensen) formula
    omega_w = -(8 psi_1 - psi_2) / (2 h^2) + 3 psi_s / h
(psi_1, psi_2: one and two nodes inwards; psi_s: the inward normal derivative, -1 on the lid,
0 elsewhere). The coupled nonlinear system in (psi, omega) is solved with Newton's method and
sparse LU (scipy, COLAMD ordering): on the coarsest grid from rest (the first step gives the
Stokes flow), on the finer ones from the previous grid's solution (grid sequencing).

Pressure: the momentum equation gives grad p = f = -(u . grad) u + (1/Re)(-omega_y, omega_x)
(on the walls the convective term vanishes). p is the weighted least-squares fit of the
differences of p along the grid edges to f averaged on each edge (half weight on boundary
edges), i.e. a finite-volume Poisson problem with the Neumann data of the momentum equation.
The pressure is singular (~1/r) at the two top corners, where the lid meets the walls: the grid
values there grow like 1/h, and p next to them is not grid-converged. The output therefore gives
each top corner the mean of its two neighbouring output points on the walls (a finite,
conventional value; the file's `note` attribute says so).

Checks: grid convergence of the centre-line profiles u(0.5, y) and v(x, 0.5) (and of p more
than 0.3 from the top corners) on N/4, N/2 and N cells (ratio ~ 4); agreement with Ghia, Ghia &
Shin (1982), J. Comput. Phys. 48:387-411, Tables I and II (Re = 100, within 1e-2) and their
primary vortex (Table III); the Richardson-extrapolated centre-line extrema against the
grid-converged values quoted from Botella & Peyret (1998) (within 5e-4); exact wall values.
Exits non-zero when a check fails. Ghia's 129 x 129 values are themselves off by up to ~9e-3
(v near x = 0.86, where the profile is steep): the converged solution agrees with the
Botella & Peyret extrema to ~1e-5 but stays 9e-3 from Ghia there, close to the 1e-2 limit.

Writes an HDF5 file laid out like Tessera's grid output (docs/output-format.md, "Grid output"):
    /grid/x [nx], /grid/y [ny], /fields/{u,v,p} [ny, nx] float64 (bicubic spline of the
    finest grid; with 400 cells and 101 points the output points are grid nodes), root
    attributes Re, cells, method, note, command, ...

Usage (Debian's /usr/bin/python3 has numpy, scipy and h5py):
    /usr/bin/python3 tools/reference/cavity.py --out cases/validation/data/cavity_re100.h5
    /usr/bin/python3 tools/reference/cavity.py --cells 32 --nx 21 --ny 21 --out small.h5

The default (400 cells, checks on 100 and 200) takes about a minute on one core and 1.3 GB of
memory (the sparse LU of the finest Newton system).
"""
import argparse
import os
import shlex
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core; set before numpy loads BLAS

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402

# Ghia, Ghia & Shin (1982), J. Comput. Phys. 48:387-411. Re = 100, 129 x 129 grid.
# Table I: u along the vertical line through the cavity's centre, x = 0.5.
GHIA_Y = [1.0, 0.9766, 0.9688, 0.9609, 0.9531, 0.8516, 0.7344, 0.6172, 0.5]
GHIA_Y += [0.4531, 0.2813, 0.1719, 0.1016, 0.0703, 0.0625, 0.0547, 0.0]
GHIA_U = [1.0, 0.84123, 0.78871, 0.73722, 0.68717, 0.23151, 0.00332, -0.13641, -0.20581]
GHIA_U += [-0.21090, -0.15662, -0.10150, -0.06434, -0.04775, -0.04192, -0.03717, 0.0]
# Table II: v along the horizontal line through the cavity's centre, y = 0.5.
GHIA_X = [1.0, 0.9688, 0.9609, 0.9531, 0.9453, 0.9063, 0.8594, 0.8047, 0.5]
GHIA_X += [0.2344, 0.2266, 0.1563, 0.0938, 0.0781, 0.0703, 0.0625, 0.0]
GHIA_V = [0.0, -0.05906, -0.07391, -0.08864, -0.10313, -0.16914, -0.22445, -0.24533, 0.05454]
GHIA_V += [0.17527, 0.17507, 0.16077, 0.12317, 0.10890, 0.10091, 0.09233, 0.0]
# Table III: the primary vortex, psi = -0.103423 at (0.6172, 0.7344).
GHIA_PSI_MIN = -0.103423
GHIA_VORTEX = (0.6172, 0.7344)
# Grid-converged Re = 100 centre-line extrema (value, place), as quoted in the benchmark
# literature from Botella & Peyret (1998), Comput. Fluids 27:421-433, with x mirrored to a lid
# moving towards +x: min u(0.5, y), max v(x, 0.5), min v(x, 0.5).
CONVERGED_EXTREMA = [(-0.2140424, 0.4581), (0.1795728, 0.2370), (-0.2538030, 0.8104)]
EXTREMA_NAMES = ["min u(0.5, y)", "max v(x, 0.5)", "min v(x, 0.5)"]


class Grid:
    """Uniform nodes x_i = i h, y_j = j h (i, j = 0..N); node (i, j) has index j (N + 1) + i."""

    def __init__(self, cells):
        self.cells = cells
        self.n = cells + 1
        self.h = 1.0 / cells
        self.x = np.linspace(0.0, 1.0, self.n)
        n, h = self.n, self.h
        eye = sp.identity(n, format="csr")
        d1 = sp.diags([-1.0, 1.0], [-1, 1], shape=(n, n)) / (2.0 * h)
        d2 = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(n, n)) / h**2
        # Rows of boundary nodes are meaningless in these; only interior rows are used.
        self.dx = sp.kron(eye, d1, format="csr")
        self.dy = sp.kron(d1, eye, format="csr")
        self.lap = (sp.kron(eye, d2) + sp.kron(d2, eye)).tocsr()
        mask = np.zeros((n, n), dtype=bool)
        mask[1:-1, 1:-1] = True
        self.interior = mask.ravel()

    def index(self, i, j):
        return np.asarray(j) * self.n + np.asarray(i)

    def walls(self):
        """Per wall: wall nodes (corners excluded), the next two nodes inwards, psi_s."""
        n = self.n
        k = np.arange(1, n - 1)
        return [
            (self.index(k, 0), self.index(k, 1), self.index(k, 2), 0.0),  # bottom
            (self.index(k, n - 1), self.index(k, n - 2), self.index(k, n - 3), -1.0),  # lid
            (self.index(0, k), self.index(1, k), self.index(2, k), 0.0),  # left
            (self.index(n - 1, k), self.index(n - 2, k), self.index(n - 3, k), 0.0),  # right
        ]


def row_select(mask):
    return sp.diags(mask.astype(np.float64))


def linear_parts(grid, reynolds):
    """The linear part of the system: matrix A and constant c, residual = A X + c + convection."""
    m = grid.n**2
    inner = row_select(grid.interior)
    bound = row_select(~grid.interior)
    eye = sp.identity(m, format="csr")
    # Wall vorticity rows: omega_w + (8 psi_1 - psi_2)/(2 h^2) - 3 psi_s / h = 0.
    rows, cols, vals = [], [], []
    const = np.zeros(2 * m)
    for wall, first, second, psi_s in grid.walls():
        rows += [wall, wall]
        cols += [first, second]
        vals += [np.full(wall.size, 4.0 / grid.h**2), np.full(wall.size, -0.5 / grid.h**2)]
        const[m + wall] = -3.0 * psi_s / grid.h
    wall_psi = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(m, m)
    )
    # Corner rows (omega = 0) are placeholders: no interior stencil reaches a corner.
    a = sp.bmat(
        [
            [inner @ (-grid.lap) + bound @ eye, -inner],
            [wall_psi, inner @ (-grid.lap / reynolds) + bound @ eye],
        ],
        format="csr",
    )
    return a, const


def newton(grid, reynolds, start=None, tol=1e-11, max_steps=30, verbose=True):
    """(psi, omega) as [n, n] arrays (index [j, i]), and the number of Newton steps. start: an
    initial state (psi and omega stacked, [2 n^2]); default at rest."""
    m = grid.n**2
    a, const = linear_parts(grid, reynolds)
    inner = row_select(grid.interior)
    state = np.zeros(2 * m) if start is None else start.copy()
    for step in range(1, max_steps + 1):
        psi, omega = state[:m], state[m:]
        psi_x, psi_y = grid.dx @ psi, grid.dy @ psi
        om_x, om_y = grid.dx @ omega, grid.dy @ omega
        convection = np.where(grid.interior, psi_y * om_x - psi_x * om_y, 0.0)
        residual = a @ state + const
        residual[m:] += convection
        d_psi = inner @ (sp.diags(om_x) @ grid.dy - sp.diags(om_y) @ grid.dx)
        d_omega = inner @ (sp.diags(psi_y) @ grid.dx - sp.diags(psi_x) @ grid.dy)
        zero = sp.csr_matrix((m, m))
        jac = a + sp.bmat([[zero, zero], [d_psi, d_omega]], format="csc")
        # COLAMD: the symmetric orderings fill the non-symmetric Jacobian in badly.
        delta = spla.spsolve(jac, residual, permc_spec="COLAMD")
        state -= delta
        change = np.abs(delta[:m]).max() / max(np.abs(state[:m]).max(), 1e-300)
        if verbose:
            print(
                f"    N = {grid.cells}: Newton step {step}, |residual| {np.abs(residual).max():.2e}, "
                f"relative psi change {change:.2e}"
            )
        if change < tol:
            break
        if not np.isfinite(change) or change > 1e3:
            raise RuntimeError(f"Newton diverged (N = {grid.cells}, step {step})")
    else:
        raise RuntimeError(f"Newton did not converge in {max_steps} steps (N = {grid.cells})")
    n = grid.n
    return state[:m].reshape(n, n), state[m:].reshape(n, n), step


def velocity(grid, psi):
    """u = psi_y, v = -psi_x: central differences inside, the boundary values on the walls."""
    h = grid.h
    u = np.zeros_like(psi)
    v = np.zeros_like(psi)
    u[1:-1, 1:-1] = (psi[2:, 1:-1] - psi[:-2, 1:-1]) / (2 * h)
    v[1:-1, 1:-1] = -(psi[1:-1, 2:] - psi[1:-1, :-2]) / (2 * h)
    u[-1, :] = 1.0  # the lid, corners included
    return u, v


def tangential(values, h):
    """d/ds of a wall's nodal values (corners at both ends): central inside, one-sided (second
    order, not using the corner) at the first and last non-corner nodes and at the corners."""
    d = np.empty_like(values)
    d[1:-1] = (values[2:] - values[:-2]) / (2 * h)
    d[1] = (-3 * values[1] + 4 * values[2] - values[3]) / (2 * h)
    d[-2] = (3 * values[-2] - 4 * values[-3] + values[-4]) / (2 * h)
    d[0] = (-3 * values[0] + 4 * values[1] - values[2]) / (2 * h)
    d[-1] = (3 * values[-1] - 4 * values[-2] + values[-3]) / (2 * h)
    return d


def pressure_gradient(grid, reynolds, u, v, omega):
    """f = grad p from the momentum equation at every node: (fx, fy), each [n, n]."""
    h, nu = grid.h, 1.0 / reynolds
    om = omega.copy()
    om[0, 0] = om[0, -1] = 0.0  # no-slip corners: the velocity gradient vanishes there
    fx = np.zeros_like(u)
    fy = np.zeros_like(u)
    c = slice(1, -1)
    ux = (u[c, 2:] - u[c, :-2]) / (2 * h)
    uy = (u[2:, c] - u[:-2, c]) / (2 * h)
    vx = (v[c, 2:] - v[c, :-2]) / (2 * h)
    vy = (v[2:, c] - v[:-2, c]) / (2 * h)
    omx = (om[c, 2:] - om[c, :-2]) / (2 * h)
    omy = (om[2:, c] - om[:-2, c]) / (2 * h)
    fx[c, c] = -(u[c, c] * ux + v[c, c] * uy) - nu * omy
    fy[c, c] = -(u[c, c] * vx + v[c, c] * vy) + nu * omx

    def inward(a, b, c2):  # one-sided second-order derivative at a wall, inwards
        return (-3 * a + 4 * b - c2) / (2 * h)

    # On the walls the convective term vanishes: f = nu (-omega_y, omega_x).
    fx[0, :] = -nu * inward(om[0, :], om[1, :], om[2, :])  # bottom: omega_y inwards
    fy[0, :] = nu * tangential(om[0, :], h)
    fx[-1, :] = nu * inward(om[-1, :], om[-2, :], om[-3, :])  # lid: omega_y = -d/ds
    fy[-1, :] = nu * tangential(om[-1, :], h)
    fx[:, 0] = -nu * tangential(om[:, 0], h)  # left wall
    fy[:, 0] = nu * inward(om[:, 0], om[:, 1], om[:, 2])
    fx[:, -1] = -nu * tangential(om[:, -1], h)  # right wall
    fy[:, -1] = -nu * inward(om[:, -1], om[:, -2], om[:, -3])
    # Top corners: p is singular there; take f from the neighbour along each edge (finite).
    fx[-1, 0], fx[-1, -1] = fx[-1, 1], fx[-1, -2]
    fy[-1, 0], fy[-1, -1] = fy[-2, 0], fy[-2, -1]
    return fx, fy


def pressure(grid, reynolds, u, v, omega):
    """Weighted least-squares p with p differences along edges = h * edge-averaged f; p(0,0)=0."""
    n, h = grid.n, grid.h
    fx, fy = pressure_gradient(grid, reynolds, u, v, omega)
    idx = np.arange(n * n).reshape(n, n)
    # Horizontal edges (j, i) -> (j, i+1), vertical edges (j, i) -> (j+1, i).
    tail = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    head = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    target = np.concatenate(
        [(0.5 * h * (fx[:, :-1] + fx[:, 1:])).ravel(), (0.5 * h * (fy[:-1, :] + fy[1:, :])).ravel()]
    )
    weight_h = np.ones((n, n - 1))
    weight_h[[0, -1], :] = 0.5  # edges on the bottom and top walls
    weight_v = np.ones((n - 1, n))
    weight_v[:, [0, -1]] = 0.5  # edges on the side walls
    weight = np.concatenate([weight_h.ravel(), weight_v.ravel()])
    edges = tail.size
    g = sp.csr_matrix(
        (
            np.concatenate([-np.ones(edges), np.ones(edges)]),
            (np.tile(np.arange(edges), 2), np.concatenate([tail, head])),
        ),
        shape=(edges, n * n),
    )
    g = g[:, 1:]  # p(0, 0) = 0: node 0 is not an unknown
    normal = (g.T @ sp.diags(weight) @ g).tocsc()
    rhs = g.T @ (weight * target)
    p = np.concatenate([[0.0], spla.spsolve(normal, rhs, permc_spec="MMD_AT_PLUS_A")])
    return p.reshape(n, n)


def prolong(coarse, grid):
    """A coarser solution's psi and omega, bilinearly interpolated to grid: a Newton start."""
    from scipy.interpolate import RegularGridInterpolator

    xc = coarse["grid"].x
    yy, xx = np.meshgrid(grid.x, grid.x, indexing="ij")
    points = np.stack([yy.ravel(), xx.ravel()], axis=1)
    parts = [RegularGridInterpolator((xc, xc), coarse[k])(points) for k in ("psi", "omega")]
    return np.concatenate(parts)


def solve(cells, reynolds, coarse=None, verbose=True):
    """Solution on N x N cells: dict with grid, psi, omega, u, v, p (arrays [n, n], index [j, i]).
    coarse: a solution on a coarser grid to start Newton from (grid sequencing)."""
    grid = Grid(cells)
    start = time.perf_counter()
    initial = None if coarse is None else prolong(coarse, grid)
    psi, omega, steps = newton(grid, reynolds, start=initial, verbose=verbose)
    u, v = velocity(grid, psi)
    newton_seconds = time.perf_counter() - start
    p = pressure(grid, reynolds, u, v, omega)
    seconds = time.perf_counter() - start
    if verbose:
        print(
            f"  N = {cells}: {steps} Newton steps, {seconds:.1f} s ({newton_seconds:.1f} s Newton)"
        )
    return {"grid": grid, "psi": psi, "omega": omega, "u": u, "v": v, "p": p, "seconds": seconds}


def centre_lines(sol):
    """u(0.5, y_j) and v(x_i, 0.5) at the grid nodes (N even: x = 0.5 is a node line)."""
    mid = sol["grid"].cells // 2
    return sol["u"][:, mid], sol["v"][mid, :]


def vortex(sol):
    """Minimum of psi and its place, refined by a quadratic fit around the minimum node."""
    psi, x = sol["psi"], sol["grid"].x
    j, i = np.unravel_index(np.argmin(psi), psi.shape)
    h = sol["grid"].h
    fxx = (psi[j, i + 1] - 2 * psi[j, i] + psi[j, i - 1]) / h**2
    fyy = (psi[j + 1, i] - 2 * psi[j, i] + psi[j - 1, i]) / h**2
    fxy = (psi[j + 1, i + 1] - psi[j + 1, i - 1] - psi[j - 1, i + 1] + psi[j - 1, i - 1]) / (
        4 * h**2
    )
    gx = (psi[j, i + 1] - psi[j, i - 1]) / (2 * h)
    gy = (psi[j + 1, i] - psi[j - 1, i]) / (2 * h)
    hess = np.array([[fxx, fxy], [fxy, fyy]])
    step = -np.linalg.solve(hess, [gx, gy])
    value = psi[j, i] + 0.5 * np.dot([gx, gy], step)
    return value, x[i] + step[0], x[j] + step[1]


def spline(sol, name, xs, ys):
    from scipy.interpolate import RectBivariateSpline

    x = sol["grid"].x
    # RectBivariateSpline takes [len(first axis), len(second axis)] = [y, x] here.
    return RectBivariateSpline(x, x, sol[name], kx=3, ky=3, s=0)(ys, xs)


def extrema(sol):
    """(min of u(0.5, y), max and min of v(x, 0.5)) with their places, from cubic splines."""
    from scipy.interpolate import CubicSpline

    x = sol["grid"].x
    out = []
    for line, pick in zip(centre_lines(sol), ((np.argmin,), (np.argmax, np.argmin))):
        curve = CubicSpline(x, line)
        places = curve.derivative().roots(extrapolate=False)
        values = curve(places)
        for choose in pick:
            k = choose(values)
            out.append((float(values[k]), float(places[k])))
    return out


def self_check(solutions, reynolds):
    """Prints each check; returns (ok, summary dict of the figures)."""
    from scipy.interpolate import CubicSpline

    ok = True
    summary = {}

    def report(name, value, limit):
        nonlocal ok
        passed = value <= limit
        ok &= passed
        print(f"  {'ok  ' if passed else 'FAIL'} {name}: {value:.3e} (limit {limit:.3g})")

    fine = solutions[-1]
    cells = [s["grid"].cells for s in solutions]
    n_fine = cells[-1]
    if len(solutions) == 3:
        print(
            f"  grid convergence on N = {cells[0]}, {cells[1]}, {cells[2]} cells: max abs differences"
        )
        print("  at the common nodes (ratio ~ 4 for second order)")
        ratios = {}
        for label, pick in (("u(0.5, y)", 0), ("v(x, 0.5)", 1)):
            lines = [centre_lines(s)[pick] for s in solutions]
            d1 = np.abs(lines[0] - lines[1][::2]).max()
            d2 = np.abs(lines[1][::2] - lines[2][::4]).max()
            ratios[label] = d1 / d2
            summary[label] = (d1, d2)
            print(f"       {label}: {d1:.3e}, {d2:.3e}, ratio {d1 / d2:.2f}")
        # p is singular at the top corners: compare it away from them.
        coarse = solutions[0]["grid"]
        yy, xx = np.meshgrid(coarse.x, coarse.x, indexing="ij")
        corner_distance = np.minimum(np.hypot(xx, yy - 1), np.hypot(xx - 1, yy - 1))
        ps = [s["p"][:: 2**k, :: 2**k] for k, s in enumerate(solutions)]
        for radius in (0.1, 0.3):
            away = corner_distance > radius
            d1 = np.abs(ps[0] - ps[1])[away].max()
            d2 = np.abs(ps[1] - ps[2])[away].max()
            label = f"p more than {radius} from the top corners"
            ratios[label] = d1 / d2
            summary[label] = (d1, d2)
            print(f"       {label}: {d1:.3e}, {d2:.3e}, ratio {d1 / d2:.2f}")
        for label in ("u(0.5, y)", "v(x, 0.5)", "p more than 0.3 from the top corners"):
            report(f"|ratio - 4| for {label}", abs(ratios[label] - 4.0), 1.0)
        # Second order: the difference is C / N^2; C is about 45 here (60 leaves a margin).
        finest = max(summary["u(0.5, y)"][1], summary["v(x, 0.5)"][1])
        report(
            f"centre lines, N = {cells[1]} vs {n_fine}, max abs diff", finest, 60.0 / n_fine**2
        )
    if reynolds != 100.0:
        print("  Re is not 100: the comparisons with published Re = 100 values are skipped")
        return ok, summary

    # Ghia et al. (1982) at their points, from cubic splines through the finest centre lines.
    u_line, v_line = centre_lines(fine)
    x = fine["grid"].x
    u_here = CubicSpline(x, u_line)(GHIA_Y)
    v_here = CubicSpline(x, v_line)(GHIA_X)
    print(f"  Ghia, Ghia & Shin (1982), Re = 100, against N = {n_fine}:")
    print("       y       u Ghia    u here    |  x       v Ghia    v here")
    for k in range(len(GHIA_Y)):
        print(
            f"       {GHIA_Y[k]:.4f}  {GHIA_U[k]:+.5f}  {u_here[k]:+.5f}  |  "
            f"{GHIA_X[k]:.4f}  {GHIA_V[k]:+.5f}  {v_here[k]:+.5f}"
        )
    du = np.abs(u_here - np.array(GHIA_U))
    dv = np.abs(v_here - np.array(GHIA_V))
    summary["ghia"] = (du.max(), dv.max())
    report("max |u - u_Ghia| on x = 0.5", du.max(), 1e-2)
    report("max |v - v_Ghia| on y = 0.5", dv.max(), 1e-2)
    value, xv, yv = vortex(fine)
    print(
        f"       psi_min = {value:.6f} at ({xv:.4f}, {yv:.4f}); Ghia: {GHIA_PSI_MIN} at {GHIA_VORTEX}"
    )
    report("|psi_min - psi_min Ghia|", abs(value - GHIA_PSI_MIN), 2e-3)
    report(
        "vortex centre, distance to Ghia's",
        np.hypot(xv - GHIA_VORTEX[0], yv - GHIA_VORTEX[1]),
        2e-2,
    )
    if len(solutions) == 3:
        # Richardson extrapolation of the centre-line extrema from the two finest grids.
        print(
            f"  centre-line extrema, N = {cells[1]}, {n_fine}, extrapolated, grid-converged values:"
        )
        pairs = zip(extrema(solutions[1]), extrema(fine), CONVERGED_EXTREMA, EXTREMA_NAMES)
        worst = 0.0
        for (v1, _), (v2, where), (ref, ref_where), name in pairs:
            extrapolated = v2 + (v2 - v1) / 3.0
            worst = max(worst, abs(extrapolated - ref))
            print(
                f"       {name}: {v1:+.5f}, {v2:+.5f} at {where:.4f}, {extrapolated:+.6f}; "
                f"{ref:+.7f} at {ref_where}"
            )
        summary["extrema"] = worst
        report("extrapolated extrema, max abs diff from the converged values", worst, 5e-4)
    # Mass conservation is built in (u from psi); the boundary values must hold exactly.
    u, v = fine["u"], fine["v"]
    walls = np.concatenate([u[0], u[:-1, 0], u[:-1, -1], v[0], v[-1], v[:, 0], v[:, -1]])
    report("no-slip walls, max |u|, |v|", np.abs(walls).max(), 0.0)
    report("lid, max |u - 1|", np.abs(u[-1] - 1).max(), 0.0)
    report("|p(0, 0)|", abs(fine["p"][0, 0]), 0.0)
    return ok, summary


def output_fields(sol, xs, ys):
    """u, v, p on the output grid ([len(ys), len(xs)]): bicubic splines of the solution, exact
    wall values, p(0, 0) = 0, and at the two top corners (where p is singular and the grid value
    grows like 1/h) the mean of the two neighbouring output points on the walls."""
    fields = {name: spline(sol, name, xs, ys) for name in ("u", "v", "p")}
    u, v, p = fields["u"], fields["v"], fields["p"]
    u[0, :] = u[:, 0] = u[:, -1] = 0.0
    u[-1, :] = 1.0  # the lid, corners included
    v[0, :] = v[-1, :] = v[:, 0] = v[:, -1] = 0.0
    p -= p[0, 0]
    p[-1, 0] = 0.5 * (p[-1, 1] + p[-2, 0])
    p[-1, -1] = 0.5 * (p[-1, -2] + p[-2, -1])
    return fields


def write(path, xs, ys, fields, attrs):
    import h5py

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    partial = path + ".partial"  # renamed when complete: never a half-written reference
    with h5py.File(partial, "w") as f:
        f["/grid/x"] = xs
        f["/grid/y"] = ys
        for name, values in fields.items():
            f["/fields/" + name] = np.ascontiguousarray(values, dtype=np.float64)
        for key, value in attrs.items():
            f.attrs[key] = value
    os.replace(partial, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=400, help="cells per side of the finest grid")
    parser.add_argument(
        "--re",
        type=float,
        default=100.0,
        help="Reynolds number (only Re = 100 is checked against published values; a higher Re "
        "needs more cells for the coarsest grid, N/4, to start Newton)",
    )
    parser.add_argument(
        "--nx", type=int, default=101, help="output points in x, both ends included"
    )
    parser.add_argument(
        "--ny", type=int, default=101, help="output points in y, both ends included"
    )
    parser.add_argument("--out", required=True, help="HDF5 file to write")
    parser.add_argument("--no-check", action="store_true", help="skip the checks")
    args = parser.parse_args(argv)
    if args.cells < 16 or args.cells % 8 or args.nx < 2 or args.ny < 2 or args.re <= 0:
        parser.error("need cells >= 16 and a multiple of 8, nx, ny >= 2, re > 0")

    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    print(f"command: {command}")
    start = time.perf_counter()
    levels = [args.cells // 4, args.cells // 2, args.cells]  # the coarse ones start Newton
    print(f"solving Re = {args.re:g} on {', '.join(f'{c} x {c}' for c in levels)} cells:")
    solutions = []
    try:
        for c in levels:
            solutions.append(solve(c, args.re, coarse=solutions[-1] if solutions else None))
    except RuntimeError as error:  # Newton failed: too coarse a grid for this Re
        print(f"{error}; nothing written (try more cells)", file=sys.stderr)
        return 1
    xs = np.linspace(0.0, 1.0, args.nx)
    ys = np.linspace(0.0, 1.0, args.ny)
    fields = output_fields(solutions[-1], xs, ys)
    if not args.no_check:
        check_start = time.perf_counter()
        print("self-checks:")
        ok, _ = self_check(solutions, args.re)
        # How far the written values are from the same output of the next coarser grid.
        coarser = output_fields(solutions[-2], xs, ys)
        print(f"  written grid, N = {levels[-2]} vs {levels[-1]}: max abs, relative L2 differences")
        for name in ("u", "v", "p"):
            diff = coarser[name] - fields[name]
            relative = np.linalg.norm(diff) / np.linalg.norm(fields[name])
            print(f"       {name}: {np.abs(diff).max():.3e}, {relative:.3e}")
        print(f"checks took {time.perf_counter() - check_start:.2f} s")
        if not ok:
            print("a self-check failed; nothing written", file=sys.stderr)
            return 1
    attrs = {
        "Re": args.re,
        "case_name": "cavity_re100" if args.re == 100.0 else "cavity",
        "coordinates": "x,y",
        "cells": args.cells,
        "method": "streamfunction-vorticity, 2nd-order central differences, Jensen wall "
        "vorticity, Newton + sparse LU; p by least squares from the momentum equation; "
        "bicubic spline to the output grid",
        "pressure_gauge": "p(0, 0) = 0",
        "note": "p is singular (~1/r) at the top corners (0, 1) and (1, 1); the values written "
        "there are the means of their two neighbours on the walls, and p next to them is not "
        "grid-converged",
        "command": command,
    }
    write(args.out, xs, ys, fields, attrs)
    print(
        f"wrote {args.out} (/grid/x [{args.nx}], /grid/y [{args.ny}], /fields/u,v,p "
        f"[{args.ny}, {args.nx}]) in {time.perf_counter() - start:.2f} s total"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
