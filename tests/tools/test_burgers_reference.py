#!/usr/bin/python3
"""Checks tools/burgers_reference.py: file layout (Tessera grid output), values, self-checks.

Run: /usr/bin/python3 tests/tools/test_burgers_reference.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

TOOL = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "burgers_reference.py"
)
sys.path.insert(0, os.path.dirname(TOOL))
import burgers_reference  # noqa: E402


class BurgersReference(unittest.TestCase):
    def test_writes_grid_output_layout_after_passing_self_checks(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sub", "ref.h5")
            run = subprocess.run(
                [sys.executable, TOOL, "--nx", "33", "--nt", "5", "--nodes", "200", "--out", out],
                capture_output=True,
                text=True,
            )
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertNotIn("FAIL", run.stdout)
            self.assertFalse(os.path.exists(out + ".partial"))
            with h5py.File(out, "r") as f:
                x, t, u = f["/grid/x"][()], f["/grid/t"][()], f["/fields/u"][()]
                self.assertEqual(u.shape, (5, 33))  # [nt, nx]: time slowest
                self.assertEqual(u.dtype, np.float64)
                np.testing.assert_array_equal(x, np.linspace(-1, 1, 33))
                np.testing.assert_array_equal(t, np.linspace(0, 1, 5))
                self.assertAlmostEqual(f.attrs["nu"], 0.01 / np.pi, places=15)
                np.testing.assert_allclose(u[0], -np.sin(np.pi * x), atol=1e-15)
                self.assertLess(np.abs(u[:, 16]).max(), 1e-12)  # x = 0
                # The shock: at t = 1 the profile jumps from about +0.9 to -0.9 across x = 0.
                self.assertGreater(u[-1, 15], 0.5)
                self.assertLess(u[-1, 17], -0.5)

    def test_maximum_slope_matches_basdevant(self):
        slope, when = burgers_reference.max_slope(0.01 / np.pi, 200)
        self.assertAlmostEqual(slope, 152.00516, delta=1e-4)
        self.assertAlmostEqual(when * np.pi, 1.6037, delta=1e-3)

    def test_node_count_is_converged(self):
        x = np.linspace(-1, 1, 65)
        t = np.array([0.1, 0.5, 1.0])
        coarse = burgers_reference.solve(x, t, 0.01 / np.pi, 200)
        fine = burgers_reference.solve(x, t, 0.01 / np.pi, 400)
        self.assertLess(np.abs(coarse - fine).max(), 1e-8)


if __name__ == "__main__":
    unittest.main()
