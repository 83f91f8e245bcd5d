#!/usr/bin/python3
"""One output folder, one run (docs/output-format.md, "Runs and output folders").

  check_run_folder.py --tessera BIN --case tests/cases/tiny.json --work DIR SCENARIO

Scenarios:
  mixing      a second run with another case into a folder that holds a finished run is
              refused before it writes anything, with the folder and the choices named; so are
              --restart auto and --restart latest of the changed case, listing the key that
              differs; --restart auto of the first case continues that run; --overwrite
              replaces it.
  auto_fresh  --restart auto into an empty folder starts from iteration 0.
  concurrent  two runs started together into one folder: one finishes with intact results,
              the other is refused.
  prune_own   continuing a run prunes only its own old checkpoints, never another run's.
  older       continuing from an older checkpoint moves the later ones to superseded/; a stage
              shortened below the steps already taken is refused; --restart FOLDER into a
              folder that holds another run's results is refused.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from history import read_history


class Scenario:
    def __init__(self, tessera, case, folder):
        self.tessera, self.case, self.folder = tessera, case, folder
        self.failures = []
        shutil.rmtree(folder, ignore_errors=True)

    def command(self, sets, *options):
        command = [self.tessera, "run", self.case, "--set", f"output.directory={self.folder}"]
        for s in sets:
            command += ["--set", s]
        return command + list(options)

    def run(self, sets, *options):
        result = subprocess.run(
            self.command(sets, *options), capture_output=True, text=True, timeout=120
        )
        return result.returncode, result.stdout + result.stderr

    def expect(self, condition, what, text=""):
        if not condition:
            self.failures.append(what + (f"\n--- output ---\n{text[-1500:]}" if text else ""))

    def run_json(self):
        with open(os.path.join(self.folder, "run.json")) as f:
            return json.load(f)

    def history(self):
        return read_history(self.folder)


FIRST = ["training.stages.0.iterations=400", "training.stages.0.lr=1e-3"]
SECOND = [
    "training.stages.0.iterations=200",
    "training.stages.0.lr=1e-2",
    "training.checkpoint_every=100",
]


def mixing(s):
    code, text = s.run(FIRST)
    s.expect(code == 0, "the first run failed", text)
    first = s.run_json()
    history_before = open(os.path.join(s.folder, "history.jsonl")).read()

    code, text = s.run(SECOND)
    s.expect(code != 0, "a second run with another case into the folder was not refused", text)
    for needed in [f"output folder '{s.folder}'", "--restart", "--overwrite", "output.directory"]:
        s.expect(needed in text, f"the refusal does not name {needed!r}", text)
    for option in ["auto", "latest"]:
        code, text = s.run(SECOND, "--restart", option)
        s.expect(code != 0, f"--restart {option} continued a checkpoint of another case", text)
        s.expect(
            "training.stages.0.lr: 0.001 -> 0.01" in text,
            f"--restart {option}: the refusal does not list the key that differs",
            text,
        )
    s.expect(
        open(os.path.join(s.folder, "history.jsonl")).read() == history_before,
        "a refused run changed the first run's history.jsonl",
    )
    s.expect(s.run_json() == first, "a refused run changed the first run's run.json")

    # The first case with a longer last stage: continues that run, under its id.
    code, text = s.run(
        ["training.stages.0.iterations=600", "training.stages.0.lr=1e-3"], "--restart", "auto"
    )
    s.expect(
        code == 0 and "continuing from the checkpoint at iteration 400" in text,
        "--restart auto did not continue the first run",
        text,
    )
    continued = s.run_json()
    s.expect(continued["run_id"] == first["run_id"], "the continued run changed its run id")
    s.expect(
        continued["iterations"] == 600, f"the continued run ended at {continued['iterations']}"
    )

    code, text = s.run(SECOND, "--overwrite")
    s.expect(code == 0, "--overwrite failed", text)
    replaced = s.run_json()
    s.expect(replaced["run_id"] != first["run_id"], "--overwrite kept the old run id")
    s.expect(
        replaced["case"]["training"]["stages"][0]["lr"] == 0.01,
        "--overwrite did not record the new case",
    )
    s.expect([r["iteration"] for r in s.history()][0] <= 100, "--overwrite kept the old history")


def auto_fresh(s):
    code, text = s.run(FIRST, "--restart", "auto")
    s.expect(code == 0, "--restart auto into an empty folder failed", text)
    s.expect("continuing" not in text, "--restart auto continued something in an empty folder")
    s.expect(s.run_json()["status"] == "completed", "the fresh run did not complete")


def concurrent(s):
    sets = ["training.stages.0.iterations=3000", "training.log_every=100"]
    runs = [
        subprocess.Popen(
            s.command(sets), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    codes = [run.returncode for run in runs]
    s.expect(
        sorted(codes) == [0, 1], f"exit codes {codes}, expected one 0 and one 1", "\n".join(outputs)
    )
    refused = outputs[codes.index(1)] if 1 in codes else ""
    s.expect(
        "in use by another run" in refused or "holds run" in refused,
        "the refused run does not say why",
        refused,
    )
    iterations = [r["iteration"] for r in s.history()]  # read_history fails on a broken line
    s.expect(
        iterations == sorted(iterations) and iterations[-1] == 3000,
        f"history.jsonl is not one run's: iterations {iterations[:5]}...",
    )
    s.expect(s.run_json()["status"] == "completed", "run.json is not the finished run's")


def prune_own(s):
    code, text = s.run(FIRST + ["training.checkpoint_every=100"])
    s.expect(code == 0, "the first run failed", text)
    checkpoints = os.path.join(s.folder, "checkpoints")
    foreign = os.path.join(checkpoints, "00000050")
    shutil.copytree(os.path.join(checkpoints, "00000400"), foreign)
    manifest_path = os.path.join(foreign, "manifest.json")
    manifest = json.load(open(manifest_path))
    manifest["run"]["run_id"] = "another-run"
    manifest["iteration"] = 50
    json.dump(manifest, open(manifest_path, "w"))
    code, text = s.run(
        ["training.stages.0.iterations=700", "training.checkpoint_every=100"], "--restart", "latest"
    )
    s.expect(code == 0, "continuing the run failed", text)
    kept = sorted(os.listdir(checkpoints))
    s.expect(
        kept == ["00000050", "00000600", "00000700"],
        f"checkpoints after the continued run: {kept}, expected another run's 00000050 "
        "and this run's two newest",
    )


def older(s):
    sets = FIRST + ["training.checkpoint_every=100"]
    code, text = s.run(sets)
    s.expect(code == 0, "the first run failed", text)
    checkpoints = os.path.join(s.folder, "checkpoints")
    # With a trailing slash, as shell completion writes it.
    code, text = s.run(sets, "--restart", os.path.join(checkpoints, "00000300") + "/")
    s.expect(
        code == 0 and "moved the 1 later checkpoint(s) (00000400)" in text,
        "continuing from iteration 300 did not set aside the later checkpoint",
        text,
    )
    superseded = os.path.join(s.folder, "superseded")
    moved = [os.listdir(os.path.join(superseded, d)) for d in os.listdir(superseded)]
    s.expect(moved == [["00000400"]], f"superseded/ holds {moved}, expected one 00000400")
    iterations = [r["iteration"] for r in s.history() if not r.get("final")]
    s.expect(
        iterations == sorted(set(iterations)), f"history.jsonl repeats iterations: {iterations}"
    )

    code, text = s.run(
        ["training.stages.0.iterations=100", "training.stages.0.lr=1e-3"], "--restart", "latest"
    )
    s.expect(
        code != 0 and "training.stages.0.iterations: 100 is below the 400 steps" in text,
        "a stage shortened below the steps already taken was not refused",
        text,
    )

    other = s.folder + "_other"
    shutil.rmtree(other, ignore_errors=True)
    code, text = s.run(SECOND + [f"output.directory={other}"])
    s.expect(code == 0, "the run into the other folder failed", text)
    code, text = s.run(
        sets + [f"output.directory={other}"], "--restart", os.path.join(checkpoints, "00000400")
    )
    s.expect(
        code != 0 and "not the checkpoint's run" in text,
        "--restart FOLDER into a folder with another run's results was not refused",
        text,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument(
        "scenario", choices=["mixing", "auto_fresh", "concurrent", "prune_own", "older"]
    )
    args = parser.parse_args()
    s = Scenario(
        args.tessera,
        os.path.abspath(args.case),
        os.path.join(os.path.abspath(args.work), args.scenario),
    )
    started = time.time()
    globals()[args.scenario](s)
    for failure in s.failures:
        print("FAIL:", failure)
    if not s.failures:
        print(f"{args.scenario}: as documented ({time.time() - started:.1f} s)")
    return 1 if s.failures else 0


if __name__ == "__main__":
    sys.exit(main())
