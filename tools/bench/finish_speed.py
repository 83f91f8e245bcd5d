#!/usr/bin/python3
"""Seconds per iteration of the quasi-Newton finish, for one or more tessera binaries and finish
optimizers on one case, side by side in one invocation.

    /usr/bin/python3 tools/bench/finish_speed.py --case cases/validation/burgers.json \\
        before:ssbroyden=/tmp/old/tessera now:ssbroyden=build/tessera now:lbfgs=build/tessera

OPTIMIZER may carry keys of the finish stage after "+", e.g. "lbfgs+history=50+scaling=none".
Each entry NAME:OPTIMIZER=BINARY trains the case with its own stages, cut to --adam Adam
iterations and --iterations finish iterations with OPTIMIZER (the case's second stage keeps its
other keys, such as its point count), one thread per rank, with a log record at the end of each
stage. The finish's time per iteration is the difference of the two records' wall times divided
by its iterations, so start-up, the Adam stage and the final output cancel. The entries run one
after the other (round robin over --rounds rounds); the table gives each entry's median seconds
per finish iteration, the first entry's median over its own (how many times faster), and the
relative L2 errors at the end of the last round.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from one_thread import ENV, ROOT


def parse_arguments():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("entries", nargs="+", metavar="NAME:OPTIMIZER=BINARY")
    parser.add_argument("--case", default=os.path.join(ROOT, "cases", "poisson2d_xpinn.json"))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--adam", type=int, default=500, help="Adam iterations before the finish")
    parser.add_argument("--iterations", type=int, default=50, help="finish iterations")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    entries = []
    for item in args.entries:
        label, _, binary = item.rpartition("=")
        name, _, optimizer = label.partition(":")
        if not name or not optimizer or not binary:
            parser.error(f"'{item}': give each entry as NAME:OPTIMIZER=BINARY")
        if not os.access(binary, os.X_OK):
            parser.error(f"'{binary}' is not an executable")
        entries.append((f"{name}:{optimizer}", optimizer, os.path.abspath(binary)))
    return args, entries


def run(args, optimizer, binary, out):
    """Seconds per finish iteration and the final relative errors of one run."""
    total = args.adam + args.iterations
    command = ["mpiexec.mpich", "-n", str(args.ranks), binary, "run", args.case, "--overwrite"]
    name, *keys = optimizer.split("+")
    for setting in [
        f"training.stages.0.iterations={args.adam}",
        f"training.stages.1.optimizer={name}",
        *(f"training.stages.1.{key}" for key in keys),
        f"training.stages.1.iterations={args.iterations}",
        # Records at the end of both stages.
        f"training.log_every={math.gcd(args.adam, args.iterations)}",
        f"output.directory={out}",
    ]:
        command += ["--set", setting]
    result = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"finish_speed.py: {' '.join(command)} failed:\n{result.stderr[-3000:]}")
    wall = {}
    errors = {}
    with open(os.path.join(out, "history.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            wall[record["iteration"]] = record["wall_s"]
            errors = record.get("rel_l2", errors)
    if args.adam not in wall or total not in wall:
        sys.exit("finish_speed.py: history.jsonl lacks the records at the end of the stages")
    return (wall[total] - wall[args.adam]) / args.iterations, errors


def main():
    args, entries = parse_arguments()
    times = {label: [] for label, _, _ in entries}
    errors = {}
    scratch = tempfile.mkdtemp(prefix="finish_speed_")
    try:
        for round_index in range(args.rounds):
            for label, optimizer, binary in entries:
                out = os.path.join(scratch, label.replace(":", "_"))
                seconds, errors[label] = run(args, optimizer, binary, out)
                times[label].append(seconds)
                print(
                    f"round {round_index + 1}: {label}: {seconds:.4f} s per finish iteration",
                    flush=True,
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    first = statistics.median(times[entries[0][0]])
    print(
        f"\n{os.path.relpath(args.case, ROOT)}, {args.ranks} rank(s), {args.adam} Adam + "
        f"{args.iterations} finish iterations, {args.rounds} round(s)\n"
    )
    print("| entry | s per finish iteration (median) | x first | rel. L2 at the end |")
    print("| --- | --- | --- | --- |")
    for label, _, _ in entries:
        median = statistics.median(times[label])
        error = ", ".join(f"{field} {value:.3g}" for field, value in sorted(errors[label].items()))
        print(f"| {label} | {median:.4f} | {first / median:.2f} | {error or '-'} |")


if __name__ == "__main__":
    main()
