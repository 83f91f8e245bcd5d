"""Shared by the bench scripts: the repository root, and the environment that runs every rank
with one thread (MPI ranks share the cores; several threads per rank would oversubscribe them)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(
    os.environ,
    OMP_NUM_THREADS="1",
    OPENBLAS_NUM_THREADS="1",
    MKL_NUM_THREADS="1",
    TESSERA_THREADS="1",
)
