#!/usr/bin/python3
"""Checks what a finished run wrote against docs/output-format.md (grid output).

  check_layout.py --out DIR [--expect-set path=value]...

Reads the effective case from DIR/run.json and checks, for <name>.h5: /grid/<coord> float64 per
coordinate (time included, spanning the domain), /fields/<field>, /fields/residual_<eq>,
/fields/<field>_exact and /fields/<field>_error float64 and /fields/subdomain int32, all shaped
[nt?, nz?, ny?, nx] (C order, first coordinate fastest, time slowest: checked by evaluating the
closed-form exact solution at the grid coordinates), u_error == u - u_exact, the root attributes,
and /steps/<k>/<field> == /fields/<field>[k] for space-time output. For <name>.xmf: well-formed
XDMF that references only datasets that exist in <name>.h5 with matching dimensions, no
HyperSlab items, and a temporal collection with one grid per time value for space-time output.
For history.jsonl: every line a JSON object with iteration, stage, loss, terms, rel_l2 and time_s.
For run.json: the effective case with every --expect-set override applied.
"""
import argparse
import json
import math
import os
import sys
import xml.etree.ElementTree as ElementTree

import h5py
import numpy as np

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)
    return condition


def lookup(document, path):
    """Follows a --set path (dots and array indices) through a JSON document."""
    node = document
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def evaluate(expression, variables):
    """Evaluates a case-file expression (the subset the shipped cases use) with numpy."""
    namespace = {
        name: getattr(np, name)
        for name in ("sin", "cos", "tan", "exp", "log", "sqrt", "abs", "sinh", "cosh", "tanh")
    }
    namespace.update(pi=math.pi, e=math.e)
    namespace.update(variables)
    return eval(expression.replace("^", "**"), {"__builtins__": {}}, namespace)


def axis_bounds(case, coordinate):
    if case.get("time") and coordinate == case["time"]["name"]:
        return case["time"]["range"]
    geometry = case["geometry"]
    index = case["coordinates"].index(coordinate)
    if "interval" in geometry:
        return geometry["interval"]
    if "box" in geometry:
        return geometry["box"][index]
    return None


def check_h5(path, case, run_info):
    name = case["name"]
    coordinates = list(case["coordinates"])
    time_name = case["time"]["name"] if case.get("time") else None
    axes = coordinates + ([time_name] if time_name else [])
    grid_spec = case["output"]["grid"]
    with h5py.File(path, "r") as f:
        # Root attributes.
        for attribute in ("case_name", "iterations", "wall_seconds"):
            check(attribute in f.attrs, f"root attribute '{attribute}' missing")
        if "case_name" in f.attrs:
            value = f.attrs["case_name"]
            value = value.decode() if isinstance(value, bytes) else str(value)
            check(value == name, f"case_name attribute is {value!r}, expected {name!r}")
        if "iterations" in f.attrs:
            total = sum(stage["iterations"] for stage in case["training"]["stages"])
            check(
                int(f.attrs["iterations"]) == total,
                f"iterations attribute {f.attrs['iterations']} != {total} (sum over stages)",
            )
        if "wall_seconds" in f.attrs:
            check(float(f.attrs["wall_seconds"]) > 0, "wall_seconds attribute is not positive")

        # Axes: one float64 dataset per coordinate, time included, spanning the domain.
        grid = {}
        for axis in axes:
            key = f"/grid/{axis}"
            if not check(key in f, f"{key} missing"):
                continue
            dataset = f[key]
            check(dataset.dtype == np.float64, f"{key} is {dataset.dtype}, expected float64")
            check(
                dataset.shape == (grid_spec[axis],),
                f"{key} has shape {dataset.shape}, expected ({grid_spec[axis]},)",
            )
            values = dataset[()]
            grid[axis] = values
            check(np.all(np.diff(values) > 0), f"{key} is not increasing")
            bounds = axis_bounds(case, axis)
            if bounds is not None:
                check(
                    np.allclose([values[0], values[-1]], bounds, atol=1e-12),
                    f"{key} spans [{values[0]}, {values[-1]}], expected {bounds}",
                )
        if len(grid) != len(axes):
            return
        shape = tuple(grid_spec[axis] for axis in reversed(axes))  # [nt?, nz?, ny?, nx]

        def dataset_ok(key, dtype):
            if not check(key in f, f"{key} missing"):
                return False
            dataset = f[key]
            check(dataset.dtype == dtype, f"{key} is {dataset.dtype}, expected {np.dtype(dtype)}")
            return check(
                dataset.shape == shape, f"{key} has shape {dataset.shape}, expected {shape}"
            )

        dataset_ok("/fields/subdomain", np.int32)
        if "/fields/subdomain" in f and f["/fields/subdomain"].shape == shape:
            subdomains = f["/fields/subdomain"][()]
            check(
                subdomains.min() >= 0, "/fields/subdomain has negative ids on a box-shaped domain"
            )
        for equation in case["equations"]:
            key = f"/fields/residual_{equation['name']}"
            if dataset_ok(key, np.float64):
                check(np.all(np.isfinite(f[key][()])), f"{key} has non-finite values")

        # Mesh of the grid in the datasets' own order: axis k of the dataset is axes[-1-k].
        mesh = np.meshgrid(*[grid[axis] for axis in reversed(axes)], indexing="ij")
        variables = dict(case.get("constants", {}))
        variables.update({axis: mesh[len(axes) - 1 - i] for i, axis in enumerate(axes)})
        for field in case["fields"]:
            keys = [f"/fields/{field}", f"/fields/{field}_exact", f"/fields/{field}_error"]
            present = [dataset_ok(key, np.float64) for key in keys]
            if not all(present):
                continue
            u, exact, error = (f[key][()] for key in keys)
            check(np.all(np.isfinite(u)), f"/fields/{field} has non-finite values")
            check(
                np.allclose(error, u - exact, rtol=0, atol=1e-9 * max(1.0, np.abs(u).max())),
                f"/fields/{field}_error != /fields/{field} - /fields/{field}_exact "
                f"(max difference {np.abs(error - (u - exact)).max():.3e})",
            )
            closed_form = case.get("exact", {}).get(field)
            if closed_form:
                expected = np.broadcast_to(evaluate(closed_form, variables), shape)
                deviation = np.abs(exact - expected).max()
                check(
                    deviation < 1e-5,
                    f"/fields/{field}_exact differs from '{closed_form}' at the grid "
                    f"coordinates by {deviation:.3e}: not C order with the first coordinate fastest?",
                )
            attribute = f"rel_l2_{field}"
            if check(attribute in f.attrs, f"root attribute '{attribute}' missing"):
                measured = np.linalg.norm(error) / np.linalg.norm(exact)
                check(
                    math.isclose(float(f.attrs[attribute]), measured, rel_tol=1e-3),
                    f"{attribute} = {float(f.attrs[attribute])} but |u_error|/|u_exact| on the grid = {measured}",
                )
            if time_name:
                for k in range(shape[0]):
                    key = f"/steps/{k}/{field}"
                    if not check(key in f, f"{key} missing"):
                        break
                    step = f[key][()]
                    if not check(np.array_equal(step, u[k]), f"{key} != /fields/{field}[{k}]"):
                        break
    return shape


def check_xmf(xmf_path, h5_path, case, shape):
    try:
        root = ElementTree.parse(xmf_path).getroot()
    except ElementTree.ParseError as error:
        check(False, f"{xmf_path} is not well-formed XML: {error}")
        return
    check(root.tag == "Xdmf", f"{xmf_path}: root element is {root.tag}, expected Xdmf")
    items = list(root.iter("DataItem"))
    check(items, f"{xmf_path} has no DataItem")
    referenced = set()
    with h5py.File(h5_path, "r") as f:
        for item in items:
            check(
                item.get("ItemType", "Uniform") != "HyperSlab",
                f"{xmf_path}: HyperSlab DataItem (ParaView 5.11's Xdmf3 reader ignores them)",
            )
            if item.get("Format") != "HDF":
                continue
            file_part, _, dataset = (item.text or "").strip().partition(":")
            target = (
                file_part
                if os.path.isabs(file_part)
                else os.path.join(os.path.dirname(xmf_path), file_part)
            )
            check(
                os.path.realpath(target) == os.path.realpath(h5_path),
                f"{xmf_path}: DataItem references {file_part}, expected {os.path.basename(h5_path)}",
            )
            if check(
                dataset in f, f"{xmf_path}: DataItem references {dataset}, which is not in the .h5"
            ):
                referenced.add(dataset)
                dimensions = tuple(int(d) for d in item.get("Dimensions", "").split())
                check(
                    dimensions == f[dataset].shape,
                    f"{xmf_path}: {dataset} declared {dimensions}, stored {f[dataset].shape}",
                )
    attributes = {a.get("Name") for a in root.iter("Attribute")}
    for field in case["fields"]:
        check(field in attributes, f"{xmf_path}: no Attribute named {field}")
    if case.get("time"):
        collections = [g for g in root.iter("Grid") if g.get("GridType") == "Collection"]
        if check(
            collections and collections[0].get("CollectionType") == "Temporal",
            f"{xmf_path}: space-time output is not a temporal collection",
        ):
            steps = [g for g in collections[0] if g.tag == "Grid"]
            check(
                len(steps) == shape[0], f"{xmf_path}: {len(steps)} time grids, expected {shape[0]}"
            )


def check_history(path, case):
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    if not check(lines, f"{path} is empty"):
        return
    names = {e["name"] for e in case["equations"]} | {c["name"] for c in case["conditions"]}
    previous = -1
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
        except ValueError as error:
            check(False, f"{path}:{number} is not JSON: {error}")
            continue
        where = f"{path}:{number}"
        for key, kind in (
            ("iteration", int),
            ("stage", str),
            ("loss", (int, float)),
            ("terms", dict),
            ("rel_l2", dict),
            ("time_s", dict),
        ):
            check(isinstance(entry.get(key), kind), f"{where}: '{key}' missing or not {kind}")
        if isinstance(entry.get("iteration"), int):
            check(entry["iteration"] >= previous, f"{where}: iteration goes backwards")
            previous = entry["iteration"]
        if isinstance(entry.get("terms"), dict):
            check(
                names <= set(entry["terms"]),
                f"{where}: terms {sorted(entry['terms'])} lack some of {sorted(names)}",
            )
        if isinstance(entry.get("rel_l2"), dict):
            check(set(case["fields"]) <= set(entry["rel_l2"]), f"{where}: rel_l2 lacks a field")
    check(json.loads(lines[-1]).get("final") is True, f'{path}: the last line lacks "final": true')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--expect-set", action="append", default=[])
    args = parser.parse_args()
    out = os.path.abspath(args.out)

    run_path = os.path.join(out, "run.json")
    with open(run_path) as f:
        run_info = json.load(f)
    case = run_info["case"]
    for override in args.expect_set + ["output.directory=" + out]:
        path, _, value = override.partition("=")
        try:
            actual = lookup(case, path)
        except (KeyError, IndexError, ValueError, TypeError):
            actual = "<missing>"
        check(
            actual == parse_value(value),
            f"run.json: case.{path} is {actual!r}, expected {value} (--set not applied?)",
        )
    for key in ("versions", "started", "finished", "final"):
        check(key in run_info, f"run.json: '{key}' missing")

    name = case["name"]
    h5_path = os.path.join(out, name + ".h5")
    xmf_path = os.path.join(out, name + ".xmf")
    shape = None
    if check(os.path.isfile(h5_path), f"{h5_path} missing"):
        shape = check_h5(h5_path, case, run_info)
    if check(os.path.isfile(xmf_path), f"{xmf_path} missing") and shape:
        check_xmf(xmf_path, h5_path, case, shape)
    check_history(os.path.join(out, "history.jsonl"), case)
    leftovers = [n for n in os.listdir(out) if n.endswith((".tmp", ".partial")) or ".tmp." in n]
    check(not leftovers, f"temporary files left behind: {leftovers}")

    print(f"{len(failures)} problem(s) in {out}" if failures else f"layout of {out} as documented")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
