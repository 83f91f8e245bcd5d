#!/usr/bin/python3
"""Checks tools/tessera_results.py against output folders and files written here with known
contents, in the layouts of docs/output-format.md.

Nothing is trained: a 1-D space-time run folder (run.json, history.jsonl, a grid <name>.h5,
<name>_points.csv, a checkpoint), a 2-D mesh output file, evaluate's HDF5 and CSV point
files, and a small TorchScript module with the interface of `tessera export` are made in a
temporary folder. Every function must return the values put in, and bad input must raise
ResultsError with one line naming the file (the script: exit status 1, no traceback).

Run: /usr/bin/python3 tests/tools/test_tessera_results.py [--source .]
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
OPTIONS = argparse.Namespace(source=os.path.normpath(os.path.join(HERE, "..", "..")))
tr = None  # the module under test, imported from OPTIONS.source/tools in setUpModule

CASE = {
    "name": "heat",
    "coordinates": ["x"],
    "time": {"name": "t", "range": [0, 1]},
    "fields": ["u", "v"],
    "decomposition": {"method": "xpinn", "split": {"x": 2}},
    "output": {"directory": "results/heat", "grid": {"x": 5, "t": 3}, "points": "probes.csv"},
}
X = np.linspace(0.0, 1.0, 5)
T = np.array([0.0, 0.5, 1.0])
HISTORY = [
    {
        "iteration": 10,
        "stage": "adam",
        "loss": 4.0,
        "lr": 1e-3,
        "terms": {"heat": 3.0, "ends": 1.0},
        "rel_l2": {"u": 0.5},
    },
    {
        "iteration": 20,
        "stage": "adam",
        "loss": 2.0,
        "lr": 5e-4,
        "terms": {"heat": 1.5, "ends": 0.5},
        "rel_l2": {"u": 0.25},
        "parameters": {"nu": 0.1},
    },
    {
        "iteration": 25,
        "stage": "lbfgs",
        "loss": 1.0,
        "lr": 1.0,
        "terms": {"heat": 0.75, "ends": 0.25},
        "rel_l2": {"u": 0.125},
        "parameters": {"nu": 0.2},
    },
    {
        "iteration": 25,
        "stage": "lbfgs",
        "loss": 0.5,
        "lr": 0.0,
        "terms": {"heat": 0.4, "ends": 0.1},
        "rel_l2": {"u": 0.1},
        "parameters": {"nu": 0.2},
        "final": True,
    },
]


def exact_u(x, t):
    return x + 10.0 * t


def exact_v(x, t):
    return x * t


def write_grid_run(folder):
    """A completed run of CASE: u = x + 10 t and v = x t on the 5 x 3 grid, [n_t, n_x]."""
    os.makedirs(os.path.join(folder, "checkpoints", "00000020"))
    os.makedirs(os.path.join(folder, "checkpoints", "00000025"))
    os.makedirs(os.path.join(folder, "checkpoints", "00000030"))  # interrupted: no manifest
    for it in ("00000020", "00000025"):
        with open(os.path.join(folder, "checkpoints", it, "manifest.json"), "w") as f:
            json.dump({"iteration": int(it)}, f)
    record = {
        "run_id": "20261204T054505Z-node01-7796",
        "case_hash": "dd62bec712bbccad",
        "case": CASE,
        "case_file": "cases/heat.json",
        "status": "completed",
        "started": "2026-12-04T05:45:05Z",
        "finished": "2026-12-04T05:46:05Z",
        "iterations": 25,
        "wall_s": 60.0,
        "versions": {"tessera": "0.1.0", "ranks": 2},
        "ranks": [
            {"rank": 0, "host": "n", "device": "cpu"},
            {"rank": 1, "host": "n", "device": "cpu"},
        ],
        "final": HISTORY[-1],
    }
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump(record, f, indent=2)
    with open(os.path.join(folder, "history.jsonl"), "w") as f:
        for r in HISTORY:
            f.write(json.dumps(r) + "\n")
        f.write('{"iteration": 30, "loss": ')  # a running job's line, not yet complete
    tt, xx = np.meshgrid(T, X, indexing="ij")
    with h5py.File(os.path.join(folder, "heat.h5"), "w") as f:
        # Fixed-length strings, as Tessera writes them (h5py reads them back as bytes).
        f.attrs["case_name"] = np.bytes_("heat")
        f.attrs["coordinates"] = np.bytes_("x,t")
        f.attrs["time_coordinate"] = np.bytes_("t")
        f.attrs["decomposition"] = np.bytes_("xpinn")
        f.attrs["iterations"] = 25.0
        f.attrs["rel_l2_u"] = 0.1
        f["grid/x"] = X
        f["grid/t"] = T
        f["fields/u"] = exact_u(xx, tt)
        f["fields/v"] = exact_v(xx, tt)
        f["fields/subdomain"] = (xx > 0.5).astype(np.int32)
        f["parameters/nu"] = 0.2
    # output.points as CSV: the inputs, then the fields; a name with a comma is quoted.
    with open(os.path.join(folder, "heat_points.csv"), "w") as f:
        f.write('x,t,u,v,"max(u,v)"\n')
        for x, t in [(0.1, 0.2), (0.7, 0.9)]:
            u, v = exact_u(x, t), exact_v(x, t)
            f.write(f"{x!r},{t!r},{u!r},{v!r},{max(u, v)!r}\n")


def write_mesh_file(path):
    """Mesh output of a steady 2-D case: two triangles on the unit square, u = x + 2 y."""
    points = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    with h5py.File(path, "w") as f:
        f.attrs["case_name"] = np.bytes_("square")
        f.attrs["coordinates"] = np.bytes_("x,y")
        f["mesh/points"] = points
        f["mesh/cells"] = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int64)
        f["fields/u"] = points[:, 0] + 2 * points[:, 1]
        f["fields/subdomain"] = np.zeros(4, dtype=np.int32)
    return points


def write_model(path):
    """A TorchScript module with the interface of `tessera export`: float64 [n, inputs] in,
    [n, fields] out, attributes inputs and fields; here u = x + 10 t and v = x t."""
    import torch
    from typing import List

    class Exported(torch.nn.Module):
        inputs: List[str]
        fields: List[str]

        def __init__(self):
            super().__init__()
            self.inputs = ["x", "t"]
            self.fields = ["u", "v"]
            self.scale = torch.nn.Parameter(torch.tensor(10.0, dtype=torch.float64))

        def forward(self, points: torch.Tensor) -> torch.Tensor:
            x, t = points[:, 0], points[:, 1]
            return torch.stack([x + self.scale * t, x * t], dim=1)

    torch.jit.script(Exported()).save(path)

    class Plain(torch.nn.Module):
        def forward(self, points: torch.Tensor) -> torch.Tensor:
            return points

    plain = os.path.join(os.path.dirname(path), "plain.pt")
    torch.jit.script(Plain()).save(plain)
    return plain


def setUpModule():
    global tr
    sys.path.insert(0, os.path.join(OPTIONS.source, "tools"))
    import tessera_results

    tr = tessera_results


class TesseraResults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tessera_results_")
        cls.run_dir = os.path.join(cls.tmp, "heat")
        write_grid_run(cls.run_dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def assert_one_line(self, call, *expected):
        with self.assertRaises(tr.ResultsError) as raised:
            call()
        message = str(raised.exception)
        self.assertNotIn("\n", message)
        for text in expected:
            self.assertIn(text, message)

    def test_importing_needs_neither_h5py_nor_torch(self):
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import tessera_results; "
            "print('torch' in sys.modules, 'h5py' in sys.modules)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, os.path.join(OPTIONS.source, "tools")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(out.stdout.strip(), "False False", out.stderr)

    def test_record_case_status_final(self):
        run = tr.Run(self.run_dir)
        self.assertEqual(run.record["run_id"], "20261204T054505Z-node01-7796")
        self.assertEqual(run.case, CASE)
        self.assertEqual(run.name, "heat")
        self.assertEqual(run.status, "completed")
        self.assertEqual(run.final["loss"], 0.5)
        self.assertEqual(run.inputs, ["x", "t"])
        self.assertEqual(run.field_names, ["u", "v"])
        self.assertEqual(tr.Run(os.path.join(self.run_dir, "run.json")).name, "heat")
        self.assertEqual([os.path.basename(c) for c in run.checkpoints()], ["00000020", "00000025"])

    def test_history_records_and_columns(self):
        run = tr.Run(self.run_dir)
        records = run.history()
        self.assertEqual([r["iteration"] for r in records], [10, 20, 25])  # no final, no stub
        self.assertEqual(len(run.history(final=True)), 4)
        it, loss = run.history("loss")
        np.testing.assert_array_equal(it, [10, 20, 25])
        self.assertEqual(it.dtype, np.int64)
        np.testing.assert_array_equal(loss, [4.0, 2.0, 1.0])
        np.testing.assert_array_equal(run.history("terms.heat")[1], [3.0, 1.5, 0.75])
        it, err = run.history("rel_l2.u", final=True)
        np.testing.assert_array_equal(it, [10, 20, 25, 25])
        np.testing.assert_array_equal(err, [0.5, 0.25, 0.125, 0.1])
        nu = run.history("parameters.nu")[1]  # absent from the first record: NaN there
        self.assertTrue(np.isnan(nu[0]))
        np.testing.assert_array_equal(nu[1:], [0.1, 0.2])
        self.assertIn("terms.ends", run.history_keys())
        self.assertNotIn("final", run.history_keys())
        self.assert_one_line(
            lambda: run.history("terms.nope"), "history.jsonl", "'terms.nope'", "terms.heat"
        )

    def test_grid_fields(self):
        run = tr.Run(self.run_dir)
        data = run.fields()
        self.assertFalse(data.mesh)
        self.assertEqual(data.coordinates, ["x", "t"])
        self.assertEqual(data.time, "t")
        np.testing.assert_array_equal(data.axes["x"], X)
        np.testing.assert_array_equal(data.axes["t"], T)
        self.assertEqual(data.shape, (3, 5))
        self.assertEqual(sorted(data.fields), ["subdomain", "u", "v"])
        u = data["u"]
        self.assertEqual(u.shape, (3, 5))
        self.assertEqual(u[2, 1], exact_u(X[1], T[2]))  # u[k, i] = u(x[i], t[k])
        self.assertEqual(data.fields["subdomain"].dtype, np.int32)
        self.assertEqual(data.attrs["case_name"], "heat")  # bytes decoded
        self.assertEqual(data.attrs["rel_l2_u"], 0.1)
        self.assertEqual(data.parameters, {"nu": 0.2})
        # points() row r is the point of u.reshape(-1)[r]
        points = data.points()
        self.assertEqual(points.shape, (15, 2))
        np.testing.assert_array_equal(exact_u(points[:, 0], points[:, 1]), u.reshape(-1))
        np.testing.assert_array_equal(run.field("v"), data["v"])
        self.assert_one_line(lambda: run.field("w"), "heat.h5", "/fields/w", "subdomain, u, v")
        self.assert_one_line(lambda: data["w"], "heat.h5", "/fields/w")

    def test_grid_file_without_attributes_as_evaluate_writes_it(self):
        # evaluate --grid writes /grid and /fields only: the axis order comes from the caller
        # or, where the lengths differ, from the shape.
        path = self.path("fine.h5")
        tt, xx = np.meshgrid(T, X, indexing="ij")
        with h5py.File(path, "w") as f:
            f["grid/t"] = T
            f["grid/x"] = X
            f["fields/u"] = exact_u(xx, tt)
            f["fields/u_x"] = np.ones_like(xx)
        for data in (tr.read_grid(path, coordinates=["x", "t"]), tr.read_grid(path)):
            self.assertEqual(data.coordinates, ["x", "t"])
            self.assertEqual(data.time, "t")
            np.testing.assert_array_equal(data["u"], exact_u(xx, tt))
        self.assertEqual(sorted(tr.read_grid(path, names=["u_x"]).fields), ["u_x"])
        self.assert_one_line(
            lambda: tr.read_grid(path, coordinates=["x", "y"]), "fine.h5", "/grid/y is missing"
        )

    def test_mesh_fields(self):
        path = self.path("square.h5")
        points = write_mesh_file(path)
        data = tr.read_grid(path)
        self.assertTrue(data.mesh)
        self.assertEqual(data.coordinates, ["x", "y"])
        self.assertIsNone(data.time)
        np.testing.assert_array_equal(data.mesh_points, points)
        np.testing.assert_array_equal(data.cells, [[0, 1, 2], [0, 2, 3]])
        np.testing.assert_array_equal(data["u"], [0.0, 1.0, 3.0, 2.0])
        np.testing.assert_array_equal(data.points(), points)

    def test_points_output_and_evaluate_files(self):
        run = tr.Run(self.run_dir)
        points, values = run.points()
        np.testing.assert_array_equal(points, [[0.1, 0.2], [0.7, 0.9]])
        np.testing.assert_array_equal(values["u"], exact_u(points[:, 0], points[:, 1]))
        self.assertEqual(list(values), ["u", "v", "max(u,v)"])
        # The run.json beside it names the inputs; elsewhere the caller does.
        csv_path = os.path.join(self.run_dir, "heat_points.csv")
        self.assertEqual(tr.read_values(csv_path).inputs, ["x", "t"])
        moved = self.path("probes_values.csv")
        shutil.copy(csv_path, moved)
        self.assert_one_line(lambda: tr.read_values(moved), "probes_values.csv", "inputs=")
        np.testing.assert_array_equal(tr.read_values(moved, inputs=2).points, points)
        np.testing.assert_array_equal(tr.read_values(moved, inputs=["x", "t"]).points, points)

        h5 = self.path("probes_values.h5")
        with h5py.File(h5, "w") as f:
            f["points"] = points
            f["values/u"] = values["u"]
            f["values/u_x"] = np.ones(2)
        got = tr.read_values(h5)
        np.testing.assert_array_equal(got.points, points)
        self.assertEqual(sorted(got.values), ["u", "u_x"])
        self.assertIsNone(got.inputs)
        np.testing.assert_array_equal(got.values["u"], values["u"])
        self.assertEqual(tr.read_points(h5, inputs=["x", "t"]).inputs, ["x", "t"])

    def test_read_points_csv_as_tessera_reads_it(self):
        path = self.path("probes.csv")
        with open(path, "w") as f:
            f.write("# probes\nt,label,x\n0.5,1,0.25\n\n1.0,2,nan\n")
        points, values = tr.read_points(path, inputs=["x", "t"])  # by name, any order
        np.testing.assert_array_equal(points[0], [0.25, 0.5])
        self.assertTrue(np.isnan(points[1, 0]))
        np.testing.assert_array_equal(values["label"], [1.0, 2.0])
        every = tr.read_points(path)  # no inputs: every column is one
        self.assertEqual(every.inputs, ["t", "label", "x"])
        self.assertEqual(every.points.shape, (2, 3))
        bare = self.path("bare.csv")
        with open(bare, "w") as f:
            f.write("0.1,0.2\n0.3,0.4\n")
        points, values = tr.read_points(bare, inputs=["x", "t"])
        np.testing.assert_array_equal(points, [[0.1, 0.2], [0.3, 0.4]])
        self.assertEqual(values, {})
        self.assert_one_line(lambda: tr.read_points(path, inputs=["x", "y"]), "no column 'y'")
        self.assert_one_line(lambda: tr.read_points(self.path("p.txt")), "p.txt", "extension")
        self.assert_one_line(lambda: tr.read_points(self.path("none.h5")), "none.h5", "no such")
        ragged = self.path("ragged.csv")
        with open(ragged, "w") as f:
            f.write("x,t\n0.1,0.2\n0.3\n")
        self.assert_one_line(lambda: tr.read_points(ragged), "ragged.csv:3", "1 columns")

    def test_load_model_and_evaluate(self):
        model_path = self.path("model.pt")
        plain = write_model(model_path)
        model = tr.load_model(model_path)
        self.assertEqual(list(model.inputs), ["x", "t"])
        self.assertEqual(list(model.fields), ["u", "v"])
        data = tr.Run(self.run_dir).fields()
        got = tr.evaluate(model, data.points(), batch=4)  # several batches
        self.assertEqual(sorted(got), ["u", "v"])
        np.testing.assert_allclose(got["u"], data["u"].reshape(-1), rtol=0, atol=1e-14)
        np.testing.assert_allclose(got["v"], data["v"].reshape(-1), rtol=0, atol=1e-14)
        # A dict of arrays: the values come back in the arrays' shape.
        tt, xx = np.meshgrid(T, X, indexing="ij")
        got = tr.evaluate(model, {"t": tt, "x": xx})
        np.testing.assert_allclose(got["u"], data["u"], rtol=0, atol=1e-14)
        self.assert_one_line(lambda: tr.evaluate(model, np.zeros((3, 3))), "(3, 3)", "[n, 2] (x,t)")
        self.assert_one_line(lambda: tr.evaluate(model, {"x": xx}), "'t'")
        self.assert_one_line(lambda: tr.load_model(plain), "plain.pt", "'inputs'")
        self.assert_one_line(lambda: tr.load_model(self.path("nope.pt")), "nope.pt", "no such")
        junk = self.path("junk.pt")
        with open(junk, "w") as f:
            f.write("not a model\n")
        self.assert_one_line(lambda: tr.load_model(junk), "junk.pt", "not a TorchScript model")

    def test_errors_for_folders_that_are_no_run(self):
        empty = self.path("empty")
        os.makedirs(empty, exist_ok=True)
        self.assert_one_line(lambda: tr.Run(empty), os.path.join(empty, "run.json"), "no such")
        self.assert_one_line(lambda: tr.Run(self.path("missing")), "missing", "no such folder")
        broken = self.path("broken")
        os.makedirs(broken, exist_ok=True)
        with open(os.path.join(broken, "run.json"), "w") as f:
            f.write('{"case": ')
        self.assert_one_line(lambda: tr.Run(broken), "run.json", "not valid JSON")
        # A run that has started: run.json only.
        started = self.path("started")
        os.makedirs(started, exist_ok=True)
        with open(os.path.join(started, "run.json"), "w") as f:
            json.dump({"case": CASE, "status": "running"}, f)
        run = tr.Run(started)
        self.assertEqual(run.final, {})
        self.assert_one_line(run.fields, "heat.h5", "no such file", "running")
        self.assert_one_line(run.history, "history.jsonl", "no such file")
        self.assert_one_line(run.points, "heat_points.h5", "output.points")
        with open(os.path.join(started, "history.jsonl"), "w") as f:
            f.write('{"iteration": 1, "loss": 1}\n{"iteration": 2\n{"iteration": 3}\n')
        self.assert_one_line(tr.Run(started).history, "history.jsonl:2", "not valid JSON")
        not_h5 = os.path.join(started, "heat.h5")
        with open(not_h5, "w") as f:
            f.write("not HDF5\n")
        self.assert_one_line(run.fields, "heat.h5", "not a readable HDF5 file")

    def test_script_prints_a_summary(self):
        script = os.path.join(OPTIONS.source, "tools", "tessera_results.py")
        out = subprocess.run(
            [sys.executable, script, self.run_dir], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        for text in ("case 'heat'", "completed", "loss 0.5", "shape (3, 5)", "00000025"):
            self.assertIn(text, out.stdout)
        self.assertLess(len(out.stdout.splitlines()), 25)
        out = subprocess.run(
            [sys.executable, script, self.tmp], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(out.returncode, 1)
        self.assertNotIn("Traceback", out.stderr)
        self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
        self.assertIn(os.path.join(self.tmp, "run.json"), out.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--source",
        default=OPTIONS.source,
        help="the repository root (default: two folders up from this file)",
    )
    OPTIONS, rest = parser.parse_known_args(namespace=OPTIONS)
    OPTIONS.source = os.path.abspath(OPTIONS.source)
    unittest.main(argv=[sys.argv[0], *rest])
