#!/usr/bin/python3
"""Data-parallel training on the seed problem: Tessera (one subdomain, ranks_per_subdomain = R)
against the seed's own approach (tools/bench/seed_poisson_ddp.py: PyTorch-Python
DistributedDataParallel, gloo) on 1 and 2 ranks, from one invocation:

    /usr/bin/python3 tools/bench/data_parallel.py [--iterations 1000] [--ranks 1 2]

Both train the same thing for the same number of Adam iterations: 2-D Poisson, [2, 50, 50, 50, 1]
tanh, lr 1e-3, float32, 4,096 collocation and 512 boundary points per rank (the seed draws them
per rank; Tessera draws 4,096 R and 512 R points and gives each replica its slice), resampled
every 100 iterations, boundary weight 1, one thread per rank. Reported: ms per iteration and
the relative L2 error on the 101 x 101 grid after the last iteration, and the ratios.
Tessera's time per iteration is measured between its first and last log lines (so start-up is
left out, like the seed script's warm-up), the seed's after 20 warm-up iterations.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from one_thread import ENV, ROOT


def tessera(binary, ranks, iterations, derivatives, out):
    log_every = max(1, iterations // 10)
    command = [
        "mpiexec.mpich",
        "-n",
        str(ranks),
        binary,
        "run",
        os.path.join(ROOT, "cases", "poisson2d.json"),
        "--overwrite",
        "--set",
        f'training.stages=[{{"optimizer":"adam","iterations":{iterations},"lr":0.001}}]',
        "--set",
        f"training.collocation.points={4096 * ranks}",
        "--set",
        "training.collocation.resample_every=100",
        "--set",
        f"conditions.0.points={512 * ranks}",
        "--set",
        "conditions.0.weight=1",
        "--set",
        "device=cpu",
        "--set",
        f"training.derivatives={derivatives}",
        "--set",
        f"training.log_every={log_every}",
        "--set",
        f"decomposition.ranks_per_subdomain={ranks}",
        "--set",
        f"output.directory={out}",
    ]
    subprocess.run(command, env=ENV, check=True, capture_output=True, text=True)
    with open(os.path.join(out, "history.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    steps = [r for r in records if not r.get("final")]
    first, last = steps[0], steps[-1]
    ms = 1000.0 * (last["wall_s"] - first["wall_s"]) / (last["iteration"] - first["iteration"])
    return {"ms_per_iteration": ms, "rel_l2": records[-1]["rel_l2"]["u"]}


def seed(ranks, iterations):
    command = [
        "/usr/bin/python3",
        os.path.join(ROOT, "tools", "bench", "seed_poisson_ddp.py"),
        "--iterations",
        str(iterations),
        "--world",
        str(ranks),
        "--threads",
        "1",
        "--points",
        "4096",
        "--boundary-points",
        "512",
    ]
    text = subprocess.run(command, env=ENV, check=True, capture_output=True, text=True).stdout
    return json.loads(text.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument(
        "--derivatives", default="auto", help="Tessera's engine: auto, taylor or autograd"
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_dp_") as folder:
        for ranks in args.ranks:
            t = tessera(
                args.tessera,
                ranks,
                args.iterations,
                args.derivatives,
                os.path.join(folder, f"r{ranks}"),
            )
            s = seed(ranks, args.iterations)
            rows.append((ranks, t, s))
            print(
                f"{ranks} rank(s): Tessera {t['ms_per_iteration']:.1f} ms/it, rel_l2 {t['rel_l2']:.3e} | "
                f"seed DDP {s['ms_per_iteration']:.1f} ms/it, rel_l2 {s['rel_l2']:.3e} | "
                f"seed/Tessera time {s['ms_per_iteration'] / t['ms_per_iteration']:.2f}x",
                flush=True,
            )
    base_t, base_s = rows[0][1], rows[0][2]
    print(f"\nafter {args.iterations} Adam iterations (derivatives: {args.derivatives})")
    print(
        "ranks  tessera_ms  seed_ms  seed/tessera  tessera_speedup  seed_speedup  tessera_rel_l2  seed_rel_l2"
    )
    for ranks, t, s in rows:
        print(
            f"{ranks:5d}  {t['ms_per_iteration']:10.1f}  {s['ms_per_iteration']:7.1f}  "
            f"{s['ms_per_iteration'] / t['ms_per_iteration']:12.2f}  "
            f"{base_t['ms_per_iteration'] / t['ms_per_iteration']:15.2f}  "
            f"{base_s['ms_per_iteration'] / s['ms_per_iteration']:12.2f}  "
            f"{t['rel_l2']:14.3e}  {s['rel_l2']:11.3e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
