#!/usr/bin/python3
"""Opens a run's .xmf the way a ParaView user does and checks that the field arrays load.

  check_paraview.py --out DIR
  check_paraview.py --out DIR --mesh [--points N --cells M]
  check_paraview.py --xmf FILE.xmf --points N --cells M [--fields u v] [--times K]

Runs `pvpython --force-offscreen-rendering` on a small script that opens the .xmf by its
absolute path (a relative one makes ParaView 5.11 look for the .h5 in the wrong place; see
docs/troubleshooting.md, "ParaView does not open the output") with OpenDataFile (the Xdmf3
reader a user gets by default), and checks that every field is a point array and that the
point count is as expected (for space-time output: at the first and last time value, and one
time value per output time). Exits 77 (CTest skip) when pvpython is not on PATH.

Grid output (first form): the .xmf is DIR/<name>.xmf, the fields, the point count (the spatial
grid size) and the times come from DIR/run.json and the .h5.
Mesh output (--mesh, or --xmf): the reader must produce the expected numbers of points and
cells, and only triangles (2-D) or only tetrahedra (3-D). The counts are --points and --cells;
with --out --mesh they default to the shapes of /mesh/points and /mesh/cells in the run's .h5.
With --out the fields and times come from the run as above; with --xmf from --fields (default:
none) and --times (default: no time).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SKIP = 77

PARAVIEW_SCRIPT = r"""
import json, sys
from paraview.simple import OpenDataFile
expected = json.loads(sys.argv[1])
reader = OpenDataFile(expected["xmf"])
if reader is None:
    print("FAIL: ParaView could not open", expected["xmf"]); sys.exit(1)
print("reader:", reader.GetXMLName())
times = list(getattr(reader, "TimestepValues", None) or [])
if expected["time_count"] and len(times) != expected["time_count"]:
    print("FAIL: %d time values, expected %d" % (len(times), expected["time_count"])); sys.exit(1)
if expected["times"]:
    if max(abs(a - b) for a, b in zip(times, expected["times"])) > 1e-9:
        print("FAIL: time values", times[:3], "...; expected", expected["times"][:3]); sys.exit(1)
checked = [times[0], times[-1]] if times else [None]
for time in checked:
    if time is None:
        reader.UpdatePipeline()
    else:
        reader.UpdatePipeline(time)
    info = reader.GetDataInformation()
    points = info.GetNumberOfPoints()
    arrays = list(reader.PointData.keys())
    print("time", time, "points", points, "cells", info.GetNumberOfCells(), "point arrays", arrays)
    if points != expected["points"]:
        print("FAIL: %d points, expected %d" % (points, expected["points"])); sys.exit(1)
    if expected.get("cells") is not None:
        if info.GetNumberOfCells() != expected["cells"]:
            print("FAIL: %d cells, expected %d" % (info.GetNumberOfCells(), expected["cells"])); sys.exit(1)
        # Triangles (VTK_TRIANGLE 5) or tetrahedra (VTK_TETRA 10) only: a wrong connectivity
        # width would give other cell types or fewer cells.
        from paraview import servermanager
        data = servermanager.Fetch(reader)
        blocks = [data]
        if data.IsA("vtkCompositeDataSet"):
            it = data.NewIterator()
            it.InitTraversal()
            blocks = []
            while not it.IsDoneWithTraversal():
                blocks.append(it.GetCurrentDataObject())
                it.GoToNextItem()
        types = set()
        for block in blocks:
            for c in range(block.GetNumberOfCells()):
                types.add(block.GetCellType(c))
        print("cell types", sorted(types))
        if not types <= {5, 10} or len(types) != 1:
            print("FAIL: cell types", sorted(types), "expected only triangles (5) or only tetrahedra (10)"); sys.exit(1)
    for field in expected["fields"]:
        if field not in arrays:
            print("FAIL: no point array", field); sys.exit(1)
        array = reader.PointData[field]
        if array.GetNumberOfTuples() != expected["points"]:
            print("FAIL: array", field, "has", array.GetNumberOfTuples(), "tuples"); sys.exit(1)
print("ParaView read", expected["xmf"])
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--out", help="a run's output folder (with run.json)")
    source.add_argument("--xmf", help="a mesh .xmf to open (needs --points and --cells)")
    parser.add_argument(
        "--mesh", action="store_true", help="the run wrote mesh output (with --out)"
    )
    parser.add_argument("--points", type=int, help="expected number of mesh points")
    parser.add_argument("--cells", type=int, help="expected number of triangles or tetrahedra")
    parser.add_argument(
        "--fields", nargs="*", default=[], help="point arrays expected (with --xmf)"
    )
    parser.add_argument(
        "--times", type=int, default=0, help="expected number of time values (with --xmf)"
    )
    args = parser.parse_args()
    if (args.points is None) != (args.cells is None):
        parser.error("--points and --cells go together (mesh output)")
    if args.xmf and args.cells is None:
        parser.error("--xmf needs --points and --cells")
    if args.out and args.cells is not None and not args.mesh:
        parser.error("--points and --cells with --out need --mesh")

    pvpython = shutil.which("pvpython")
    if not pvpython:
        print("pvpython not installed: skipped")
        return SKIP

    if args.xmf:
        xmf = os.path.abspath(args.xmf)
        out = os.path.dirname(xmf)
        expected = {
            "xmf": xmf,
            "points": args.points,
            "cells": args.cells,
            "fields": args.fields,
            "times": None,
            "time_count": args.times,
        }
    else:
        out = os.path.abspath(args.out)
        with open(os.path.join(out, "run.json")) as f:
            case = json.load(f)["case"]
        h5_path = os.path.join(out, case["name"] + ".h5")
        points, cells = args.points, args.cells
        if not args.mesh:
            grid = case["output"]["grid"]
            points = 1
            for coordinate in case["coordinates"]:
                points *= grid[coordinate]
        elif cells is None:
            import h5py  # only needed for the mesh counts and the time values

            with h5py.File(h5_path, "r") as f:
                points, cells = f["/mesh/points"].shape[0], f["/mesh/cells"].shape[0]
        times = []
        if case.get("time"):
            import h5py

            with h5py.File(h5_path, "r") as f:
                times = [float(t) for t in f["/grid/" + case["time"]["name"]][()]]
        expected = {
            "xmf": os.path.join(out, case["name"] + ".xmf"),
            "points": points,
            "cells": cells,
            "fields": case["fields"],
            "times": times,
            "time_count": len(times),
        }
    script = os.path.join(out, "paraview_check.py")
    with open(script, "w") as f:
        f.write(PARAVIEW_SCRIPT)
    run = subprocess.run(
        [pvpython, "--force-offscreen-rendering", script, json.dumps(expected)],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=50,
    )
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    # The Xdmf3 reader reports arrays it cannot read on stderr instead of failing.
    if "Skipping unrecognized array" in run.stdout + run.stderr:
        print("FAIL: ParaView skipped an array")
        return 1
    return 0 if run.returncode == 0 and "ParaView read" in run.stdout else 1


if __name__ == "__main__":
    sys.exit(main())
