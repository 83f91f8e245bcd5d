#!/usr/bin/python3
"""The coefficient a(x, y) of a space-time inverse problem, written as a field of (x, y) with
its own network, against the same problem with a of (x, y, t) and the penalty a_t = 0.

  check_coefficient_forms.py --partial DIR --penalty DIR --margin M

DIR are the output folders of the two finished runs. The field of (x, y) must recover a at
least as well: its final rel_l2 of a at most M times the penalty form's; and with fewer
trainable parameters (the count `tessera run` prints, from each folder's tessera.log).
"""
import argparse
import os
import re
import sys

from history import read_history  # same folder


def final_error(out, field):
    last = read_history(out)[-1]
    if last.get("final") is not True:
        sys.exit(f"FAIL: {out}/history.jsonl does not end with the final record")
    return last["rel_l2"][field]


def parameter_count(out):
    with open(os.path.join(out, "tessera.log")) as f:
        match = re.search(r"(\d+) trainable parameters per subdomain", f.read())
    if not match:
        sys.exit(f"FAIL: {out}/tessera.log does not give the parameter count")
    return int(match.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--partial", required=True)
    parser.add_argument("--penalty", required=True)
    parser.add_argument("--margin", type=float, required=True)
    args = parser.parse_args()
    partial, penalty = final_error(args.partial, "a"), final_error(args.penalty, "a")
    partial_size, penalty_size = parameter_count(args.partial), parameter_count(args.penalty)
    print(f"a of (x, y): rel_l2(a) {partial:.4e} with {partial_size} parameters")
    print(f"a of (x, y, t) with a_t = 0: rel_l2(a) {penalty:.4e} with {penalty_size} parameters")
    problems = []
    if not partial <= args.margin * penalty:
        problems.append(f"rel_l2(a) {partial:.4e} is above {args.margin} x the penalty form's")
    if not partial_size < penalty_size:
        problems.append(f"{partial_size} parameters are not fewer than {penalty_size}")
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
