#!/usr/bin/python3
"""Checks tools/plot_history.py and tools/plot_fields.py on the output of real (very short) runs.

Runs three cases into a temporary folder: poisson2d_xpinn on one rank (2-D, 4 subdomains, an
Adam and an L-BFGS stage), heat1d (1-D + time) and a small 3-D box written here. Then each
tool must write a PNG (magic bytes, > 10 kB) for each, NaN outside an irregular domain must
render blank, and bad input must give a one-line error naming the file, without a traceback.

Run: /usr/bin/python3 tests/tools/test_plot_tools.py --tessera build/tessera --source .
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OPTIONS = argparse.Namespace(tessera=None, source=None)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# Short schedules: two stages, so the history has a stage change to mark.
TWO_STAGES = '[{"optimizer": "adam", "iterations": 30, "lr": 0.001}, {"optimizer": "lbfgs", "iterations": 5}]'

BOX3D = {
    "name": "box3d",
    "seed": 1,
    "coordinates": ["x", "y", "z"],
    "fields": ["u"],
    "geometry": {"box": [[0, 1], [0, 1], [0, 2]]},
    "equations": [
        {"name": "poisson", "residual": "-lap(u) - 3*pi^2*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
    ],
    "conditions": [
        {
            "name": "walls",
            "type": "dirichlet",
            "on": "boundary",
            "field": "u",
            "value": "0",
            "points": 64,
        }
    ],
    "exact": {"u": "sin(pi*x)*sin(pi*y)*sin(pi*z)"},
    "decomposition": {"method": "xpinn", "split": {"z": 2}},
    "network": {"hidden": [16, 16], "activation": "tanh"},
    "training": {
        "collocation": {"points": 128},
        "stages": [{"optimizer": "adam", "iterations": 20, "lr": 1e-3}],
        "log_every": 10,
    },
    "output": {"directory": "results/box3d", "grid": {"x": 11, "y": 13, "z": 15}},
}


def tool(name):
    return os.path.join(OPTIONS.source, "tools", name)


def run_tool(name, *args):
    return subprocess.run(
        [sys.executable, tool(name), *args], capture_output=True, text=True, timeout=120
    )


class PlotTools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tessera_plot_tools_")
        os.environ.setdefault("TESSERA_THREADS", "1")  # one thread per process on shared cores
        os.environ["MPLCONFIGDIR"] = os.path.join(
            cls.tmp, "mpl"
        )  # the tools' matplotlib cache: not in $HOME
        box3d = os.path.join(cls.tmp, "box3d.json")
        with open(box3d, "w") as f:
            json.dump(BOX3D, f)
        cases = {
            "xpinn": (
                os.path.join(OPTIONS.source, "cases", "poisson2d_xpinn.json"),
                [
                    "training.stages=" + TWO_STAGES,
                    "training.log_every=5",
                    "output.grid.x=41",
                    "output.grid.y=41",
                ],
            ),
            "heat": (
                os.path.join(OPTIONS.source, "cases", "heat1d.json"),
                [
                    "training.stages=" + TWO_STAGES,
                    "training.log_every=5",
                    "output.grid.x=41",
                    "output.grid.t=21",
                ],
            ),
            "box3d": (box3d, []),
        }
        cls.out = {}
        for name, (case, overrides) in cases.items():
            out = os.path.join(cls.tmp, name)
            command = [OPTIONS.tessera, "run", case, "--set", f"output.directory={out}"]
            for o in overrides:
                command += ["--set", o]
            run = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cls.tmp)
            if run.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} failed:\n{run.stdout}\n{run.stderr}")
            cls.out[name] = out

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_png(self, path):
        self.assertTrue(os.path.isfile(path), f"{path} was not written")
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), PNG_MAGIC, f"{path} is not a PNG")
        self.assertGreater(os.path.getsize(path), 10_000, f"{path} is suspiciously small")

    def assert_ok(self, run):
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def png(self, name):
        return os.path.join(self.tmp, name + ".png")

    def test_history_png_for_each_run(self):
        for name, out in self.out.items():
            with self.subTest(name):
                self.assert_ok(run_tool("plot_history.py", out, "-o", self.png("history_" + name)))
                self.assert_png(self.png("history_" + name))

    def test_history_default_output_is_in_the_output_folder(self):
        self.assert_ok(run_tool("plot_history.py", self.out["heat"]))
        self.assert_png(os.path.join(self.out["heat"], "history.png"))

    def test_fields_png_for_2d_space_time_and_3d(self):
        runs = {
            "fields_xpinn": [self.out["xpinn"]],
            "fields_heat_last": [self.out["heat"]],
            "fields_heat_t05": [self.out["heat"], "--time", "0.5"],
            "fields_box3d_middle": [self.out["box3d"]],
            "fields_box3d_y02": [self.out["box3d"], "--slice-axis", "y", "--slice-value", "0.2"],
            "fields_xpinn_exact": [
                os.path.join(self.out["xpinn"], "poisson2d_xpinn.h5"),
                "--field",
                "u_exact",
            ],
        }
        for name, args in runs.items():
            with self.subTest(name):
                self.assert_ok(run_tool("plot_fields.py", *args, "-o", self.png(name)))
                self.assert_png(self.png(name))

    def test_nan_outside_an_irregular_domain_renders_blank(self):
        # Tessera's grid output puts NaN (and subdomain -1) outside an irregular domain; make a
        # disk out of the square's output and compare the white area with the full square's.
        disk = os.path.join(self.tmp, "disk")
        os.makedirs(disk, exist_ok=True)
        h5 = os.path.join(disk, "poisson2d_xpinn.h5")
        shutil.copy(os.path.join(self.out["xpinn"], "poisson2d_xpinn.h5"), h5)
        with h5py.File(h5, "r+") as f:
            x, y = np.meshgrid(f["grid/x"][()], f["grid/y"][()])
            outside = (x - 0.5) ** 2 + (y - 0.5) ** 2 > 0.4**2
            for name, dataset in f["fields"].items():
                values = dataset[()]
                values[outside] = -1 if name == "subdomain" else np.nan
                dataset[...] = values
        self.assert_ok(run_tool("plot_fields.py", disk, "-o", self.png("fields_disk")))
        self.assert_ok(
            run_tool("plot_fields.py", self.out["xpinn"], "-o", self.png("fields_square"))
        )
        self.assert_png(self.png("fields_disk"))

        import matplotlib.image

        def white_fraction(path):
            rgb = matplotlib.image.imread(path)[..., :3]
            return float(np.all(rgb == 1.0, axis=-1).mean())

        # Three panels lose about 1 - pi 0.4^2 = 50 % of their area each; the figure gains
        # well over 5 % white. A NaN drawn in any colour would not.
        gained = white_fraction(self.png("fields_disk")) - white_fraction(self.png("fields_square"))
        self.assertGreater(gained, 0.05)

    def test_bad_input_gives_one_line_error_naming_the_file(self):
        bad = os.path.join(self.tmp, "bad")
        os.makedirs(bad, exist_ok=True)
        empty = os.path.join(bad, "empty.jsonl")
        open(empty, "w").close()
        broken = os.path.join(bad, "broken.jsonl")
        with open(os.path.join(self.out["xpinn"], "history.jsonl")) as f:
            first = f.readline()
        with open(broken, "w") as f:
            f.write(first + '{"iteration": 10, "loss": \n' + first)
        not_h5 = os.path.join(bad, "not.h5")
        with open(not_h5, "w") as f:
            f.write("not HDF5\n")
        missing = os.path.join(bad, "nowhere")
        h5 = os.path.join(self.out["xpinn"], "poisson2d_xpinn.h5")
        cases = [
            (
                "plot_history.py",
                [missing],
                os.path.join(missing, "history.jsonl") + ": no such file",
            ),
            ("plot_history.py", [empty], empty + ": empty"),
            ("plot_history.py", [broken], broken + ":2: not valid JSON"),
            ("plot_fields.py", [missing], missing + ": no such file"),
            ("plot_fields.py", [not_h5], not_h5 + ": not a readable HDF5 file"),
            ("plot_fields.py", [h5, "--field", "nope"], h5 + ": no field 'nope'"),
            ("plot_fields.py", [h5, "--time", "0.5"], "--time: the case has no time coordinate"),
        ]
        for name, args, expected in cases:
            with self.subTest(tool=name, args=args):
                out_png = self.png("never")
                run = run_tool(name, *args, "-o", out_png)
                self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
                self.assertNotIn("Traceback", run.stderr)
                lines = run.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, run.stderr)
                self.assertTrue(lines[0].startswith(name[:-3] + ": "), lines[0])
                self.assertIn(expected, lines[0])
                self.assertFalse(os.path.exists(out_png))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tessera", help="the tessera executable (default: SOURCE/build/tessera)")
    parser.add_argument(
        "--source",
        default=os.path.normpath(os.path.join(HERE, "..", "..")),
        help="the repository root (default: two folders up from this file)",
    )
    OPTIONS, rest = parser.parse_known_args(namespace=OPTIONS)
    OPTIONS.source = os.path.abspath(OPTIONS.source)
    OPTIONS.tessera = os.path.abspath(
        OPTIONS.tessera or os.path.join(OPTIONS.source, "build", "tessera")
    )
    unittest.main(argv=[sys.argv[0], *rest])
