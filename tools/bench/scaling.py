#!/usr/bin/python3
"""Strong and weak scaling of Tessera's domain decomposition on the seed problem, from one
invocation:

    /usr/bin/python3 tools/bench/scaling.py [--iterations 300] [--ranks 1 2 4] [--skip-weak]

strong  cases/poisson2d_xpinn.json as shipped: 4 subdomains (2 x 2), 1024 collocation points each,
        the same total work on 1, 2 and 4 ranks; efficiency = t(1) / (R t(R)).
weak    the same case split along x only into R = 1, 2, 4 subdomains on R ranks
        (decomposition.split = {"x": R, "y": 1}), 1024 collocation and 256 boundary points per
        subdomain, so the work per rank is fixed (the interior subdomains have two interfaces,
        the end ones one); efficiency = t(1) / t(R).

Each run trains a fixed number of Adam iterations (no L-BFGS) with TESSERA_THREADS=1 and reads
the per-phase table that `tessera run` prints at the end (mean over ranks, seconds). ms/iteration
is the sum of the phase means over the iterations; "exchange+wait" is the neighbour exchange and
the wait for it, "sync" the global reductions. The runs and the table parsing are
tools/bench/decomposition_scaling.py's run(), imported; the weak runs pass their --set overrides
to it. More ranks than cores oversubscribe the machine, which the output says.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decomposition_scaling  # noqa: E402  (run(): one job, its phase table and final record)

ROOT = decomposition_scaling.ROOT


def measure(tessera, ranks, iterations, out, overrides=None):
    """Runs decomposition_scaling.run (poisson2d_xpinn, Adam only) with optional extra overrides."""
    phases, final = decomposition_scaling.run(tessera, ranks, iterations, out, overrides)
    total = sum(p["mean"] for p in phases.values())
    return {
        "ranks": ranks,
        "ms_per_iteration": 1000 * total / iterations,
        "exchange_wait_share": (phases["exchange"]["mean"] + phases["wait"]["mean"]) / total,
        "sync_share": phases["sync"]["mean"] / total,
        "rel_l2": final["rel_l2"]["u"],
        "phases": phases,
    }


def report(title, rows, strong, cores):
    print(f"\n{title}")
    print(
        f"{'ranks':>5} {'subdomains':>10} {'ms/iter':>9} {'speed-up':>9} {'efficiency':>10} "
        f"{'exch+wait':>10} {'sync':>7} {'rel_l2':>10}"
    )
    base = rows[0]
    for row in rows:
        speedup = base["ms_per_iteration"] / row["ms_per_iteration"]
        efficiency = speedup * base["ranks"] / row["ranks"] if strong else speedup
        row["efficiency"] = efficiency
        row["speedup"] = speedup
        note = (
            f"  (oversubscribed: {row['ranks']} ranks on {cores} cores)"
            if row["ranks"] > cores
            else ""
        )
        print(
            f"{row['ranks']:>5} {row['subdomains']:>10} {row['ms_per_iteration']:>9.1f} "
            f"{(f'{speedup:.2f}' if strong else '-'):>9s} {100 * efficiency:>9.1f}% "
            f"{100 * row['exchange_wait_share']:>9.1f}% {100 * row['sync_share']:>6.1f}% "
            f"{row['rel_l2']:>10.3e}{note}"
        )


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=300, help="Adam iterations per run")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument("--skip-strong", action="store_true")
    parser.add_argument("--skip-weak", action="store_true")
    args = parser.parse_args()
    cores = os.cpu_count()
    print(
        f"poisson2d_xpinn, {args.iterations} Adam iterations per run, TESSERA_THREADS=1, {cores} cores"
        + (
            f"; runs with more than {cores} ranks oversubscribe the cores, so their times are not "
            f"scaling but time-sharing"
            if max(args.ranks) > cores
            else ""
        ),
        flush=True,
    )
    strong, weak = [], []
    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as scratch:
        if not args.skip_strong:
            for ranks in args.ranks:
                row = measure(
                    args.tessera, ranks, args.iterations, os.path.join(scratch, f"strong{ranks}")
                )
                row["subdomains"] = 4
                strong.append(row)
                print(
                    f"  strong, {ranks} rank(s): {row['ms_per_iteration']:.1f} ms/iteration",
                    flush=True,
                )
        if not args.skip_weak:
            for ranks in args.ranks:
                split = json.dumps({"x": ranks, "y": 1}, separators=(",", ":"))
                row = measure(
                    args.tessera,
                    ranks,
                    args.iterations,
                    os.path.join(scratch, f"weak{ranks}"),
                    {"decomposition.split": split},
                )
                row["subdomains"] = ranks
                weak.append(row)
                print(
                    f"  weak, {ranks} rank(s): {row['ms_per_iteration']:.1f} ms/iteration",
                    flush=True,
                )
    if strong:
        report(
            "strong scaling: 4 subdomains (2 x 2), fixed total work; efficiency = t1 / (R tR)",
            strong,
            strong=True,
            cores=cores,
        )
    if weak:
        report(
            "weak scaling: R subdomains along x on R ranks, fixed work per rank; efficiency = t1 / tR",
            weak,
            strong=False,
            cores=cores,
        )
    for row in strong + weak:
        row.pop("phases")
    print(
        json.dumps({"iterations": args.iterations, "cores": cores, "strong": strong, "weak": weak})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
