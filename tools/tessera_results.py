#!/usr/bin/python3
"""Reads a Tessera run's output folder from Python (the files of docs/output-format.md).

One reader for everything `tessera run`, `tessera evaluate` and `tessera export` write, so
that notebooks and scripts need not know the HDF5 layout, the array order or the history's
nesting:

    import sys; sys.path.insert(0, "tools")
    from tessera_results import Run, read_values, load_model, evaluate

    run = Run("results/poisson2d")
    it, loss = run.history("loss")                 # numpy arrays, one entry per logged record
    sol = run.fields()                             # axes, fields, attributes of <name>.h5
    probes = read_values("probes_values.csv", inputs=run.inputs)
    model = load_model("model.pt")                 # needs torch; nothing else here does
    values = evaluate(model, probes.points)

Only numpy is needed to import it; h5py is imported when an HDF5 file is read, torch when an
exported model is loaded. Every problem with the files is raised as ResultsError with a
one-line message that names the file and what is missing.

As a script it prints a one-screen summary of a run folder:
    tools/tessera_results.py results/poisson2d
"""
import csv
import glob
import json
import math
import os
import sys

import numpy as np

PROG = "tessera_results"

__all__ = [
    "ResultsError",
    "Run",
    "FieldData",
    "PointValues",
    "read_grid",
    "read_points",
    "read_values",
    "load_model",
    "evaluate",
]


class ResultsError(Exception):
    """A problem with a Tessera file: one line naming the file and what is wrong or missing."""


# ---------------------------------------------------------------------------------------------
# Small helpers


def _h5py():
    """h5py, imported on first use so that reading JSON and CSV files does not need it."""
    try:
        import h5py
    except ImportError:  # pragma: no cover - Debian's python3-h5py is a documented requirement
        raise ResultsError("reading HDF5 files needs h5py (apt install python3-h5py)") from None
    return h5py


def _open_h5(path):
    """An open h5py.File, or a one-line error for a missing or unreadable file."""
    if not os.path.isfile(path):
        raise ResultsError(f"{path}: no such file")
    try:
        return _h5py().File(path, "r")
    except OSError as e:
        raise ResultsError(f"{path}: not a readable HDF5 file ({e})") from None


def _plain(value):
    """An HDF5 attribute as plain Python: Tessera writes fixed-length strings, which h5py gives
    as bytes, and scalars, which it gives as numpy scalars."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _read_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file ({what})") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    except OSError as e:
        raise ResultsError(f"{path}: cannot read ({e.strerror})") from None


def _dig(record, key):
    """record["a"]["b"] for the dotted key "a.b"; a name that itself holds a dot is found too.
    Returns None when the record lacks the key."""
    if key in record:
        return record[key]
    head, dot, rest = key.partition(".")
    while dot:
        if head in record and isinstance(record[head], dict):
            found = _dig(record[head], rest)
            if found is not None:
                return found
        more, dot, rest = rest.partition(".")
        head = head + "." + more
    return None


def _dotted_keys(record, prefix=""):
    """Every dotted key of a record whose value is a number ("loss", "terms.poisson", ...)."""
    keys = []
    for name, value in record.items():
        if isinstance(value, dict):
            keys += _dotted_keys(value, prefix + name + ".")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            keys.append(prefix + name)
    return keys


# ---------------------------------------------------------------------------------------------
# Grid and mesh output: <name>.h5, evaluate --grid files, references


class FieldData:
    """The contents of a solution file (<name>.h5), an `evaluate --grid` file or a reference.

    Attributes:
        path: the file read.
        mesh: False for grid output, True for mesh output.
        coordinates: input names in axis order, the first varying fastest and time last
            (e.g. ["x", "t"]); a field's array axes are these in reverse: u[k, i] = u(x[i], t[k]).
        time: the time coordinate's name, or None for a steady problem.
        axes: {name: 1-D array} for every axis under /grid (mesh output: only the time axis).
        fields: {name: ndarray} shaped like the file ([n_t?, n_z?, n_y?, n_x], or
            [n_t?, n_points] on a mesh): NaN outside an irregular domain, subdomain -1 there.
        mesh_points, cells: mesh output only: node coordinates [n_points, dims] and the
            0-based node indices of each triangle or tetrahedron; None for grids.
        parameters: {name: float}, the trained parameters of an inverse problem (else empty).
        attrs: the root attributes as plain Python values (case_name, rel_l2_<field>, ...).
    """

    def __init__(
        self, path, coordinates, time, axes, fields, attrs, parameters, mesh_points=None, cells=None
    ):
        self.path = path
        self.coordinates = coordinates
        self.time = time
        self.axes = axes
        self.fields = fields
        self.attrs = attrs
        self.parameters = parameters
        self.mesh_points = mesh_points
        self.cells = cells
        self.mesh = mesh_points is not None

    def __getitem__(self, name):
        try:
            return self.fields[name]
        except KeyError:
            raise ResultsError(
                f"{self.path}: no /fields/{name} (fields: {', '.join(sorted(self.fields))})"
            ) from None

    def __repr__(self):
        shape = self.shape
        kind = f"mesh of {len(self.mesh_points)} nodes" if self.mesh else "grid"
        return (
            f"FieldData({self.path!r}: {kind}, coordinates {','.join(self.coordinates)}, "
            f"shape {shape}, fields {', '.join(sorted(self.fields))})"
        )

    @property
    def shape(self):
        """The shape every field has: time slowest, the first coordinate fastest."""
        if self.mesh:
            lead = (len(self.axes[self.time]),) if self.time else ()
            return lead + (len(self.mesh_points),)
        return tuple(len(self.axes[c]) for c in reversed(self.coordinates))

    def points(self):
        """All output points as [N, inputs] (columns in `coordinates` order, time last), row r
        being the point of field.reshape(-1)[r]: the points to evaluate an exported model at
        to compare it with the file."""
        if self.mesh:
            space = np.asarray(self.mesh_points, dtype=np.float64)
            if not self.time:
                return space.copy()
            times = np.asarray(self.axes[self.time], dtype=np.float64)
            rows = np.repeat(times, len(space))[:, None]
            return np.hstack([np.tile(space, (len(times), 1)), rows])
        reverse = list(reversed(self.coordinates))
        grids = np.meshgrid(*[self.axes[c] for c in reverse], indexing="ij")
        return np.stack([grids[reverse.index(c)].reshape(-1) for c in self.coordinates], axis=1)


def _guess_order(names, time):
    """Axis order when a file does not record it: x, y, z, other names, time last."""
    return sorted(names, key=lambda c: (c == time, "xyz".find(c) % 4, c))


def read_grid(path, coordinates=None, time=None, names=None):
    """Reads grid or mesh output (a run's <name>.h5), an `evaluate --grid` file or a reference
    file into a FieldData.

    The axis order comes from the file's `coordinates` attribute; `evaluate --grid` files have
    none, so give `coordinates` (Run.inputs) for them, else the order is inferred from the
    arrays' shape where the axis lengths differ and taken as x, y, z, ..., time otherwise.
    `time` names the time coordinate ("" for a steady problem); by default the file's
    `time_coordinate` attribute, else "t" when there is such an axis. `names` restricts
    which /fields datasets are read (default all).
    """
    with _open_h5(path) as f:
        attrs = {k: _plain(v) for k, v in f.attrs.items()}
        is_mesh = "mesh" in f
        if is_mesh and not ("points" in f["mesh"] and "cells" in f["mesh"]):
            raise ResultsError(f"{path}: /mesh lacks points or cells (not Tessera mesh output)")
        if "fields" not in f or (not is_mesh and "grid" not in f):
            raise ResultsError(
                f"{path}: no /grid and /fields groups (not Tessera grid or mesh output)"
            )
        axes = {k: f["grid"][k][()] for k in f["grid"]} if "grid" in f else {}
        available = sorted(f["fields"])
        wanted = available if names is None else list(names)
        for name in wanted:
            if name not in f["fields"]:
                raise ResultsError(f"{path}: no /fields/{name} (fields: {', '.join(available)})")
        fields = {k: f["fields"][k][()] for k in wanted}
        parameters = (
            {k: _plain(f["parameters"][k][()]) for k in f["parameters"]}
            if "parameters" in f
            else {}
        )
        mesh_points = f["mesh/points"][()] if is_mesh else None
        cells = f["mesh/cells"][()] if is_mesh else None

    if time is None:  # unknown: the file's label, else the usual name for time
        time = attrs.get("time_coordinate") or ("t" if "t" in axes else None)
    if "coordinates" in attrs:
        order = [c for c in str(attrs["coordinates"]).split(",") if c]
    elif coordinates is not None:
        order = list(coordinates)
    elif is_mesh:
        spatial = ["x", "y", "z"][: mesh_points.shape[1]]
        order = spatial + list(axes)
    else:
        order = _guess_order(list(axes), time)
        shape = next((v.shape for v in fields.values()), None)
        lengths = [len(axes[c]) for c in order]
        if shape is not None and tuple(reversed(lengths)) != shape:
            if len(set(lengths)) == len(lengths) and sorted(lengths) == sorted(shape):
                by_length = {len(axes[c]): c for c in order}
                order = [by_length[n] for n in reversed(shape)]
    if not time or time not in order:
        time = None

    if is_mesh:
        missing = [time] if time and time not in axes else []
    else:
        missing = [c for c in order if c not in axes]
    if missing:
        raise ResultsError(
            f"{path}: /grid/{missing[0]} is missing (coordinates: {','.join(order)})"
        )
    data = FieldData(path, order, time, axes, fields, attrs, parameters, mesh_points, cells)
    expected = data.shape
    for name, values in fields.items():
        if values.shape != expected:
            raise ResultsError(
                f"{path}: /fields/{name} has shape {values.shape}, the "
                f"{'mesh' if is_mesh else 'grid'} {expected}"
            )
    return data


# ---------------------------------------------------------------------------------------------
# Values at points: evaluate --points files, output.points files, observations


class PointValues(tuple):
    """(points, values): points [n, inputs] as float64 and {name: values [n]}.

    Unpacks as a pair; `.inputs` holds the input names (spatial coordinates, then time) where
    the file or the caller named them, else None (HDF5 point files do not name their columns).
    """

    def __new__(cls, points, values, inputs=None, path=None):
        self = super().__new__(cls, (points, values))
        self.inputs = inputs
        self.path = path
        return self

    @property
    def points(self):
        return self[0]

    @property
    def values(self):
        return self[1]

    def __repr__(self):
        return (
            f"PointValues({self.path!r}: {self.points.shape[0]} points of "
            f"{','.join(self.inputs) if self.inputs else self.points.shape[1]} inputs, "
            f"values {', '.join(self.values)})"
        )


def _read_h5_points(path):
    with _open_h5(path) as f:
        if "points" not in f:
            raise ResultsError(f"{path}: no /points dataset (not a Tessera points file)")
        points = np.asarray(f["points"][()], dtype=np.float64)
        if points.ndim != 2:
            raise ResultsError(f"{path}: /points has shape {points.shape}, expected [n, inputs]")
        values = {}
        if "values" in f:
            for name in f["values"]:
                column = f["values"][name][()]
                if column.shape != (len(points),):
                    raise ResultsError(
                        f"{path}: /values/{name} has shape {column.shape}, "
                        f"/points has {len(points)} rows"
                    )
                values[name] = column
    return points, values


def _read_csv(path):
    """(header or None, rows as float arrays): the CSV as Tessera reads and writes it."""
    if not os.path.isfile(path):
        raise ResultsError(f"{path}: no such file")
    header, rows = None, []
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            cells = [c.strip() for c in next(csv.reader([line]))]
            try:
                rows.append([float(c) for c in cells])
            except ValueError:
                if header is None and not rows:
                    header = cells
                    continue
                raise ResultsError(f"{path}:{number}: not a number in {line.strip()}") from None
            if len(rows[-1]) != len(rows[0]) or (header and len(rows[-1]) != len(header)):
                raise ResultsError(
                    f"{path}:{number}: {len(rows[-1])} columns, "
                    f"expected {len(header) if header else len(rows[0])}"
                )
    width = len(header) if header else (len(rows[0]) if rows else 0)
    return header, np.array(rows, dtype=np.float64).reshape(len(rows), width)


def _inputs_beside(path):
    """The inputs of the run whose output folder holds `path` (output.points files), or None."""
    record = os.path.join(os.path.dirname(os.path.abspath(path)), "run.json")
    if not os.path.isfile(record):
        return None
    try:
        return _case_inputs(_read_json(record, "run record")["case"])
    except (ResultsError, KeyError, TypeError):
        return None


def _split_columns(path, header, table, inputs):
    """Points and values of a CSV table, the inputs chosen by name (any order) or by count."""
    if isinstance(inputs, int):
        if not 0 < inputs <= table.shape[1]:
            raise ResultsError(
                f"{path}: {inputs} inputs asked for, the file has {table.shape[1]} columns"
            )
        names = header[:inputs] if header else None
        columns = list(range(inputs))
    else:
        names = list(inputs)
        if header is None:
            if len(names) > table.shape[1]:
                raise ResultsError(
                    f"{path}: {table.shape[1]} columns and no header, "
                    f"fewer than the inputs {','.join(names)}"
                )
            columns = list(range(len(names)))
        else:
            missing = [n for n in names if n not in header]
            if missing:
                raise ResultsError(f"{path}: no column '{missing[0]}' (header: {','.join(header)})")
            columns = [header.index(n) for n in names]
    rest = [k for k in range(table.shape[1]) if k not in columns]
    values = {(header[k] if header else f"column{k}"): table[:, k].copy() for k in rest}
    return PointValues(table[:, columns].copy(), values, names, path)


def read_points(path, inputs=None):
    """Reads a points file (the input of `evaluate --points` and of `output.points`, or an
    observation file): HDF5 /points [n, inputs] (+ /values/<name> when present), or CSV with
    one column per input and an optional header.

    `inputs` (names, or their count) picks the columns of a CSV file by header name, in that
    order, as Tessera does; the other columns become values. Without it every CSV column is
    an input. Returns PointValues (unpacks as points, values).
    """
    if _is_csv(path):
        header, table = _read_csv(path)
        if inputs is None:
            return PointValues(table, {}, header, path)
        return _split_columns(path, header, table, inputs)
    points, values = _read_h5_points(path)
    names = list(inputs) if inputs is not None and not isinstance(inputs, int) else None
    if names is not None and len(names) != points.shape[1]:
        raise ResultsError(
            f"{path}: /points has {points.shape[1]} columns, the inputs are {','.join(names)}"
        )
    return PointValues(points, values, names, path)


def read_values(path, inputs=None):
    """Reads what `tessera evaluate --points` or a run's `output.points` wrote: HDF5 /points
    and /values/<name>, or CSV with a header naming the inputs, then the values.

    A CSV file does not say where its inputs end: give `inputs` (Run.inputs, or a count);
    without it the run.json beside the file (a run's <name>_points.csv) supplies them.
    Returns PointValues (unpacks as points, values).
    """
    if not _is_csv(path):
        return read_points(path, inputs)
    header, table = _read_csv(path)
    if header is None:
        raise ResultsError(f"{path}: no header row (Tessera writes the inputs, then the names)")
    if inputs is None:
        inputs = _inputs_beside(path)
        if inputs is None:
            raise ResultsError(
                f"{path}: which columns are inputs is unknown; "
                f"give inputs= (the run's Run(...).inputs, or their count)"
            )
    return _split_columns(path, header, table, inputs)


def _is_csv(path):
    extension = os.path.splitext(path)[1].lower()
    if extension == ".csv":
        return True
    if extension in (".h5", ".hdf5", ".hdf"):
        return False
    raise ResultsError(f"{path}: unknown extension; Tessera writes .h5 (HDF5) or .csv")


# ---------------------------------------------------------------------------------------------
# Exported models: tessera export RUN_DIR --out model.pt


def load_model(path):
    """Loads a model written by `tessera export RUN_DIR --out model.pt` onto the CPU.

    A TorchScript module: forward takes float64 points [n, inputs] and returns [n, fields];
    its attributes `inputs` and `fields` name the columns. Needs torch (only this function
    and evaluate() do).
    """
    try:
        import torch
    except ImportError:
        raise ResultsError("loading a model needs torch (apt install python3-torch)") from None
    if not os.path.isfile(path):
        raise ResultsError(
            f"{path}: no such file (write one with: tessera export RUN_DIR --out {path})"
        )
    try:
        model = torch.jit.load(path, map_location="cpu")
    except (RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ResultsError(f"{path}: not a TorchScript model ({first})") from None
    for attribute in ("inputs", "fields"):
        if not hasattr(model, attribute):
            raise ResultsError(
                f"{path}: the model has no '{attribute}' attribute (not written by tessera export)"
            )
    model.eval()
    return model


def evaluate(model, points, batch=65536):
    """The model's fields at points, as {field: float64 array [n]}.

    `points` is an array [n, inputs] (columns in model.inputs order: spatial coordinates,
    then time), or a dict {input: array} of equal-shaped arrays (then each value has that
    shape). Evaluated without gradients, `batch` points at a time to bound the memory.
    """
    import torch

    inputs, fields = list(model.inputs), list(model.fields)
    shape = None
    if isinstance(points, dict):
        missing = [n for n in inputs if n not in points]
        if missing:
            raise ResultsError(
                f"evaluate: no values for input '{missing[0]}' (the model takes {','.join(inputs)})"
            )
        arrays = np.broadcast_arrays(*[np.asarray(points[n], dtype=np.float64) for n in inputs])
        shape = arrays[0].shape
        points = np.stack([a.reshape(-1) for a in arrays], axis=1)
    points = np.ascontiguousarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != len(inputs):
        raise ResultsError(
            f"evaluate: points have shape {points.shape}, the model takes "
            f"[n, {len(inputs)}] ({','.join(inputs)})"
        )
    out = np.empty((len(points), len(fields)), dtype=np.float64)
    with torch.no_grad():
        for start in range(0, len(points), max(1, int(batch))):
            chunk = torch.from_numpy(points[start : start + batch])
            result = model(chunk)
            out[start : start + len(chunk)] = result.detach().to(torch.float64).cpu().numpy()
    return {
        name: (out[:, k].reshape(shape) if shape is not None else out[:, k].copy())
        for k, name in enumerate(fields)
    }


# ---------------------------------------------------------------------------------------------
# A run's output folder


def _case_inputs(case):
    """The network's inputs: the spatial coordinates, then time (docs/case-format.md)."""
    inputs = list(case.get("coordinates") or [])
    time = case.get("time")
    if isinstance(time, dict) and time.get("name"):
        inputs.append(time["name"])
    return inputs


class Run:
    """A Tessera output folder: run.json, history.jsonl, <name>.h5 and the points output.

    Run(folder) reads run.json at once (so a folder that is not a run fails here, with one
    line naming what is missing); the other files are read when asked for.

    Attributes:
        folder: the folder given.
        record: run.json as a dict.
        case: the effective case (the case file with every --set applied).
        name: the case's name; inputs: its input names (coordinates, then time).
        status: "running", "completed", "stopped" or "failed".
        final: the final figures (the last history record), or {} while the run trains.
    """

    def __init__(self, folder):
        if os.path.isfile(folder) and os.path.basename(folder) == "run.json":
            folder = os.path.dirname(folder) or "."
        self.folder = folder
        if not os.path.isdir(folder):
            raise ResultsError(f"{folder}: no such folder (give a Tessera output folder)")
        path = os.path.join(folder, "run.json")
        if not os.path.isfile(path):
            raise ResultsError(
                f"{path}: no such file (not a Tessera output folder, or its run never started)"
            )
        self.record = _read_json(path, "run record")
        if not isinstance(self.record, dict) or not isinstance(self.record.get("case"), dict):
            raise ResultsError(f"{path}: no 'case' object (not a Tessera run record)")
        self._history = None

    def __repr__(self):
        return f"Run({self.folder!r}: case {self.name!r}, {self.status})"

    @property
    def case(self):
        return self.record["case"]

    @property
    def name(self):
        return self.case.get("name", "")

    @property
    def run_id(self):
        return self.record.get("run_id")

    @property
    def status(self):
        return self.record.get("status", "unknown")

    @property
    def final(self):
        return self.record.get("final") or {}

    @property
    def inputs(self):
        return _case_inputs(self.case)

    @property
    def field_names(self):
        """The case's fields, in its order."""
        return list(self.case.get("fields") or [])

    # -- history.jsonl ---------------------------------------------------------------------

    def records(self, final=False):
        """The records of history.jsonl in file order, as dicts; the closing "final" record
        (which repeats the last iteration, evaluated after training) only with final=True.

        An incomplete last line (a running job writing it) is left out; any other bad line is
        an error naming the line.
        """
        if self._history is None:
            self._history = self._read_history()
        return [r for r in self._history if final or not r.get("final")]

    def _read_history(self):
        path = os.path.join(self.folder, "history.jsonl")
        if not os.path.isfile(path):
            raise ResultsError(f"{path}: no such file (the run has logged nothing yet)")
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        records = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                if number == len(lines) and not line.endswith("\n"):
                    break
                raise ResultsError(
                    f"{path}:{number}: not valid JSON ({e.msg} at column {e.colno})"
                ) from None
            if not isinstance(record, dict) or "iteration" not in record:
                raise ResultsError(f"{path}:{number}: not a history record (no 'iteration')")
            records.append(record)
        return records

    def history(self, key=None, final=False):
        """The training history.

        history() gives the records as a list of dicts (see records()). history(key) gives
        two numpy arrays, the iterations and the values of a dotted key ("loss", "lr",
        "terms.poisson", "rel_l2.u", "parameters.nu", "time_s.compute"), NaN where a record
        lacks it. The closing final record is left out unless final=True, so that the
        iterations increase.
        """
        records = self.records(final)
        if key is None:
            return records
        iterations = np.array([r["iteration"] for r in records], dtype=np.int64)
        found = [_dig(r, key) for r in records]
        if records and all(v is None for v in found):
            known = sorted({k for r in records for k in _dotted_keys(r)})
            raise ResultsError(
                f"{os.path.join(self.folder, 'history.jsonl')}: no '{key}' in any record "
                f"(keys: {', '.join(known)})"
            )
        values = np.array(
            [v if isinstance(v, (int, float)) else math.nan for v in found], dtype=np.float64
        )
        return iterations, values

    def history_keys(self):
        """Every dotted key history(key) accepts for this run."""
        return sorted({k for r in self.records(final=True) for k in _dotted_keys(r)})

    # -- <name>.h5 -------------------------------------------------------------------------

    @property
    def solution_path(self):
        """The run's solution file, <name>.h5 (which need not exist yet)."""
        return os.path.join(self.folder, self.name + ".h5")

    def _solution(self):
        path = self.solution_path
        if not os.path.isfile(path):
            others = [
                os.path.basename(p)
                for p in sorted(glob.glob(os.path.join(self.folder, "*.h5")))
                if not p.endswith(("_points.h5", "_partition.h5"))
            ]
            hint = (
                f"; other .h5 here: {', '.join(others)}"
                if others
                else f"; it is written when training ends (status: {self.status})"
            )
            raise ResultsError(f"{path}: no such file{hint}")
        return path

    def fields(self, names=None):
        """The solution file <name>.h5 as a FieldData: axes, fields shaped like the file
        (time slowest, the first coordinate fastest), mesh points and cells for mesh output,
        trained parameters and the root attributes. `names` reads only those fields."""
        time = self.case.get("time")
        time = time.get("name") if isinstance(time, dict) else ""
        return read_grid(self._solution(), coordinates=self.inputs, time=time, names=names)

    def field(self, name):
        """One dataset of /fields in <name>.h5 (e.g. "u", "u_error", "subdomain")."""
        return self.fields(names=[name]).fields[name]

    # -- <name>_points.h5 / .csv -----------------------------------------------------------

    def points(self):
        """The fields at the case's output.points, <name>_points.h5 (or .csv)."""
        for extension in (".h5", ".csv"):
            path = os.path.join(self.folder, f"{self.name}_points{extension}")
            if os.path.isfile(path):
                return read_values(path, self.inputs)
        raise ResultsError(
            f"{os.path.join(self.folder, self.name + '_points.h5')}: no such file "
            f"(nor .csv; the case needs output.points)"
        )

    def checkpoints(self):
        """The complete checkpoint folders (those with a manifest), oldest first."""
        found = glob.glob(os.path.join(self.folder, "checkpoints", "*", "manifest.json"))
        return sorted(os.path.dirname(p) for p in found)


# ---------------------------------------------------------------------------------------------
# The summary


def _number(value):
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def summary(folder):
    """A one-screen description of a run folder, as lines of text."""
    run = Run(folder)
    r = run.record
    lines = [f"{run.folder}: case {run.name!r}, run {run.run_id}, {run.status}"]
    for key in ("message", "stop_reason", "checkpoint"):
        if key in r:
            lines.append(f"  {key}: {r[key]}")
    when = f"  started {r.get('started', '?')}"
    if "finished" in r:
        when += f", finished {r['finished']}"
    if "wall_s" in r:
        when += f", {r['wall_s']:.1f} s training"
    lines.append(when)
    versions = r.get("versions") or {}
    ranks = r.get("ranks") or []
    devices = sorted({x.get("device", "?") for x in ranks if isinstance(x, dict)})
    lines.append(
        f"  tessera {versions.get('tessera', '?')}, {versions.get('ranks', len(ranks))} rank(s)"
        + (f" on {', '.join(devices)}" if devices else "")
        + (f", precision {', '.join(r['precision'])}" if r.get("precision") else "")
    )
    decomposition = (run.case.get("decomposition") or {}).get("method", "none")
    lines.append(
        f"  inputs {','.join(run.inputs)}; fields {','.join(run.field_names)}; "
        f"decomposition {decomposition}"
    )
    final = run.final
    if final:
        lines.append(
            f"  final (iteration {final.get('iteration')}): loss {_number(final.get('loss'))}"
        )
        for group in ("rel_l2", "terms", "parameters"):
            if isinstance(final.get(group), dict) and final[group]:
                text = ", ".join(f"{k} {_number(v)}" for k, v in final[group].items())
                lines.append(f"    {group}: {text}")
        for key in ("rel_l2_stacked", "interface_jump"):
            if key in final:
                lines.append(f"    {key}: {_number(final[key])}")
    try:
        records = run.records()
        if records:
            lines.append(
                f"  history: {len(records)} records, iterations {records[0]['iteration']}"
                f"..{records[-1]['iteration']}, stages {', '.join(dict.fromkeys(str(x.get('stage')) for x in records))}"
            )
        else:
            lines.append("  history: no records yet")
    except ResultsError as e:
        lines.append(f"  history: {e}")
    try:
        data = run.fields()
        kind = f"mesh, {len(data.mesh_points)} nodes, " if data.mesh else "grid "
        lines.append(
            f"  {os.path.basename(data.path)}: {kind}shape {data.shape} "
            f"({','.join(reversed(data.coordinates))}); {', '.join(sorted(data.fields))}"
        )
    except ResultsError as e:
        lines.append(f"  solution: {e}")
    checkpoints = run.checkpoints()
    if checkpoints:
        lines.append(
            f"  checkpoints: {len(checkpoints)}, newest {os.path.relpath(checkpoints[-1], run.folder)}"
        )
    return lines


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", help="a Tessera output folder")
    args = parser.parse_args(argv)
    try:
        print("\n".join(summary(args.output_dir)))
    except ResultsError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
