"""Running a case with --set overrides and reading the collocation samples its checkpoints
keep (docs/output-format.md), for the case checks. Reading archives needs torch."""
import argparse
import glob
import os
import shutil
import subprocess
import sys

ENV = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")


def case_arguments():
    """The --tessera, --case and --out arguments every checkpoint check takes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    return parser.parse_args()


def report(failures):
    """Prints each failure on a FAIL: line; the exit status, 1 when there are any."""
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


def run_in(tessera, case, out, sets, options=(), env=None, launch=(), timeout=120):
    """Runs CASE into OUT as it stands (a continued run finds its folder), with every --set in
    SETS, then OPTIONS, under LAUNCH (e.g. an mpiexec line); prints the command and returns the
    finished process."""
    line = list(launch) + [tessera, "run", case, "--set", f"output.directory={out}"]
    for s in sets:
        line += ["--set", s]
    line += list(options)
    print("running:", " ".join(line), flush=True)
    return subprocess.run(line, env=env or ENV, capture_output=True, text=True, timeout=timeout)


def run_case(tessera, case, out, sets, timeout, env=None):
    """Runs CASE into an emptied OUT with every --set in SETS; returns the finished process."""
    shutil.rmtree(out, ignore_errors=True)
    line = [tessera, "run", case, "--set", f"output.directory={out}"]
    for s in sets:
        line += ["--set", s]
    return (
        subprocess.run(line, env=env or ENV, capture_output=True, text=True, timeout=timeout),
        line,
    )


def run_fresh(tessera, case, out, sets, timeout):
    """run_case(), exiting with FAIL when the run fails."""
    result, line = run_case(tessera, case, out, sets, timeout)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-2000:] + result.stderr[-2000:])
        sys.exit(f"FAIL: exit {result.returncode}: {' '.join(line)}")


def checkpoint_folders(out):
    """(iteration, folder) of every checkpoint kept in OUT, in order."""
    folders = sorted(glob.glob(os.path.join(out, "checkpoints", "*")))
    return [(int(os.path.basename(f)), f) for f in folders]


def archive_entries(folder, subdomain, suffix):
    """{name: tensor} of the entries ending in SUFFIX of a subdomain's checkpoint archive."""
    import torch  # only the callers that read archives need it

    state = torch.jit.load(os.path.join(folder, f"subdomain_{subdomain}.pt")).state_dict()
    return {k: v for k, v in state.items() if k.endswith(suffix)}


def adapted_shapes(folder, subdomain):
    """{name: shape} of the adapted samples a subdomain's checkpoint archive holds."""
    return {k: tuple(v.shape) for k, v in archive_entries(folder, subdomain, ".adapted").items()}


def fnv1a64(path):
    """The FNV-1a 64 checksum of a file as a checkpoint manifest records it (16 hex digits)."""
    value = 0xCBF29CE484222325
    with open(path, "rb") as f:
        for byte in f.read():
            value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def manifest_file_failures(folder):
    """What differs between the files of a checkpoint FOLDER and its manifest's "files"."""
    import json

    with open(os.path.join(folder, "manifest.json")) as f:
        files = json.load(f).get("files")
    if not files:
        return [f"{folder}: the manifest lists no files"]
    failures = []
    on_disk = sorted(n for n in os.listdir(folder) if n.endswith(".pt"))
    if sorted(files) != on_disk:
        failures.append(f"{folder}: the manifest lists {sorted(files)}, the folder has {on_disk}")
    for name, record in files.items():
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        actual = {"bytes": os.path.getsize(path), "fnv1a64": fnv1a64(path)}
        if record != actual:
            failures.append(f"{folder}/{name}: the manifest says {record}, the file is {actual}")
    return failures


def history_without_timings(out):
    """OUT/history.jsonl as records without their wall-clock members, which differ run to run."""
    import json

    with open(os.path.join(out, "history.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    for record in records:
        record.pop("wall_s", None)
        record.pop("time_s", None)
    return records


def field_bytes(out):
    """{name: raw bytes} of every dataset under /fields of the one .h5 file in OUT."""
    import h5py

    (path,) = glob.glob(os.path.join(out, "*.h5"))
    with h5py.File(path, "r") as f:
        return {name: dataset[()].tobytes() for name, dataset in f["fields"].items()}
