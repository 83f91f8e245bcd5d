"""Running a case with --set overrides and reading the collocation samples its checkpoints
keep (docs/output-format.md), for the case checks. Needs torch to read the archives."""
import glob
import os
import shutil
import subprocess
import sys

import torch

ENV = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")


def run_fresh(tessera, case, out, sets, timeout):
    """Runs CASE into an emptied OUT with every --set in SETS; exits with FAIL on an error."""
    shutil.rmtree(out, ignore_errors=True)
    line = [tessera, "run", case, "--set", f"output.directory={out}"]
    for s in sets:
        line += ["--set", s]
    result = subprocess.run(line, env=ENV, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-2000:] + result.stderr[-2000:])
        sys.exit(f"FAIL: exit {result.returncode}: {' '.join(line)}")


def checkpoint_folders(out):
    """(iteration, folder) of every checkpoint kept in OUT, in order."""
    folders = sorted(glob.glob(os.path.join(out, "checkpoints", "*")))
    return [(int(os.path.basename(f)), f) for f in folders]


def adapted_shapes(folder, subdomain):
    """{name: shape} of the adapted samples a subdomain's checkpoint archive holds."""
    state = torch.jit.load(os.path.join(folder, f"subdomain_{subdomain}.pt")).state_dict()
    return {k: tuple(v.shape) for k, v in state.items() if k.endswith(".adapted")}
