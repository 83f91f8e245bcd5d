#!/usr/bin/python3
"""A case with training.budget instead of stages: `check` describes the plan, the run plans
Adam's iterations for its share, ends the finish at the budget and records what it trained,
and that record is all that differs from a case with those stages (the timing does not touch
the run's networks or points); a restart from a checkpoint continues the recorded plan bit for
bit.

  check_budget.py --tessera BIN --mpiexec MPIEXEC --case tests/cases/tiny.json --out DIR
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from checkpoint_samples import report, run_in  # same folder

# The history without its timings, as the rank-count checks read it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from check_ranks_identical import history  # noqa: E402

BUDGET_S = 4.0
# Adam's planned share of the budget (docs/case-format.md, "Planned from a budget"). Whether
# the run then keeps to the budget depends on the machine's speed staying what the timing
# measured, which a test machine shared with other tests does not promise: the wall time is
# printed, and the check is on the plan.
ADAM_SHARE = 0.85 * 0.3


def strip_comments(text):
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def write_case(args, name, training):
    with open(args.case) as f:
        case = json.loads(strip_comments(f.read()))
    case["decomposition"] = {"method": "xpinn", "split": {"x": 2}}
    # Checkpoints often enough that a short plan (a slow, loaded machine) has two.
    case["training"] = dict(case["training"], log_every=10, checkpoint_every=20)
    case["training"].pop("stages", None)
    case["training"].update(training)
    path = os.path.join(args.out, name + ".json")
    with open(path, "w") as f:
        json.dump(case, f)
    return path


def by_iteration(records):
    """The log records (not the final one) by iteration."""
    return {r["iteration"]: r for r in records if not r.get("final")}


def run(args, case, out, options=(), ranks=2):
    launch = [args.mpiexec, "-n", str(ranks)]
    # A loaded machine can be far slower than the timing said: room to finish regardless.
    result = run_in(args.tessera, case, out, [], options, launch=launch, timeout=400)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-3000:] + result.stderr[-3000:])
        sys.exit(f"FAIL: exit {result.returncode} for {case}")
    return result


def main():
    parser = argparse.ArgumentParser()
    for option in ("--tessera", "--mpiexec", "--case", "--out"):
        parser.add_argument(option, required=True)
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    failures = []

    # Neither stages nor a budget: one line naming both.
    neither = write_case(args, "neither", {})
    result = subprocess.run([args.tessera, "check", neither], capture_output=True, text=True)
    lines = result.stderr.strip().splitlines()
    if result.returncode == 0 or len(lines) != 1 or "budget" not in lines[0]:
        failures.append(f"a case without stages or budget: exit {result.returncode}, {lines}")

    budgeted = write_case(args, "budget", {"budget": BUDGET_S})
    check = subprocess.run([args.tessera, "check", budgeted], capture_output=True, text=True)
    if check.returncode != 0 or "planned for a budget of 4 s" not in check.stdout:
        failures.append(f"check of the budget case: exit {check.returncode}\n{check.stdout}")

    out = os.path.join(args.out, "budget")
    result = run(args, budgeted, out)
    if not re.search(
        r"plan for training.budget 4 s: \d+ adam iterations, then ssbroyden until the budget",
        result.stdout,
    ):
        failures.append("the run does not print its plan:\n" + result.stdout[-2000:])
    with open(os.path.join(out, "run.json")) as f:
        plan = json.load(f)["plan"]
    stages = [{"optimizer": s["optimizer"], "iterations": s["iterations"]} for s in plan["stages"]]
    print("plan:", plan)
    with open(os.path.join(out, "history.jsonl")) as f:
        last = json.loads(f.readlines()[-1])
    if last["iteration"] != sum(s["iterations"] for s in stages):
        failures.append(f"trained {last['iteration']} iterations, the plan says {stages}")
    # Adam fills its share at the measured speed: one more iteration would not fit.
    adam_s = plan["seconds_per_iteration"][0]
    adam = stages[0]["iterations"]
    if not adam * adam_s <= ADAM_SHARE * BUDGET_S * (1 + 1e-9) < (adam + 1) * adam_s:
        failures.append(f"{adam} Adam iterations at {adam_s} s do not fill their share")
    # The budget ends the finish, before the next log interval would pass it; its bound (ten
    # times the timing's prediction, which overestimates a finish) is not reached.
    finish, bound = stages[1]["iterations"], plan["stages"][1]["bound"]
    if not 0 < finish < bound:
        failures.append(f"the finish trained {finish} iterations of a bound of {bound}")
    # A loaded machine can slow Adam beyond its share, but not by this much.
    if last["wall_s"] > 3 * BUDGET_S:
        failures.append(f"training took {last['wall_s']:.2f} s for a budget of {BUDGET_S} s")

    # The same stages written out, on another rank count: the same history, bit for bit.
    staged = write_case(args, "staged", {"stages": stages})
    staged_out = os.path.join(args.out, "staged")
    run(args, staged, staged_out, ranks=1)
    if history(staged_out) != history(out):
        failures.append("the case with the planned stages written out trains differently")

    # A restart from the earlier of the two kept checkpoints continues the same plan: the same
    # records wherever both runs have one (where the budget ends the finish is a matter of
    # time).
    folders = sorted(glob.glob(os.path.join(out, "checkpoints", "*")))
    if len(folders) < 2:
        failures.append(f"expected two checkpoints in {out}/checkpoints, found {folders}")
    else:
        before = by_iteration(history(out))
        result = run(args, budgeted, out, ["--restart", folders[0]])
        if "continuing the plan recorded in" not in result.stdout:
            failures.append("the restart does not say it continues the recorded plan")
        after = by_iteration(history(out))
        common = sorted(set(before) & set(after))
        if len(common) < 2 or any(before[i] != after[i] for i in common):
            failures.append(f"the restarted run's records differ (iterations {common[-3:]})")
    if not failures:
        print(
            f"budget of {BUDGET_S} s: {stages}, trained in {last['wall_s']:.2f} s; "
            "the same as the stages written out and after a restart"
        )
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
