#!/usr/bin/python3
"""Warm start (network.init.from), end to end with the tessera binary.

  check_warm_start.py --tessera BIN --case tests/cases/tiny.json --source-run DIR --out DIR
                      [--mpiexec MPIEXEC] [--set path=value]...

DIR of --source-run is a finished run of the case with the --set values given here (the
fixture "warm_source"). Every run below keeps its points and weights fixed (the same --set
values), so a loss measures the networks only.

1. The same case started from the source: its first record's loss (log_every 1: the loss of
   the first Adam step, taken before the step, so at the loaded parameters on the first points)
   equals the source's final record (the loss after training at its final parameters, on the
   same points: same seed and sampler, never redrawn). The source's last logged Adam record is
   not the comparison: it holds the loss before its last step.
2. The source's one network copied into 2 xpinn subdomains (on 2 ranks with --mpiexec): the
   first record's rel_l2 is the source's final one (each subdomain computes the source's
   function; the step before it has lr 1e-9) and the interface continuity term is zero.
3. A restart of a warm-started run continues from its own checkpoint: 20 iterations, then
   --restart latest with 40 and the source folder renamed away, ends with exactly the history
   of an uninterrupted 40-iteration warm-started run (timings aside).
4. `tessera check` refuses a source whose checkpoints are incomplete (no manifest), in one
   line naming network.init.from.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ENV = dict(os.environ, OMP_NUM_THREADS="1", TESSERA_THREADS="1", OPENBLAS_NUM_THREADS="1")
TIMINGS = ("wall_s", "time_s")


def run(args, out, sets, ranks=1, extra=()):
    line = [args.tessera, "run", args.case]
    if ranks > 1:
        line = [args.mpiexec, "-n", str(ranks)] + line
    for s in args.overrides + sets + [f"output.directory={out}"]:
        line += ["--set", s]
    line += list(extra)
    print("running:", " ".join(line), flush=True)
    result = subprocess.run(line, env=ENV, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-3000:])
        sys.stderr.write(result.stderr[-3000:])
        sys.exit(f"FAIL: exit {result.returncode}")
    return result


def history(out):
    with open(os.path.join(out, "history.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    for record in records:
        for key in TIMINGS:
            record.pop(key, None)
    return records


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--source-run", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mpiexec")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    source = os.path.abspath(args.source_run)
    source_final = history(source)[-1]
    if source_final.get("final") is not True:
        sys.exit(f"FAIL: {source}/history.jsonl does not end with the final record")
    warm = 'network.init={"from":"%s"}' % source
    failures = []

    # 1. Same case: the first loss is the source's final loss.
    same = os.path.join(out, "same")
    result = run(args, same, [warm, "training.stages.0.iterations=5", "training.log_every=1"])
    if "network.init: from " not in result.stdout:
        failures.append("run did not say what it loaded (network.init: from ...)")
    first = history(same)[0]
    print(f"source final loss {source_final['loss']!r}, warm-started first loss {first['loss']!r}")
    if first["iteration"] != 1:
        failures.append(f"first record at iteration {first['iteration']}, expected 1")
    if first["loss"] != source_final["loss"] or first["terms"] != source_final["terms"]:
        failures.append(
            f"first loss {first['loss']!r} {first['terms']} is not the source's final "
            f"{source_final['loss']!r} {source_final['terms']}"
        )

    # 2. One network copied into two subdomains.
    copied = os.path.join(out, "copied")
    ranks = 2 if args.mpiexec else 1
    run(
        args,
        copied,
        [
            warm,
            'decomposition={"method":"xpinn","split":{"x":2}}',
            "training.stages.0.iterations=5",
            "training.stages.0.lr=1e-9",
            "training.log_every=1",
        ],
        ranks=ranks,
    )
    first = history(copied)[0]
    expected, got = source_final["rel_l2"]["u"], first["rel_l2"]["u"]
    print(f"source final rel_l2 {expected!r}, copied into 2 subdomains {got!r}")
    if not close(got, expected, 1e-4):
        failures.append(f"copied rel_l2(u) {got!r} is not the source's {expected!r}")
    continuity = first["terms"].get("continuity")
    if continuity is None or continuity > 1e-10:
        failures.append(f"continuity term {continuity!r}: the two copies differ at the interface")

    # 3. A restart continues from its own checkpoint, not from the source.
    schedule = [
        warm,
        "training.stages.0.warmup=0",
        'training.stages.0.decay={"rate":0.9,"every":10}',
        "training.log_every=10",
    ]
    whole = os.path.join(out, "whole")
    run(args, whole, schedule + ["training.stages.0.iterations=40"])
    part = os.path.join(out, "part")
    run(args, part, schedule + ["training.stages.0.iterations=20"])
    hidden = source + ".away"
    os.rename(source, hidden)
    try:
        run(
            args,
            part,
            schedule + ["training.stages.0.iterations=40"],
            extra=["--restart", "latest"],
        )
    finally:
        os.rename(hidden, source)
    if history(part) != history(whole):
        failures.append(
            f"restarted history differs from the uninterrupted one:\n{history(part)}\n"
            f"{history(whole)}"
        )

    # 4. A source whose checkpoints are all incomplete (no manifest) is refused by check.
    incomplete = os.path.join(out, "incomplete")
    shutil.copytree(source, incomplete)
    for folder in os.listdir(os.path.join(incomplete, "checkpoints")):
        os.remove(os.path.join(incomplete, "checkpoints", folder, "manifest.json"))
    line = [args.tessera, "check", args.case, "--set", 'network.init={"from":"%s"}' % incomplete]
    result = subprocess.run(line, env=ENV, capture_output=True, text=True, timeout=60)
    errors = [text for text in result.stderr.splitlines() if text.strip()]
    print("incomplete source:", result.returncode, errors)
    if (
        result.returncode == 0
        or len(errors) != 1
        or "network.init.from" not in errors[0]
        or "no complete, intact checkpoint" not in errors[0]
    ):
        failures.append(f"an incomplete source was not refused in one line: {errors}")

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
