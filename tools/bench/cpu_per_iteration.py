#!/usr/bin/python3
"""CPU milliseconds per Adam iteration of one or more tessera binaries on one case, side by side
in one invocation: how two versions of the code compare on the same machine.

    /usr/bin/python3 tools/bench/cpu_per_iteration.py now=build/tessera then=/tmp/old/tessera
    /usr/bin/python3 tools/bench/cpu_per_iteration.py --case cases/poisson2d.json --rounds 6 \\
        now=build/tessera

Method: each binary runs the case twice per round with Adam only (`--set training.stages=...`),
--short and --long iterations, one thread per rank. The CPU time (user + sys of the job, from
the operating system) of the short run is subtracted from that of the long one and divided by
the difference in iterations, so start-up, sampling, the first iterations and the final output
cancel. Binaries alternate round by round. Each reports every round, its median and its minimum,
the ratio of the first binary's median to its own (how many times faster than the first), and
the median over rounds of the same ratio taken within each round ("x pairs"), which a slow spell
of the machine that falls on some rounds moves less.
CPU time, not wall time: on a shared virtual machine wall times of the same run moved by up to
30 % minutes apart, CPU times less, and other work only ever adds to either.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

from one_thread import ENV, ROOT, adam_command


def parse_arguments():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("binaries", nargs="+", metavar="NAME=BINARY", help="tessera binaries")
    parser.add_argument("--case", default=os.path.join(ROOT, "cases", "poisson2d_xpinn.json"))
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--short", type=int, default=200, help="iterations of the short run")
    parser.add_argument("--long", type=int, default=1200, help="iterations of the long run")
    args = parser.parse_args()
    if args.long <= args.short or args.short < 1:
        parser.error("--long must exceed --short, and --short be at least 1")
    named = []
    for item in args.binaries:
        name, _, binary = item.partition("=")
        if not name or not binary:
            parser.error(f"'{item}': give each binary as NAME=PATH")
        if not os.access(binary, os.X_OK):
            parser.error(f"'{binary}' is not an executable file")
        if name in (n for n, _ in named):
            parser.error(f"'{name}' names two binaries: give each its own name")
        named.append((name, os.path.abspath(binary)))
    args.binaries = named
    return args


def cpu_seconds(binary, args, iterations, out):
    """User + sys seconds of one job of `iterations` Adam steps."""
    command = adam_command(binary, args.ranks, args.case, iterations, out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{binary} failed on {args.case}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main():
    args = parse_arguments()
    results = {name: [] for name, _ in args.binaries}
    scratch = tempfile.mkdtemp(prefix="tessera_cpu_")
    try:
        for round_number in range(args.rounds):
            for name, binary in args.binaries:
                out = os.path.join(scratch, name)
                spent = cpu_seconds(binary, args, args.long, out) - cpu_seconds(
                    binary, args, args.short, out
                )
                ms = 1e3 * spent / (args.long - args.short)
                results[name].append(ms)
                print(f"round {round_number + 1}: {name} {ms:.2f} ms", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"\n{args.case}, {args.ranks} rank(s), CPU ms per Adam iteration "
        f"({args.long} - {args.short} iterations)"
    )
    first_times = results[args.binaries[0][0]]
    first = statistics.median(first_times)
    print(f"{'binary':12} {'median':>8} {'min':>8} {'x first':>8} {'x pairs':>8}  rounds")
    for name, _ in args.binaries:
        times = results[name]
        median = statistics.median(times)
        # The median over rounds of the first binary's time over this one's in the same round:
        # the two ran minutes apart at most, so a slow spell of the machine falls on both.
        # Too few iterations for the clock can give a difference of 0 or below: no ratio then.
        ratios = [a / b for a, b in zip(first_times, times) if a > 0 and b > 0]
        pairs = f"{statistics.median(ratios):8.2f}" if ratios else f"{'-':>8}"
        against = f"{first / median:8.2f}" if first > 0 and median > 0 else f"{'-':>8}"
        rounds = " ".join(f"{t:.2f}" for t in times)
        print(f"{name:12} {median:8.2f} {min(times):8.2f} {against} {pairs}  {rounds}")


if __name__ == "__main__":
    main()
