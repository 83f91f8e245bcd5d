#!/usr/bin/python3
"""Milliseconds per training iteration, side by side, in one invocation: Tessera with the
forward (Taylor) derivative engine, Tessera with the reverse-mode (autograd) engine, and the
seed's PyTorch script (seed_poisson_ddp.py), all on the seed configuration: 2-D Poisson,
[2, 50, 50, 50, 1] tanh, Adam lr 1e-3, collocation points resampled every 100 iterations.

    tools/bench/iteration_speed.py                               # 4096 points, float32, one thread
    tools/bench/iteration_speed.py --points 1000000 --device cuda --iterations 300
    tools/bench/iteration_speed.py --repeats 3 --skip-seed       # best of 3, Tessera only

Tessera runs `tessera run cases/poisson2d.json` with --set overrides (Adam only, N iterations,
a small output grid) and reads ms/iteration from history.jsonl: the wall-clock time between the
first and the last logged iteration over the iterations between them, so start-up, the first
iterations and the final output are left out. Runs alternate between the variants and each
variant reports its best and median over --repeats, since other work on a shared machine only
ever adds time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_arguments():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tessera", default=os.path.join(ROOT, "build", "tessera"), help="the tessera binary"
    )
    parser.add_argument("--case", default=os.path.join(ROOT, "cases", "poisson2d.json"))
    parser.add_argument("--points", type=int, default=4096, help="collocation points")
    parser.add_argument("--boundary-points", type=int, default=512)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--log-every", type=int, default=100, help="timing starts at the first log")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--python", default="/usr/bin/python3", help="interpreter with torch for the seed script"
    )
    parser.add_argument("--skip-seed", action="store_true")
    args = parser.parse_args()
    if args.iterations <= args.log_every or args.iterations % args.log_every:
        parser.error("--iterations must be a multiple of --log-every, larger than it")
    return args


def thread_environment(threads):
    env = dict(os.environ)
    for key in ("TESSERA_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = str(threads)
    return env


def run_tessera(args, engine, folder):
    output = os.path.join(folder, engine)
    stages = [{"optimizer": "adam", "iterations": args.iterations, "lr": 1e-3}]
    overrides = {
        "dtype": args.dtype,
        "device": args.device,
        "training.derivatives": engine,
        "training.collocation.points": args.points,
        "training.collocation.resample_every": 100,
        "training.stages": json.dumps(stages),
        "training.log_every": args.log_every,
        "conditions.0.points": args.boundary_points,
        "output.directory": output,
        "output.grid": json.dumps({"x": 11, "y": 11}),
    }
    command = [args.tessera, "run", args.case, "--overwrite"]
    for key, value in overrides.items():
        command += ["--set", f"{key}={value}"]
    done = subprocess.run(
        command, env=thread_environment(args.threads), capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"tessera ({engine}) failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    with open(os.path.join(output, "history.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    first, last = records[0], records[-1]
    ms = 1000.0 * (last["wall_s"] - first["wall_s"]) / (last["iteration"] - first["iteration"])
    return ms, last.get("rel_l2", {}).get("u")


def run_seed(args):
    command = [
        args.python,
        os.path.join(ROOT, "tools", "bench", "seed_poisson_ddp.py"),
        "--iterations",
        str(args.iterations),
        "--warmup",
        str(args.log_every),
        "--points",
        str(args.points),
        "--boundary-points",
        str(args.boundary_points),
        "--dtype",
        args.dtype,
        "--device",
        args.device,
        "--threads",
        str(args.threads),
    ]
    done = subprocess.run(
        command, env=thread_environment(args.threads), capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"seed script failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["ms_per_iteration"], result["rel_l2"]


def main():
    args = parse_arguments()
    variants = {
        "tessera forward (taylor)": lambda folder: run_tessera(args, "taylor", folder),
        "tessera reverse (autograd)": lambda folder: run_tessera(args, "autograd", folder),
    }
    if not args.skip_seed:
        variants["seed PyTorch script (DDP, 1 rank)"] = lambda folder: run_seed(args)
    times = {name: [] for name in variants}
    errors = {}
    with tempfile.TemporaryDirectory(prefix="tessera_bench_") as folder:
        for repeat in range(args.repeats):
            for name, run in variants.items():
                ms, error = run(folder)
                times[name].append(ms)
                errors[name] = error
                print(
                    f"  run {repeat + 1}/{args.repeats} {name}: {ms:.2f} ms/iteration", flush=True
                )

    print(
        f"\n{args.points} points, {args.dtype}, {args.device}, {args.threads} thread(s), "
        f"{args.iterations} Adam iterations, timed over the last {args.iterations - args.log_every}"
    )
    print(f"{'variant':36s} {'best ms/it':>11s} {'median':>9s} {'rel_l2 at end':>14s}")
    for name in variants:
        error = errors[name]
        print(
            f"{name:36s} {min(times[name]):11.2f} {statistics.median(times[name]):9.2f} "
            f"{error if error is not None else float('nan'):14.3g}"
        )
    forward = min(times["tessera forward (taylor)"])
    print(f"\nreverse / forward: {min(times['tessera reverse (autograd)']) / forward:.2f}x")
    if not args.skip_seed:
        print(
            f"seed script / forward: {min(times['seed PyTorch script (DDP, 1 rank)']) / forward:.2f}x"
        )


if __name__ == "__main__":
    main()
