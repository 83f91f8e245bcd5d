#!/usr/bin/python3
"""Memory stays flat over a long run: no per-iteration growth.

  check_memory.py --tessera BIN --case CASE --out DIR [--iterations 10000] [--max-growth-mb 8]
                  [--set path=value]...

Samples the resident memory (VmRSS) of `tessera run` every 0.1 s while it trains Adam only for
--iterations iterations, and compares the median of the samples in the second fifth of the run
(after start-up and the first allocations) with the median of the last fifth. A leak of a few
hundred bytes per iteration shows as megabytes over 10,000 iterations.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--iterations", type=int, default=10000)
    parser.add_argument("--max-growth-mb", type=float, default=8.0)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    command = [
        args.tessera,
        "run",
        args.case,
        "--set",
        f"output.directory={out}",
        "--set",
        f'training.stages=[{{"optimizer":"adam","iterations":{args.iterations}}}]',
        "--set",
        "training.log_every=500",
    ]
    for override in args.overrides:
        command += ["--set", override]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    samples = []
    while process.poll() is None:
        value = rss_mb(process.pid)
        if value is not None:
            samples.append(value)
        time.sleep(0.1)
    errors = process.stderr.read()
    if process.returncode != 0:
        sys.exit(f"FAIL: tessera exited with {process.returncode}: {errors[-1000:]}")
    if len(samples) < 50:
        sys.exit(f"FAIL: only {len(samples)} memory samples; make the run longer")
    fifth = len(samples) // 5
    early = statistics.median(samples[fifth : 2 * fifth])
    late = statistics.median(samples[-fifth:])
    print(
        f"{args.iterations} iterations, {len(samples)} samples: resident memory {early:.1f} MB early, "
        f"{late:.1f} MB late (growth {late - early:+.2f} MB, peak {max(samples):.1f} MB)"
    )
    if late - early > args.max_growth_mb:
        sys.exit(
            f"FAIL: resident memory grew by {late - early:.1f} MB (limit {args.max_growth_mb} MB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
