#!/usr/bin/python3
"""Reference solution of the Allen-Cahn equation for Tessera's `"reference"` key.

    u_t - eps u_xx + 5 u^3 - 5 u = 0,   x in [-1, 1] periodic,  t in [0, 1],
    u(x, 0) = x^2 cos(pi x),            eps = 1e-4 by default,

the setting of Raissi et al. (2019, J. Comput. Phys. 378:686-707) and of the PirateNets /
jaxpi benchmarks.

Method: Fourier pseudo-spectral in x (`--modes` points x_j = -1 + 2 j / modes) and ETDRK4 in
time (Cox & Matthews 2002, J. Comput. Phys. 176:430-455) for u_hat' = L u_hat + N(u)_hat with
L = -eps k^2 and N(u) = 5 u - 5 u^3. The coefficients of ETDRK4 are evaluated by the
contour-integral means of Kassam & Trefethen (2005, SIAM J. Sci. Comput. 26:1214-1233), which
avoid the cancellation of their closed forms near L = 0.

The periodic extension of u(x, 0) has a kink at x = +-1 (u_x(-1, 0) = 2, u_x(1, 0) = -2), so its
Fourier coefficients fall off only like 1/k^2. The solver therefore starts from the exact Fourier
coefficients of u(x, 0) (integrals in closed form, modes |m| < modes / 2), not from its values at
the grid points: sampling aliases the kink into an error that falls off only like modes^-2
(about 2e-5 near x = +-1 at t = 0.005 with 4096 modes). From the exact coefficients the
solution converges spectrally (4096 vs 8192 modes: ~3e-12). The row t = 0 of the output is
x^2 cos(pi x) itself.

The default (8192 modes, dt = 6.25e-4) takes about 12 s on one core, checks included.

Checks: the initial condition, convergence in dt (dt, 2 dt, 4 dt: ratio ~ 16 for fourth order)
and in the number of modes (modes / 2 vs modes), |u| <= 1 (maximum principle), even symmetry
u(-x, t) = u(x, t) (u(x, 0) is even), and the decay of the energy
E(t) = int eps/2 u_x^2 + 5/4 (u^2 - 1)^2 dx (the equation is its L2 gradient flow). Exits
non-zero when a check fails.

Writes an HDF5 file laid out like Tessera's grid output (docs/output-format.md, "Grid output"):
    /grid/x [nx] (x = -1 .. 1, both ends: u(1, t) = u(-1, t) by periodicity), /grid/t [nt],
    /fields/u [nt, nx] float64, root attributes eps, modes, dt, method, command, ...

Usage (Debian's /usr/bin/python3 has numpy, scipy and h5py):
    /usr/bin/python3 tools/reference/allen_cahn.py --out cases/validation/data/allen_cahn.h5
    /usr/bin/python3 tools/reference/allen_cahn.py --modes 256 --dt 1e-3 --nx 65 --nt 11 --out small.h5
"""
import argparse
import os
import shlex
import sys
import time

import numpy as np


def etdrk4_coefficients(lin, dt, contour_points=64):
    """exp(dt L), exp(dt L / 2) and the ETDRK4 weights Q, f1, f2, f3 for the diagonal L (real),
    each as the mean over a circle of radius 1 around dt L (Kassam & Trefethen 2005)."""
    z = dt * lin
    roots = np.exp(2j * np.pi * (np.arange(contour_points) + 0.5) / contour_points)
    lr = z[:, None] + roots[None, :]
    e_lr = np.exp(lr)

    def mean(values):
        return dt * np.real(values.mean(axis=1))

    q = mean((np.exp(lr / 2) - 1) / lr)
    f1 = mean((-4 - lr + e_lr * (4 - 3 * lr + lr**2)) / lr**3)
    f2 = mean((2 + lr + e_lr * (lr - 2)) / lr**3)
    f3 = mean((-4 - 3 * lr - lr**2 + e_lr * (4 - lr)) / lr**3)
    return np.exp(z), np.exp(z / 2), q, f1, f2, f3


def wavenumbers(modes):
    """k for numpy's rfft on `modes` points over the period 2: k = pi m, m = 0 .. modes/2."""
    return np.pi * np.arange(modes // 2 + 1)


def initial_coefficients(modes):
    """rfft-normalised Fourier coefficients of u(x, 0) = x^2 cos(pi x), exact, |m| < modes / 2.

    u0 = sum_m c_m exp(i pi m x) with c_m = int_0^1 x^2 cos(pi x) cos(pi m x) dx (u0 is even)
       = (I(m + 1) + I(m - 1)) / 2,  I(n) = int_0^1 x^2 cos(pi n x) dx = 2 (-1)^n / (pi n)^2,
    I(0) = 1/3. At x_j = -1 + 2 j / modes, exp(i pi m x_j) = (-1)^m exp(2 pi i m j / modes), so
    numpy's irfft needs modes (-1)^m c_m. The Nyquist mode is left out (zero)."""

    def integral(n):
        n = np.asarray(n, dtype=np.float64)
        safe = np.where(n == 0, 1.0, n)
        return np.where(n == 0, 1.0 / 3.0, 2.0 * (-1.0) ** np.abs(safe) / (np.pi * safe) ** 2)

    m = np.arange(modes // 2 + 1)
    c = 0.5 * (integral(m + 1) + integral(m - 1))
    v = modes * (-1.0) ** m * c
    v[-1] = 0.0
    return v.astype(np.complex128)


def solve(modes, dt, t_out, eps=1e-4):
    """u at the points x_j = -1 + 2 j / modes and the times t_out (multiples of dt, from 0):
    array [len(t_out), modes]. Rows at t = 0 are x^2 cos(pi x) sampled."""
    x = -1.0 + 2.0 * np.arange(modes) / modes
    k = wavenumbers(modes)
    e, e2, q, f1, f2, f3 = etdrk4_coefficients(-eps * k**2, dt)

    def nonlinear(v_hat):
        u = np.fft.irfft(v_hat, n=modes)
        return np.fft.rfft(5.0 * u - 5.0 * u**3)

    t_out = np.asarray(t_out, dtype=np.float64)
    steps = np.rint(t_out / dt).astype(int)
    off_grid = np.abs(steps * dt - t_out).max() > 1e-9 * max(1.0, t_out.max())
    if off_grid or np.any(np.diff(steps) < 0) or steps[0] < 0:
        raise ValueError("output times must be increasing non-negative multiples of dt")
    u0 = x**2 * np.cos(np.pi * x)
    v = initial_coefficients(modes)
    out = np.empty((len(steps), modes))
    done = 0
    for row, target in enumerate(steps):
        while done < target:
            nv = nonlinear(v)
            a = e2 * v + q * nv
            na = nonlinear(a)
            b = e2 * v + q * na
            nb = nonlinear(b)
            c = e2 * a + q * (2.0 * nb - nv)
            nc = nonlinear(c)
            v = e * v + f1 * nv + 2.0 * f2 * (na + nb) + f3 * nc
            done += 1
        out[row] = u0 if target == 0 else np.fft.irfft(v, n=modes)
    return x, out


def energy(u, eps):
    """E = int_{-1}^{1} eps/2 u_x^2 + 5/4 (u^2 - 1)^2 dx for each row of u (periodic samples)."""
    modes = u.shape[-1]
    k = wavenumbers(modes)
    u_x = np.fft.irfft(1j * k * np.fft.rfft(u, axis=-1), n=modes, axis=-1)
    density = 0.5 * eps * u_x**2 + 1.25 * (u**2 - 1.0) ** 2
    return density.mean(axis=-1) * 2.0  # the trapezoidal rule, spectrally accurate here


def to_output(u, modes, nx):
    """Rows of u on `modes` periodic points -> nx points on [-1, 1] with both ends (nx - 1 must
    divide modes)."""
    stride = modes // (nx - 1)
    sampled = u[:, ::stride]
    return np.concatenate([sampled, sampled[:, :1]], axis=1)


def self_check(u, u_modes, t, modes, dt, eps, nx):
    """u: [nt, nx] on the output grid, u_modes: [nt, modes] on the solver's grid. Prints each
    check; returns (ok, summary)."""
    ok = True
    summary = {}

    def report(name, value, limit):
        nonlocal ok
        passed = value <= limit
        ok &= passed
        print(f"  {'ok  ' if passed else 'FAIL'} {name}: {value:.3e} (limit {limit:.3g})")

    x = np.linspace(-1.0, 1.0, nx)
    report(
        "t = 0 vs x^2 cos(pi x), max abs diff",
        np.abs(u[0] - x**2 * np.cos(np.pi * x)).max(),
        1e-15,
    )
    report("periodic ends, max |u(1, t) - u(-1, t)|", np.abs(u[:, -1] - u[:, 0]).max(), 0.0)
    report("even symmetry, max |u(x, t) - u(-x, t)|", np.abs(u - u[:, ::-1]).max(), 1e-10)
    report("max |u| - 1 (maximum principle)", max(np.abs(u).max() - 1.0, 0.0), 1e-6)

    # Time step: dt, 2 dt and 4 dt (the output times stay multiples of each).
    coarse_dt = [2 * dt, 4 * dt]
    runs = [u]
    for step in coarse_dt:
        if not np.allclose(np.rint(t / step) * step, t, atol=1e-12):
            print(f"  (dt check skipped: the output times are not multiples of {step:g})")
            break
        runs.append(to_output(solve(modes, step, t, eps)[1], modes, nx))
    if len(runs) == 3:
        d1 = np.abs(runs[2] - runs[1]).max()
        d2 = np.abs(runs[1] - runs[0]).max()
        summary["dt"] = (d1, d2)
        print(
            f"       dt {4 * dt:g} vs {2 * dt:g}: {d1:.3e}; {2 * dt:g} vs {dt:g}: {d2:.3e}; ratio {d1 / d2:.1f}"
        )
        report(f"dt {2 * dt:g} vs {dt:g}, max abs diff", d2, 1e-6)
        if d2 > 1e-11:  # above round-off the ratio must show fourth order
            report("|log2(ratio) - 4| (fourth order in dt)", abs(np.log2(d1 / d2) - 4.0), 0.5)
    # Modes: half as many (the output points are a subset while 2 (nx - 1) divides modes).
    if modes % (2 * (nx - 1)) == 0:
        half = to_output(solve(modes // 2, dt, t, eps)[1], modes // 2, nx)
        dm = np.abs(half - u).max()
        summary["modes"] = dm
        report(f"modes {modes // 2} vs {modes}, max abs diff", dm, 1e-6)
    else:
        print("  (mode check skipped: nx - 1 does not divide modes / 2)")
    # Energy decay, on the solver's grid at the output times (from t = 0 on: the kink of
    # u(x, 0) makes E(0) of the sampled rows slightly off, which does not matter for a decrease).
    e = energy(u_modes[1:], eps)
    rise = max(np.diff(e).max(), 0.0)
    print(
        f"       energy: E(t1) = {e[0]:.6f}, E(middle) = {e[len(e) // 2]:.6f}, E(end) = {e[-1]:.6f}"
    )
    report("largest rise of the energy between output times", rise, 1e-10)
    return ok, summary


def write(path, x, t, u, attrs):
    import h5py

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    partial = path + ".partial"  # renamed when complete: never a half-written reference
    with h5py.File(partial, "w") as f:
        f["/grid/x"] = x
        f["/grid/t"] = t
        f["/fields/u"] = np.ascontiguousarray(u, dtype=np.float64)
        for key, value in attrs.items():
            f.attrs[key] = value
    os.replace(partial, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", type=int, default=8192, help="Fourier points (even)")
    parser.add_argument("--dt", type=float, default=6.25e-4, help="ETDRK4 time step")
    parser.add_argument("--eps", type=float, default=1e-4, help="diffusion coefficient")
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument(
        "--nx", type=int, default=513, help="output points in x, both ends included"
    )
    parser.add_argument(
        "--nt", type=int, default=201, help="output points in t, 0 and t-end included"
    )
    parser.add_argument("--out", required=True, help="HDF5 file to write")
    parser.add_argument("--no-check", action="store_true", help="skip the self-checks")
    args = parser.parse_args(argv)
    if args.modes < 4 or args.modes % 2 or args.nx < 3 or args.modes % (args.nx - 1):
        parser.error("need an even modes >= 4 and nx >= 3 with nx - 1 dividing modes")
    if args.nt < 2 or args.dt <= 0 or args.eps <= 0 or args.t_end <= 0:
        parser.error("need nt >= 2, dt > 0, eps > 0, t-end > 0")
    t = np.linspace(0.0, args.t_end, args.nt)
    per_output = args.t_end / (args.nt - 1) / args.dt
    if abs(per_output - round(per_output)) > 1e-9 * per_output:
        parser.error("dt must divide the output interval t-end / (nt - 1)")

    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    print(f"command: {command}")
    start = time.perf_counter()
    _, u_modes = solve(args.modes, args.dt, t, args.eps)
    u = to_output(u_modes, args.modes, args.nx)
    x = np.linspace(-1.0, 1.0, args.nx)
    print(
        f"solved with {args.modes} modes, dt = {args.dt:g} ({round(args.t_end / args.dt)} steps), "
        f"eps = {args.eps:g}: {time.perf_counter() - start:.2f} s"
    )
    if not args.no_check:
        check_start = time.perf_counter()
        print("self-checks:")
        ok, _ = self_check(u, u_modes, t, args.modes, args.dt, args.eps, args.nx)
        print(f"checks took {time.perf_counter() - check_start:.2f} s")
        if not ok:
            print("a self-check failed; nothing written", file=sys.stderr)
            return 1
    attrs = {
        "eps": args.eps,
        "case_name": "allen_cahn",
        "coordinates": "x,t",
        "time_coordinate": "t",
        "modes": args.modes,
        "dt": args.dt,
        "method": "Fourier pseudo-spectral in x from the exact Fourier coefficients of u(x, 0), "
        "ETDRK4 in t (Kassam & Trefethen contour coefficients); output at every "
        "(modes / (nx - 1))-th grid point, x = 1 by periodicity",
        "command": command,
    }
    write(args.out, x, t, u, attrs)
    print(
        f"wrote {args.out} (/grid/x [{args.nx}], /grid/t [{args.nt}], /fields/u [{args.nt}, {args.nx}]) "
        f"in {time.perf_counter() - start:.2f} s total"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
