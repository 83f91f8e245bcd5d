#!/usr/bin/env python3
"""Installs the build into a temporary prefix and uses it as a cluster user would: the installed
binary trains an installed case from an unrelated directory, `tessera check` resolves a case
whose mesh is found relative to the case file, and a small C++ program builds against the
installed package with find_package(Tessera) and loads a case through the library."""
import argparse
import os
import shutil
import subprocess
import sys


def run(command, **kwargs):
    print("+", " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(
            f"FAILED (exit {result.returncode}): {' '.join(command)}\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, help="the configured and built tree")
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True, help="scratch folder (emptied first)")
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--c", required=True)
    parser.add_argument("--generator", required=True)
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    prefix = os.path.join(args.work, "prefix")
    elsewhere = os.path.join(args.work, "elsewhere")
    os.makedirs(elsewhere)
    run(["cmake", "--install", args.build, "--prefix", prefix])

    tessera = os.path.join(prefix, "bin", "tessera")
    share = os.path.join(prefix, "share", "tessera")
    for needed in [
        tessera,
        os.path.join(share, "cases", "poisson2d.json"),
        os.path.join(share, "cases", "data", "burgers_reference.h5"),
        os.path.join(share, "meshes", "lshape.off"),
        os.path.join(share, "tools", "slurm", "tessera.sbatch"),
        os.path.join(prefix, "include", "tessera", "app", "setup.hpp"),
        os.path.join(prefix, "lib", "cmake", "Tessera", "TesseraConfig.cmake"),
    ]:
        if not os.path.exists(needed):
            sys.exit(f"FAILED: the install lacks {needed}")

    # The installed binary, from a directory that is neither the source nor the build tree.
    env = dict(os.environ, TESSERA_THREADS="1", OMP_NUM_THREADS="1")
    run(
        [
            tessera,
            "run",
            os.path.join(share, "cases", "poisson2d.json"),
            "--set",
            "training.stages.0.iterations=20",
            "--set",
            "training.stages.1.iterations=5",
            "--set",
            "training.log_every=10",
            "--set",
            "output.directory=out",
            "--set",
            'output.grid={"x":11,"y":11}',
        ],
        cwd=elsewhere,
        env=env,
    )
    for produced in ["poisson2d.xmf", "poisson2d.h5", "run.json", "history.jsonl"]:
        if not os.path.exists(os.path.join(elsewhere, "out", produced)):
            sys.exit(f"FAILED: the installed run wrote no out/{produced}")
    checked = run(
        [tessera, "check", os.path.join(share, "cases", "lshape_poisson.json")],
        cwd=elsewhere,
        env=env,
    )
    if "lshape" not in checked:
        sys.exit(f"FAILED: tessera check of the installed mesh case printed:\n{checked}")

    # A consumer program through find_package(Tessera).
    consumer_build = os.path.join(args.work, "consumer")
    run(
        [
            "cmake",
            "-S",
            os.path.join(args.source, "tests", "install", "consumer"),
            "-B",
            consumer_build,
            "-G",
            args.generator,
            f"-DCMAKE_PREFIX_PATH={prefix}",
            f"-DCMAKE_CXX_COMPILER={args.cxx}",
            f"-DCMAKE_C_COMPILER={args.c}",
            "-DCMAKE_BUILD_TYPE=Release",
        ]
    )
    run(["cmake", "--build", consumer_build])
    said = run(
        [
            os.path.join(consumer_build, "tessera_consumer"),
            os.path.join(share, "cases", "poisson2d_xpinn.json"),
        ],
        cwd=elsewhere,
        env=env,
    )
    if "case poisson2d_xpinn:" not in said or "subdomains" not in said:
        sys.exit(f"FAILED: the consumer printed:\n{said}")
    print(said.strip())
    print("install: prefix run, installed mesh case and find_package(Tessera) consumer all work")


if __name__ == "__main__":
    main()
