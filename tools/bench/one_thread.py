"""Shared by the bench scripts: the repository root, the environment that runs every rank with
one thread (MPI ranks share the cores; several threads per rank would oversubscribe them), and
the command line of a short Adam-only run."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(
    os.environ,
    OMP_NUM_THREADS="1",
    OPENBLAS_NUM_THREADS="1",
    MKL_NUM_THREADS="1",
    TESSERA_THREADS="1",
)


def adam_command(tessera, ranks, case, iterations, out):
    """`mpiexec.mpich -n ranks tessera run case` with Adam only for `iterations` iterations, one
    log record at the end, output into `out` on a small grid."""
    return [
        "mpiexec.mpich",
        "-n",
        str(ranks),
        tessera,
        "run",
        case,
        "--overwrite",
        "--set",
        f'training.stages=[{{"optimizer":"adam","iterations":{iterations}}}]',
        "--set",
        f"training.log_every={iterations}",
        "--set",
        f"output.directory={out}",
        "--set",
        'output.grid={"x":21,"y":21}',
    ]
