#!/usr/bin/python3
"""Wall time until the relative L2 error on the seed problem (-lap u = 2 pi^2 sin(pi x) sin(pi y)
on the unit square, u = 0 on the boundary; 101 x 101 grid) is <= 1e-2 and <= 1e-3, on 2 ranks,
for three runs from one invocation:

  tessera         `mpiexec.mpich -n 2 build/tessera run cases/poisson2d.json` as shipped (Adam, then
                  L-BFGS), on 2 data-parallel replicas (decomposition.ranks_per_subdomain=2, so
                  the case's points are split between them), logging every 50 iterations;
                  the times are history.jsonl's wall_s (from the start of training; Tessera's own
                  error evaluation at each log line is inside it).
  seed published  tools/bench/seed_poisson_ddp.py as published (Adam lr 1e-3, boundary weight 1,
                  no normalisation, PyTorch default init, 4096 + 512 points per rank), 2 ranks
                  (gloo, one thread each), Adam until --time-limit.
  seed + settings the same script with --tessera-settings (inputs to [-1, 1], Xavier normal,
                  boundary weight 100, lr 0.9x every 1000, the shipped case's Adam and L-BFGS
                  iteration counts (read from it), L-BFGS with strong Wolfe)
                  and the case's point counts (collocation in the Adam and in the L-BFGS stage,
                  boundary; in all, split over the ranks).

The seed runs evaluate the error every 50 iterations on rank 0 outside their timed clock, which
starts at iteration 0 after start-up, like Tessera's. seed+settings / Tessera is the gain from
speed alone (same settings); published / Tessera is speed and settings together.

    /usr/bin/python3 tools/bench/time_to_accuracy.py                    # 420 s limit per run
    /usr/bin/python3 tools/bench/time_to_accuracy.py --time-limit 200
    /usr/bin/python3 tools/bench/time_to_accuracy.py --quick            # smoke test
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from one_thread import ENV, ROOT

TARGETS = ("1e-2", "1e-3")


def first_below(curve, target):
    """First wall time of a [(iteration, wall_s, rel_l2)] curve with rel_l2 <= target, else None."""
    return next((wall for _, wall, error in curve if error is not None and error <= target), None)


def run_tessera(args, out):
    command = [
        "mpiexec.mpich",
        "-n",
        str(args.ranks),
        args.tessera,
        "run",
        os.path.join(ROOT, "cases", "poisson2d.json"),
        "--overwrite",
        "--set",
        f"decomposition.ranks_per_subdomain={args.ranks}",
        "--set",
        f"training.log_every={args.eval_every}",
        "--set",
        "device=cpu",
        "--set",
        f"output.directory={out}",
    ]
    if args.quick:
        stages = [
            {
                "optimizer": "adam",
                "iterations": args.adam_iterations,
                "lr": 1e-3,
                "decay": {"rate": 0.9, "every": 1000},
            },
            {
                "optimizer": "lbfgs",
                "iterations": args.lbfgs_iterations,
                "points": args.shipped["lbfgs_points"],
            },
        ]
        command += ["--set", "training.stages=" + json.dumps(stages)]
    if args.time_limit is not None:
        command += ["--set", f"training.time_limit={args.time_limit}"]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tessera failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    with open(os.path.join(out, "history.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    curve = [
        (r["iteration"], r["wall_s"], r.get("rel_l2", {}).get("u"))
        for r in records
        if not r.get("final")
    ]
    final = records[-1]
    return {
        "curve": curve,
        "rel_l2": final["rel_l2"]["u"],
        "wall_s": final["wall_s"],
        "iterations": final["iteration"],
        "note": f"{final['iteration']} iterations (Adam + L-BFGS)",
    }


def shipped_settings():
    """What the seed script with Tessera's settings takes from cases/poisson2d.json, so that it
    follows the shipped case: Adam and L-BFGS iterations, and the point counts in all (collocation
    during Adam, collocation during L-BFGS, boundary)."""
    with open(os.path.join(ROOT, "cases", "poisson2d.json")) as f:
        text = "\n".join(line for line in f if not line.lstrip().startswith("//"))
    case = json.loads(text)
    stages = {stage["optimizer"]: stage for stage in case["training"]["stages"]}
    points = case["training"]["collocation"]["points"]
    return {
        "adam_iterations": stages["adam"]["iterations"],
        "lbfgs_iterations": stages["lbfgs"]["iterations"],
        "points": points,
        "lbfgs_points": stages["lbfgs"].get("points", points),
        "boundary_points": case["conditions"][0]["points"],
    }


def run_seed(args, settings):
    command = [
        args.python,
        os.path.join(ROOT, "tools", "bench", "seed_poisson_ddp.py"),
        "--world",
        str(args.ranks),
        "--threads",
        "1",
        "--eval-every",
        str(args.eval_every),
        "--stop-at",
        "1e-3",
    ]
    if settings:
        # Tessera's point counts too (the case's, in all, split over the ranks as Tessera's
        # replicas split them), so the ratio is speed alone.
        shipped = args.shipped
        command += [
            "--tessera-settings",
            "--iterations",
            str(args.adam_iterations),
            "--lbfgs-iterations",
            str(args.lbfgs_iterations),
            "--points",
            str(shipped["points"] // args.ranks),
            "--lbfgs-points",
            str(shipped["lbfgs_points"] // args.ranks),
            "--boundary-points",
            str(shipped["boundary_points"] // args.ranks),
        ]
        if args.time_limit is not None:
            command += ["--time-limit", str(args.time_limit)]
    else:
        command += [
            "--iterations",
            str(args.published_iterations),
            "--time-limit",
            str(args.time_limit if args.time_limit is not None else args.published_limit),
        ]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"seed script failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "curve": [tuple(point) for point in result["curve"]],
        "rel_l2": result["rel_l2"],
        "wall_s": result["wall_s"],
        "iterations": result["adam_iterations"] + result["lbfgs_iterations"],
        "note": f"{result['adam_iterations']} Adam + {result['lbfgs_iterations']} L-BFGS"
        + (", stopped at 1e-3 or the limit" if result["stopped_early"] else ""),
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds per run for all three (default: the published seed stops at "
        "--published-limit, the other two run their full schedule)",
    )
    parser.add_argument("--published-limit", type=float, default=420.0)
    parser.add_argument(
        "--published-iterations", type=int, default=1000000, help="Adam cap of the published run"
    )
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument(
        "--eval-every", type=int, default=50, help="iterations between error evaluations"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: 100 Adam + 20 L-BFGS, published seed 5 s"
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["tessera", "published", "settings"]
    )
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()
    args.shipped = shipped_settings()
    args.adam_iterations, args.lbfgs_iterations = (
        (100, 20)
        if args.quick
        else (args.shipped["adam_iterations"], args.shipped["lbfgs_iterations"])
    )
    if args.quick:
        args.published_limit = min(args.published_limit, 5.0)

    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench_tta_") as folder:
        plan = [
            (
                "tessera",
                "Tessera poisson2d.json",
                lambda: run_tessera(args, os.path.join(folder, "tessera")),
            ),
            ("published", "seed script, published", lambda: run_seed(args, settings=False)),
            ("settings", "seed script + Tessera settings", lambda: run_seed(args, settings=True)),
        ]
        for key, label, run in plan:
            if key in args.skip:
                continue
            result = run()
            result["label"] = label
            for target in TARGETS:
                result[target] = first_below(result["curve"], float(target))
            runs[key] = result
            print(
                f"  {label}: {result['note']}, {result['wall_s']:.1f} s, final rel_l2 {result['rel_l2']:.3e}",
                flush=True,
            )

    def show(value):
        return f"{value:.1f}" if value is not None else "never"

    print(
        f"\nseed problem, {args.ranks} ranks, one thread each, float32, CPU, {os.cpu_count()} cores"
        + (", QUICK smoke test" if args.quick else "")
        + (
            f", time limit {args.time_limit:g} s"
            if args.time_limit is not None
            else f", published seed limited to {args.published_limit:g} s"
        )
    )
    print(
        f"{'run':32s} {'s to 1e-2':>10s} {'s to 1e-3':>10s} {'wall s':>8s} {'iterations':>10s} {'final rel_l2':>13s}"
    )
    for result in runs.values():
        print(
            f"{result['label']:32s} {show(result['1e-2']):>10s} {show(result['1e-3']):>10s} "
            f"{result['wall_s']:8.1f} {result['iterations']:10d} {result['rel_l2']:13.3e}"
        )
    ratios = {}
    if "tessera" in runs:
        base = runs["tessera"]
        for key in ("settings", "published"):
            if key not in runs:
                continue
            for target in TARGETS:
                other, mine = runs[key][target], base[target]
                name = f"{key}/tessera to {target}"
                if other is not None and mine:
                    ratios[name] = other / mine
                elif mine and other is None:
                    ratios[name] = f"> {runs[key]['wall_s'] / mine:.1f} (not reached)"
                else:
                    ratios[name] = None  # Tessera did not reach it (or neither did)
        print()
        for name, value in ratios.items():
            print(
                f"{name:28s} {value:.2f}x"
                if isinstance(value, float)
                else f"{name:28s} {value if value is not None else 'n/a (Tessera did not reach it)'}"
            )
    summary = {
        key: {
            "label": r["label"],
            "wall_to_1e-2": r["1e-2"],
            "wall_to_1e-3": r["1e-3"],
            "wall_s": r["wall_s"],
            "iterations": r["iterations"],
            "rel_l2": r["rel_l2"],
        }
        for key, r in runs.items()
    }
    print(
        json.dumps(
            {
                "ranks": args.ranks,
                "quick": args.quick,
                "time_limit": args.time_limit,
                "published_limit": args.published_limit,
                "runs": summary,
                "ratios": ratios,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
