#!/usr/bin/python3
"""Checks tools/reference/cavity.py, allen_cahn.py and variable_heat.py on coarse, fast settings:
file layout (Tessera grid output), boundary and initial values, and the self-check exit codes
(0 when the checks pass, non-zero and no file when one fails).

Run: /usr/bin/python3 tests/tools/test_reference_solvers.py
"""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import h5py
import numpy as np

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "reference")
CAVITY = os.path.join(FOLDER, "cavity.py")
ALLEN_CAHN = os.path.join(FOLDER, "allen_cahn.py")
VARIABLE_HEAT = os.path.join(FOLDER, "variable_heat.py")
sys.path.insert(0, FOLDER)
import allen_cahn  # noqa: E402
import cavity  # noqa: E402

ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def run(script, *args):
    return subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, env=ENV, timeout=120
    )


class Cavity(unittest.TestCase):
    def test_writes_grid_output_layout_after_passing_self_checks(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sub", "cavity.h5")
            done = run(CAVITY, "--cells", "64", "--nx", "21", "--ny", "11", "--out", out)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertNotIn("FAIL", done.stdout)
            self.assertIn("Ghia", done.stdout)
            self.assertFalse(os.path.exists(out + ".partial"))
            with h5py.File(out, "r") as f:
                self.assertEqual(sorted(f["/grid"].keys()), ["x", "y"])
                self.assertEqual(sorted(f["/fields"].keys()), ["p", "u", "v"])
                x, y = f["/grid/x"][()], f["/grid/y"][()]
                np.testing.assert_array_equal(x, np.linspace(0, 1, 21))
                np.testing.assert_array_equal(y, np.linspace(0, 1, 11))
                u, v, p = (f["/fields/" + k][()] for k in ("u", "v", "p"))
                for values in (u, v, p):
                    self.assertEqual(values.shape, (11, 21))  # [ny, nx]: y slower than x
                    self.assertEqual(values.dtype, np.float64)
                    self.assertTrue(np.isfinite(values).all())
                np.testing.assert_array_equal(u[-1], 1.0)  # the lid, corners included
                np.testing.assert_array_equal(u[:-1, [0, -1]], 0.0)
                np.testing.assert_array_equal(u[0], 0.0)
                np.testing.assert_array_equal(v[[0, -1], :], 0.0)
                np.testing.assert_array_equal(v[:, [0, -1]], 0.0)
                self.assertEqual(p[0, 0], 0.0)
                # Centre of the cavity against Ghia et al. (1982): u(0.5, 0.5) = -0.20581.
                self.assertAlmostEqual(u[5, 10], -0.20581, delta=5e-3)
                self.assertAlmostEqual(v[5, 10], 0.05454, delta=5e-3)
                self.assertEqual(f.attrs["Re"], 100.0)
                self.assertIn("cavity.py", f.attrs["command"])

    def test_failed_check_exits_non_zero_and_writes_nothing(self):
        shifted = [value + 0.05 for value in cavity.GHIA_U]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cavity.h5")
            with mock.patch.object(cavity, "GHIA_U", shifted):
                with contextlib.redirect_stdout(io.StringIO()) as printed:
                    with contextlib.redirect_stderr(io.StringIO()):
                        status = cavity.main(
                            ["--cells", "32", "--nx", "5", "--ny", "5", "--out", out]
                        )
            self.assertNotEqual(status, 0)
            self.assertIn("FAIL max |u - u_Ghia|", printed.getvalue())
            self.assertFalse(os.path.exists(out))

    def test_grid_sequencing_reaches_the_same_solution(self):
        coarse = cavity.solve(16, 100.0, verbose=False)
        cold = cavity.solve(32, 100.0, verbose=False)
        warm = cavity.solve(32, 100.0, coarse=coarse, verbose=False)
        np.testing.assert_allclose(warm["psi"], cold["psi"], atol=1e-12)
        np.testing.assert_allclose(warm["p"], cold["p"], atol=1e-10)


class AllenCahn(unittest.TestCase):
    def test_writes_grid_output_layout_after_passing_self_checks(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sub", "allen_cahn.h5")
            done = run(
                ALLEN_CAHN,
                *("--modes", "2048", "--dt", "2.5e-3", "--nx", "65", "--nt", "21", "--out", out),
            )
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertNotIn("FAIL", done.stdout)
            self.assertFalse(os.path.exists(out + ".partial"))
            with h5py.File(out, "r") as f:
                self.assertEqual(sorted(f["/grid"].keys()), ["t", "x"])
                self.assertEqual(list(f["/fields"].keys()), ["u"])
                x, t, u = f["/grid/x"][()], f["/grid/t"][()], f["/fields/u"][()]
                np.testing.assert_array_equal(x, np.linspace(-1, 1, 65))
                np.testing.assert_array_equal(t, np.linspace(0, 1, 21))
                self.assertEqual(u.shape, (21, 65))  # [nt, nx]: time slowest
                self.assertEqual(u.dtype, np.float64)
                np.testing.assert_array_equal(u[0], x**2 * np.cos(np.pi * x))
                np.testing.assert_array_equal(u[:, 0], u[:, -1])  # x = +-1, periodic
                self.assertLessEqual(np.abs(u).max(), 1.0)
                # By t = 1 the ends have settled at u = -1 and a plateau near +1 has formed.
                self.assertAlmostEqual(u[-1, 0], -1.0, delta=1e-4)
                self.assertGreater(u[-1].max(), 0.95)
                self.assertEqual(f.attrs["eps"], 1e-4)

    def test_unresolved_run_fails_its_mode_check_and_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "allen_cahn.h5")
            done = run(
                ALLEN_CAHN,
                *("--modes", "256", "--dt", "2.5e-3", "--nx", "65", "--nt", "21", "--out", out),
            )
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("FAIL modes 128 vs 256", done.stdout)
            self.assertFalse(os.path.exists(out))

    def test_initial_coefficients_are_those_of_the_initial_condition(self):
        modes = 1024
        x = -1.0 + 2.0 * np.arange(modes) / modes
        u0 = np.fft.irfft(allen_cahn.initial_coefficients(modes), n=modes)
        error = np.abs(u0 - x**2 * np.cos(np.pi * x))
        self.assertLess(error[np.abs(x) < 0.9].max(), 2e-6)  # away from the kink at +-1
        self.assertLess(error.max(), 2e-3)  # truncated series of a kinked function there

    def test_etdrk4_weights_match_their_closed_forms(self):
        dt = 0.1
        lin = np.array([-40.0, -3.0, 5.0])
        e, e2, q, f1, f2, f3 = allen_cahn.etdrk4_coefficients(lin, dt)
        z = dt * lin
        np.testing.assert_allclose(e, np.exp(z), rtol=1e-14)
        np.testing.assert_allclose(e2, np.exp(z / 2), rtol=1e-14)
        np.testing.assert_allclose(q, dt * (np.exp(z / 2) - 1) / z, rtol=1e-12)
        ez = np.exp(z)
        np.testing.assert_allclose(
            f1, dt * (-4 - z + ez * (4 - 3 * z + z**2)) / z**3, rtol=1e-10
        )
        np.testing.assert_allclose(f2, dt * (2 + z + ez * (z - 2)) / z**3, rtol=1e-10)
        np.testing.assert_allclose(
            f3, dt * (-4 - 3 * z - z**2 + ez * (4 - z)) / z**3, rtol=1e-10
        )
        # At L = 0 the weights are dt/2, dt/6, dt/6, dt/6 (the limits of the closed forms).
        _, _, q0, g1, g2, g3 = allen_cahn.etdrk4_coefficients(np.zeros(1), dt)
        np.testing.assert_allclose(
            [q0[0], g1[0], g2[0], g3[0]], [dt / 2] + [dt / 6] * 3, rtol=1e-13
        )


class VariableHeat(unittest.TestCase):
    def test_writes_table_and_reference_after_passing_self_checks(self):
        with tempfile.TemporaryDirectory() as tmp:
            table, out = os.path.join(tmp, "kappa.h5"), os.path.join(tmp, "ref.h5")
            done = run(
                VARIABLE_HEAT,
                "--table",
                table,
                "--table-points",
                "9",
                "--out",
                out,
                "--cells",
                "128",
                "--steps",
                "200",
                "--nx",
                "17",
                "--nt",
                "11",
            )
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            with h5py.File(table, "r") as f:
                x, y, values = f["grid/x"][:], f["grid/y"][:], f["values"][:]
            X, Y = np.meshgrid(x, y)
            np.testing.assert_allclose(
                values, 0.1 * (1 + 0.6 * np.sin(2 * np.pi * X) * np.sin(np.pi * Y) ** 2), rtol=1e-14
            )
            with h5py.File(out, "r") as f:
                u, t, x = f["fields/u"][:], f["grid/t"][:], f["grid/x"][:]
            self.assertEqual(u.shape, (11, 17, 17))
            X, Y = np.meshgrid(x, x)
            np.testing.assert_allclose(u[0], np.sin(np.pi * X) * np.sin(np.pi * Y), atol=1e-15)
            self.assertEqual(np.abs(u[:, 0, :]).max(), 0.0)
            self.assertEqual(np.abs(u[:, :, -1]).max(), 0.0)
            # the solution decays: kappa >= 0.04, so at least like exp(-2 pi^2 0.04 t)
            self.assertLess(np.abs(u[-1]).max(), np.exp(-2 * np.pi**2 * 0.04 * t[-1]))

    def test_failed_refinement_check_exits_non_zero_and_writes_no_reference(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "ref.h5")
            done = run(
                VARIABLE_HEAT,
                "--out",
                out,
                "--cells",
                "16",
                "--steps",
                "20",
                "--nx",
                "9",
                "--nt",
                "11",
            )
            self.assertNotEqual(done.returncode, 0)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
