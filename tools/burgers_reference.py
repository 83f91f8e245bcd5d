#!/usr/bin/python3
"""Reference solution of the viscous Burgers equation for Tessera's `"reference"` key.

    u_t + u u_x = nu u_xx,   x in [-1, 1],  t in [0, 1],
    u(x, 0) = -sin(pi x),    u(-1, t) = u(1, t) = 0,      nu = 0.01/pi by default.

Cole-Hopf (Basdevant et al. 1986, Computers & Fluids 14:23-41):

    u(x, t) = - int sin(pi(x-e)) f(x-e) G(e, t) de / int f(x-e) G(e, t) de,
    f(y) = exp(-cos(pi y) / (2 pi nu)),   G(e, t) = exp(-e^2 / (4 nu t)),

evaluated with Gauss-Hermite quadrature after e = sqrt(4 nu t) z. Exponents are combined in
log space (log-sum-exp), so small nu does not overflow.

Writes an HDF5 file laid out like Tessera's grid output (docs/output-format.md, "Grid output"):
    /grid/x [nx], /grid/t [nt], /fields/u [nt, nx] float64, root attributes nu, nodes, ...

Usage (Debian's /usr/bin/python3 has numpy, scipy and h5py):
    /usr/bin/python3 tools/burgers_reference.py --out cases/data/burgers_ref.h5
    /usr/bin/python3 tools/burgers_reference.py --nx 512 --nt 201 --nu 0.003183 --out ref.h5

It checks itself before writing (initial condition, boundary values, symmetry, convergence in
the number of nodes, and Basdevant's maximum slope for the default nu) and exits non-zero when
a check fails; --no-check skips the checks.
"""
import argparse
import math
import os
import shlex
import sys
import time

import numpy as np

# Basdevant et al. (1986): for nu = 0.01/pi, max |u_x| = 152.00516 at x = 0, t = 1.6037/pi.
BASDEVANT_SLOPE = 152.00516
BASDEVANT_TIME = 1.6037 / math.pi


def hermite_rule(nodes):
    """Gauss-Hermite nodes z and log-weights for int exp(-z^2) g(z) dz."""
    # numpy's hermgauss overflows beyond ~150 nodes; scipy switches to an asymptotic method.
    from scipy.special import roots_hermite

    z, w = roots_hermite(nodes)
    with np.errstate(divide="ignore"):
        return z, np.log(w)  # underflowed weights become -inf: they contribute nothing


def solve(x, t, nu, nodes, derivative=False):
    """u(x, t) (and u_x when derivative) on the outer product: shape [len(t), len(x)]."""
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    z, log_w = hermite_rule(nodes)
    u = np.empty((t.size, x.size))
    ux = np.empty((t.size, x.size))
    for k, tk in enumerate(t):
        if tk <= 0.0:
            u[k] = -np.sin(np.pi * x)
            ux[k] = -np.pi * np.cos(np.pi * x)
            continue
        eta = math.sqrt(4.0 * nu * tk) * z  # [nodes]
        y = x[:, None] - eta[None, :]  # [nx, nodes]
        s = np.sin(np.pi * y)
        exponent = log_w[None, :] - np.cos(np.pi * y) / (2.0 * np.pi * nu)
        weight = np.exp(exponent - exponent.max(axis=1, keepdims=True))  # log-sum-exp shift
        den = weight.sum(axis=1)
        num = (s * weight).sum(axis=1)
        u[k] = -num / den
        if derivative:
            # d/dx of the exponent is sin(pi y)/(2 nu); quotient rule on -num/den.
            g = s / (2.0 * nu)
            dnum = ((np.pi * np.cos(np.pi * y) + s * g) * weight).sum(axis=1)
            dden = (g * weight).sum(axis=1)
            ux[k] = -(dnum * den - num * dden) / den**2
    return (u, ux) if derivative else u


def max_slope(nu, nodes):
    """max over t of |u_x(0, t)|, by bounded scalar minimisation around Basdevant's time."""
    from scipy.optimize import minimize_scalar

    def negative_slope(tk):
        return -abs(solve([0.0], [tk], nu, nodes, derivative=True)[1][0, 0])

    res = minimize_scalar(
        negative_slope, bounds=(0.3, 0.8), method="bounded", options={"xatol": 1e-9}
    )
    return -res.fun, res.x


def self_check(x, t, u, nu, nodes):
    """Prints each check; returns False when one fails."""
    ok = True

    def report(name, value, limit):
        nonlocal ok
        passed = value <= limit
        ok &= passed
        print(f"  {'ok  ' if passed else 'FAIL'} {name}: {value:.3e} (limit {limit:.0e})")

    report("t=0 vs -sin(pi x), max abs diff", np.abs(u[0] + np.sin(np.pi * x)).max(), 1e-14)
    report("|u(+-1, t)| max", max(np.abs(u[:, 0]).max(), np.abs(u[:, -1]).max()), 1e-12)
    report("odd symmetry |u(x,t) + u(-x,t)| max", np.abs(u + u[:, ::-1]).max(), 1e-10)
    u0 = solve([0.0], t, nu, nodes)
    report("|u(0, t)| max", np.abs(u0).max(), 1e-12)
    fine = solve(x, t, nu, 2 * nodes)
    report(f"nodes {nodes} vs {2 * nodes}, max abs diff", np.abs(fine - u).max(), 1e-8)
    report("max |u| - 1 (maximum principle)", max(np.abs(u).max() - 1.0, 0.0), 1e-12)
    _, ux = solve([0.0], [1.0 / np.pi], nu, nodes, derivative=True)
    print(f"       u_x(0, 1/pi) = {ux[0, 0]:.6f}")
    if abs(nu - 0.01 / np.pi) < 1e-15:
        slope, when = max_slope(nu, nodes)
        print(
            f"       max |u_x(0, t)| = {slope:.5f} at t = {when * np.pi:.4f}/pi "
            f"(Basdevant et al.: {BASDEVANT_SLOPE} at t = 1.6037/pi)"
        )
        report(
            "relative error of the max slope vs Basdevant",
            abs(slope - BASDEVANT_SLOPE) / BASDEVANT_SLOPE,
            1e-6,
        )
        report("time of the max slope vs Basdevant", abs(when - BASDEVANT_TIME), 1e-4)
    return ok


def write(path, x, t, u, nu, nodes, command):
    import h5py

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    partial = path + ".partial"  # renamed when complete: never a half-written reference
    with h5py.File(partial, "w") as f:
        f["/grid/x"] = x
        f["/grid/t"] = t
        f["/fields/u"] = u
        f.attrs["nu"] = nu
        f.attrs["case_name"] = "burgers_reference"
        f.attrs["coordinates"] = "x,t"
        f.attrs["time_coordinate"] = "t"
        f.attrs["quadrature_nodes"] = nodes
        f.attrs["method"] = "Cole-Hopf, Gauss-Hermite quadrature"
        f.attrs["command"] = command
    os.replace(partial, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nx", type=int, default=256, help="points in x, including both ends")
    parser.add_argument("--nt", type=int, default=101, help="points in t, including 0 and t-end")
    parser.add_argument(
        "--nu", type=float, default=0.01 / np.pi, help="viscosity (default 0.01/pi)"
    )
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--nodes", type=int, default=400, help="Gauss-Hermite nodes")
    parser.add_argument("--out", required=True, help="HDF5 file to write")
    parser.add_argument("--no-check", action="store_true", help="skip the self-checks")
    args = parser.parse_args(argv)
    if args.nx < 2 or args.nt < 1 or args.nu <= 0 or args.nodes < 2 or args.t_end <= 0:
        parser.error("need nx >= 2, nt >= 1, nu > 0, nodes >= 2, t-end > 0")

    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    print(f"command: {command}")
    start = time.perf_counter()
    x = np.linspace(-1.0, 1.0, args.nx)
    t = np.linspace(0.0, args.t_end, args.nt)
    u = solve(x, t, args.nu, args.nodes)
    print(
        f"solved {args.nt} x {args.nx} points, {args.nodes} nodes, nu = {args.nu:.9g}: "
        f"{time.perf_counter() - start:.2f} s"
    )
    if not args.no_check:
        check_start = time.perf_counter()
        print("self-checks:")
        ok = self_check(x, t, u, args.nu, args.nodes)
        print(f"checks took {time.perf_counter() - check_start:.2f} s")
        if not ok:
            print("a self-check failed; nothing written", file=sys.stderr)
            return 1
    write(args.out, x, t, u, args.nu, args.nodes, command)
    print(
        f"wrote {args.out} (/grid/x [{args.nx}], /grid/t [{args.nt}], /fields/u [{args.nt}, {args.nx}]) "
        f"in {time.perf_counter() - start:.2f} s total"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
