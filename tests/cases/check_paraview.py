#!/usr/bin/python3
"""Opens a run's .xmf the way a ParaView user does and checks that the field arrays load.

  check_paraview.py --out DIR

Runs `pvpython --force-offscreen-rendering` on a small script that opens DIR/<name>.xmf by its
absolute path (a relative one makes ParaView 5.11 look for the .h5 in the wrong place,
facts.md) with OpenDataFile (the Xdmf3 reader a user gets by default), and checks that every
field of the case is a point array and that the point count is the spatial grid size (for
space-time output: at every time value, and one time value per grid time). Exits 77 (CTest
skip) when pvpython is not on PATH.
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
if expected["times"]:
    if len(times) != len(expected["times"]):
        print("FAIL: %d time values, expected %d" % (len(times), len(expected["times"]))); sys.exit(1)
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
    print("time", time, "points", points, "point arrays", arrays)
    if points != expected["points"]:
        print("FAIL: %d points, expected %d" % (points, expected["points"])); sys.exit(1)
    for field in expected["fields"]:
        if field not in arrays:
            print("FAIL: no point array", field); sys.exit(1)
        array = reader.PointData[field]
        if array.GetNumberOfTuples() != expected["points"]:
            print("FAIL: array", field, "has", array.GetNumberOfTuples(), "tuples"); sys.exit(1)
print("ParaView read", expected["xmf"])
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    pvpython = shutil.which("pvpython")
    if not pvpython:
        print("pvpython not installed: skipped")
        return SKIP

    out = os.path.abspath(args.out)
    with open(os.path.join(out, "run.json")) as f:
        case = json.load(f)["case"]
    grid = case["output"]["grid"]
    points = 1
    for coordinate in case["coordinates"]:
        points *= grid[coordinate]
    times = []
    if case.get("time"):
        import h5py  # only needed for the time values
        with h5py.File(os.path.join(out, case["name"] + ".h5"), "r") as f:
            times = [float(t) for t in f["/grid/" + case["time"]["name"]][()]]
    expected = {"xmf": os.path.join(out, case["name"] + ".xmf"), "points": points,
                "fields": case["fields"], "times": times}
    script = os.path.join(out, "paraview_check.py")
    with open(script, "w") as f:
        f.write(PARAVIEW_SCRIPT)
    run = subprocess.run([pvpython, "--force-offscreen-rendering", script, json.dumps(expected)],
                         cwd=out, capture_output=True, text=True, timeout=50)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    # The Xdmf3 reader reports arrays it cannot read on stderr instead of failing.
    if "Skipping unrecognized array" in run.stdout + run.stderr:
        print("FAIL: ParaView skipped an array")
        return 1
    return 0 if run.returncode == 0 and "ParaView read" in run.stdout else 1


if __name__ == "__main__":
    sys.exit(main())
