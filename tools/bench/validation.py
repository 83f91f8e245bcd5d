#!/usr/bin/python3
"""Runs the validation suite (cases/validation/, described in docs/validation.md) and prints a
Markdown table of the final errors next to the published PINN figures:

    /usr/bin/python3 tools/bench/validation.py                        # every problem, 2 ranks
    /usr/bin/python3 tools/bench/validation.py --only burgers,helmholtz --ranks 4
    /usr/bin/python3 tools/bench/validation.py --quick                # 200 Adam + 20 L-BFGS each
    /usr/bin/python3 tools/bench/validation.py --quick --check '{"*": null}'   # CTest: finite
    /usr/bin/python3 tools/bench/validation.py --check bounds.json    # fail above the bounds
    /usr/bin/python3 tools/bench/validation.py --list                 # the problems and figures
    /usr/bin/python3 tools/bench/validation.py --finish lbfgs         # every finish an L-BFGS one
    /usr/bin/python3 tools/bench/validation.py --set 'network.hidden=[100,100,100,100,100]'

Each problem is one case file, run as `mpiexec.mpich -n RANKS build/tessera run CASE --set
output.directory=OUT/<problem>` from the repository root with TESSERA_THREADS=1 (one thread per
rank). Problems without a decomposition train one network on rank 0; the other ranks of the job
take part only in reductions. --quick shortens every stage through --set overrides of its
iterations (nothing else changes). The figures are read from the run's output
(docs/output-format.md): run.json's final record (rel_l2 per field, learned parameters) and
training time wall_s; for problems with several fields, the stacked error
sqrt(sum_f sum (f - f_ref)^2 / sum_f sum f_ref^2) over the output points inside the domain is
computed from <name>.h5 (its <field> and <field>_exact datasets). Logs, the Markdown table
(OUT/summary_table.txt) and the figures (OUT/summary.json) go to --out-dir (OUT).

--check BOUNDS takes a JSON file or an inline JSON object mapping a problem (or "*" for every
problem not named) to a bound: a number bounds the stacked error (the only field's error for
one-field problems), an object bounds named fields, "stacked" and, for the inverse problem, the
relative parameter error ("nu"); for the cavity also "<field>_away" and "stacked_away", the
errors outside small disks around the lid's corners; null only asks for a finite error. The
exit status is 1 when a run fails or a bound is exceeded, 2 for bad arguments.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

from one_thread import ENV, ROOT

QUICK_ITERATIONS = {"adam": 200, "lbfgs": 20, "bfgs": 20, "ssbroyden": 20}
QUASI_NEWTON = ("lbfgs", "bfgs", "ssbroyden")
NOT_FOUND = "not found"

# problem -> case file, published PINN figure and where it comes from. "not found": no figure
# could be confirmed for the problem as posed (docs/validation.md says what was looked for).
# parameter: (name, true value) of a learned parameter, reported as |learned - true| / true.
PROBLEMS = {
    "burgers": {
        "case": "cases/validation/burgers.json",
        "published": "6.7e-4",
        "citation": "Raissi, Perdikaris & Karniadakis 2019 (arXiv:1711.10561), Burgers inference "
        "table, N_u = 100, N_f = 10,000, 9 x 20",
    },
    "burgers_cpinn": {
        "case": "cases/validation/burgers_cpinn.json",
        "published": "6.7e-4 (one network)",
        "citation": "as burgers; cPINN figures not found",
    },
    "burgers_inverse": {
        "case": "cases/validation/burgers_inverse.json",
        "published": "nu: 0.469% (noise-free; 0.008% with 1% noise)",
        "citation": "Raissi, Perdikaris & Karniadakis 2019 (arXiv:1711.10566), Burgers "
        "identification table, N = 2,000, 9 x 20",
        "parameter": ("nu", 0.01 / math.pi),
    },
    "allen_cahn": {
        "case": "cases/validation/allen_cahn.json",
        "published": "5.37e-5 (JAX-PI); 2.24e-5 (PirateNet)",
        "citation": "Wang, Sankaran, Wang & Perdikaris 2023 (arXiv:2308.08468); Wang, Li, Chen & "
        "Perdikaris 2024 (arXiv:2402.00326); tables of github.com/PredictiveIntelligenceLab/jaxpi",
    },
    "allen_cahn_timeslabs": {
        "case": "cases/validation/allen_cahn_timeslabs.json",
        "published": "5.37e-5 (JAX-PI); 2.24e-5 (PirateNet), one network",
        "citation": "as allen_cahn",
    },
    "advection": {
        "case": "cases/validation/advection.json",
        "published": "2.02e-2 (curriculum); 8.97e-1 (plain PINN)",
        "citation": "Krishnapriyan et al. 2021 (NeurIPS, arXiv:2109.01050), Table 1, convection "
        "beta = 30, 4 x 50",
    },
    "advection_timeslabs": {
        "case": "cases/validation/advection_timeslabs.json",
        "published": "1.05e-1 (seq2seq, dt = 0.1)",
        "citation": "Krishnapriyan et al. 2021 (NeurIPS, arXiv:2109.01050), Table E.1, "
        "sequence-to-sequence in time, beta = 30",
    },
    "helmholtz": {
        "case": "cases/validation/helmholtz.json",
        "published": NOT_FOUND,
        "citation": "Wang, Teng & Perdikaris 2021 (SIAM J. Sci. Comput. 43(5)); McClenny & "
        "Braga-Neto 2023 (J. Comput. Phys. 474)",
    },
    "helmholtz_cpinn": {
        "case": "cases/validation/helmholtz_cpinn.json",
        "published": NOT_FOUND,
        "citation": "as helmholtz (one network there)",
    },
    "klein_gordon": {
        "case": "cases/validation/klein_gordon.json",
        "published": NOT_FOUND,
        "citation": "Wang, Teng & Perdikaris 2021 (SIAM J. Sci. Comput. 43(5))",
    },
    "kovasznay": {
        "case": "cases/validation/kovasznay.json",
        "published": NOT_FOUND + " (Re = 20)",
        "citation": "Jin, Cai, Li & Karniadakis 2021, NSFnets (J. Comput. Phys. 426) report "
        "Re = 40 only",
    },
    "cavity": {
        "case": "cases/validation/cavity.json",
        "published": NOT_FOUND + " (Re = 100)",
        "citation": "Wang, Teng & Perdikaris 2021 (SIAM J. Sci. Comput. 43(5))",
        # The pressure is singular (p ~ 1/r) where the lid meets the walls: it is not square-
        # integrable there, so its L2 error on the whole square measures the two corner points.
        # The errors are also given outside disks of this radius around them (docs/validation.md).
        "away_from": {"points": [[0.0, 1.0], [1.0, 1.0]], "radius": 0.05},
    },
    "poisson_holes": {
        "case": "cases/validation/poisson_holes.json",
        "published": NOT_FOUND,
        "citation": "geometry of PINNacle Poisson 2d-C (Hao et al. 2023, arXiv:2306.08827)",
    },
    "poisson_holes_xpinn": {
        "case": "cases/validation/poisson_holes_xpinn.json",
        "published": NOT_FOUND,
        "citation": "as poisson_holes",
    },
    "laplace_rectangle": {
        "case": "cases/validation/laplace_rectangle.json",
        "published": "none (suite problem)",
        "citation": "-",
    },
    "laplace_rectangle_xpinn": {
        "case": "cases/validation/laplace_rectangle_xpinn.json",
        "published": "none (suite problem)",
        "citation": "-",
    },
    "poisson5d": {
        "case": "cases/validation/poisson5d.json",
        "published": "none (suite problem)",
        "citation": "-",
    },
}


def strip_comments(text):
    """The case file's text without // and /* */ comments (strings are left alone)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load_case(path):
    with open(path) as f:
        return json.loads(strip_comments(f.read()))


def quick_overrides(case):
    """--set overrides that shorten every stage of the case to QUICK_ITERATIONS."""
    sets = []
    for i, stage in enumerate(case["training"]["stages"]):
        sets.append(f"training.stages.{i}.iterations={QUICK_ITERATIONS[stage['optimizer']]}")
    sets.append("training.log_every=100")
    return sets


def finish_overrides(case, finish):
    """--set overrides that make every quasi-Newton stage of the case a `finish` stage (its
    iterations and points kept: keys every quasi-Newton optimizer takes)."""
    return [
        f"training.stages.{i}.optimizer={finish}"
        for i, stage in enumerate(case["training"]["stages"])
        if stage["optimizer"] in QUASI_NEWTON
    ]


def field_errors(h5_path, fields, away_from=None):
    """Per field sqrt(sum (f - f_ref)^2 / sum f_ref^2) and, as "stacked",
    sqrt(sum_f sum (f - f_ref)^2 / sum_f sum f_ref^2) over the finite output points of a 2-D
    grid, or None when the file lacks a <field>_exact dataset (or h5py is missing). With
    away_from ({"points": [[x, y], ...], "radius": r}), only points at distance >= r from
    every listed point count."""
    try:
        import h5py
        import numpy as np
    except ImportError:
        return None
    if not os.path.exists(h5_path):
        return None
    errors, num, den = {}, 0.0, 0.0
    with h5py.File(h5_path, "r") as f:
        keep = None
        if away_from:
            x, y = np.meshgrid(f["grid/x"][()], f["grid/y"][()])  # [ny, nx], as the fields
            keep = np.ones_like(x, dtype=bool)
            for cx, cy in away_from["points"]:
                keep &= np.hypot(x - cx, y - cy) >= away_from["radius"]
        for field in fields:
            if f"fields/{field}_exact" not in f:
                return None
            pred = f[f"fields/{field}"][()]
            ref = f[f"fields/{field}_exact"][()]
            inside = np.isfinite(pred) & np.isfinite(ref)
            if keep is not None:
                inside &= keep
            squares = float(np.sum((pred[inside] - ref[inside]) ** 2))
            norm = float(np.sum(ref[inside] ** 2))
            errors[field] = math.sqrt(squares / norm) if norm > 0 else None
            num, den = num + squares, den + norm
    errors["stacked"] = math.sqrt(num / den) if den > 0 else None
    return errors


def stacked_error(h5_path, fields):
    errors = field_errors(h5_path, fields)
    return errors["stacked"] if errors else None


def first_error_line(log_path):
    try:
        with open(log_path) as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "no log"
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[-1] if lines else "empty log"


def first_stage_end(history_path):
    """The errors of the last record the first stage logged (its end, before the finish)."""
    last = None
    try:
        with open(history_path) as f:
            for line in f:
                record = json.loads(line)
                if record.get("final") or (last and record.get("stage") != last.get("stage")):
                    break
                last = record
    except (OSError, ValueError):
        return None
    if last is None or "rel_l2" not in last:
        return None
    end = {"iteration": last["iteration"], "rel_l2": last["rel_l2"]}
    if "rel_l2_stacked" in last:
        end["stacked"] = last["rel_l2_stacked"]
    return end


def run_problem(name, args, out_dir):
    spec = PROBLEMS[name]
    case_path = os.path.join(ROOT, spec["case"])
    case = load_case(case_path)
    out = os.path.join(out_dir, name)
    command = [args.mpiexec, "-n", str(args.ranks), args.tessera, "run", spec["case"]]
    sets = [f"output.directory={out}"] + (quick_overrides(case) if args.quick else [])
    if args.finish:
        sets += finish_overrides(case, args.finish)
    sets += args.set
    for s in sets:
        command += ["--set", s]
    result = {"problem": name, "ranks": args.ranks, "command": " ".join(command), "ok": False}
    if args.dry_run:
        print(result["command"])
        return result
    log_path = os.path.join(out_dir, f"{name}.log")
    start = time.monotonic()
    if args.collect:
        # The run happened before (perhaps in another invocation): only its outputs are read.
        rc = 0
    else:
        print(f"[validation] {name}: {result['command']}", file=sys.stderr, flush=True)
        with open(log_path, "w") as log:
            try:
                rc = subprocess.run(
                    command,
                    cwd=ROOT,
                    env=ENV,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=args.timeout,
                ).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
    result["command_s"] = time.monotonic() - start
    result["log"] = log_path
    run_json = os.path.join(out, "run.json")
    if rc == 0 and os.path.exists(run_json) and args.collect:
        with open(run_json) as f:
            if json.load(f).get("status") != "completed":
                rc = "not completed"
    if rc != 0 or not os.path.exists(run_json):
        result["failure"] = f"exit {rc}: {first_error_line(log_path)}"
        return result
    with open(run_json) as f:
        record = json.load(f)
    final = record.get("final", {})
    result["rel_l2"] = final.get("rel_l2", {})
    result["wall_s"] = record.get("wall_s", result["command_s"])
    result["iterations"] = record.get("iterations")
    result["first_stage"] = first_stage_end(os.path.join(out, "history.jsonl"))
    fields = case["fields"]
    result["fields"] = fields
    if len(fields) > 1:
        result["stacked"] = stacked_error(os.path.join(out, f"{case['name']}.h5"), fields)
    if "away_from" in spec:
        away = field_errors(os.path.join(out, f"{case['name']}.h5"), fields, spec["away_from"])
        if away:
            result["away"] = dict(away, radius=spec["away_from"]["radius"])
    elif len(fields) == 1 and fields[0] in result["rel_l2"]:
        result["stacked"] = result["rel_l2"][fields[0]]
    if "parameter" in spec:
        pname, true_value = spec["parameter"]
        learned = final.get("parameters", {}).get(pname)
        if learned is not None:
            result["parameter"] = {
                "name": pname,
                "value": learned,
                "true": true_value,
                "rel_error": abs(learned - true_value) / abs(true_value),
            }
    result["ok"] = True
    return result


def format_errors(result):
    if not result.get("ok"):
        failure = result.get("failure", "not run")
        return "failed: " + (failure if len(failure) <= 160 else failure[:157] + "...")
    rel = result["rel_l2"]
    fields = result["fields"]
    if len(fields) == 1:
        text = f"{rel[fields[0]]:.2e}" if fields[0] in rel else "n/a"
    else:
        parts = [f"{f} {rel[f]:.2e}" for f in fields if f in rel]
        stacked = result.get("stacked")
        parts.append(f"stacked {stacked:.2e}" if stacked is not None else "stacked n/a")
        text = ", ".join(parts)
    if "away" in result:
        away = result["away"]
        parts = [f"{f} {away[f]:.2e}" for f in fields + ["stacked"] if away.get(f) is not None]
        text += f"; at r >= {away['radius']:g} from the corners: " + ", ".join(parts)
    if "parameter" in result:
        p = result["parameter"]
        text += f"; {p['name']} = {p['value']:.5g} ({100 * p['rel_error']:.3g}% off)"
    return text


def format_first_stage(result):
    """The stacked (or only field's) error where the first stage ended, at its iteration."""
    end = result.get("first_stage")
    if not end:
        return "-"
    error = end.get("stacked")
    if error is None and len(end["rel_l2"]) == 1:
        error = next(iter(end["rel_l2"].values()))
    if error is None:
        return "-"
    return f"{error:.2e} (iteration {end['iteration']})"


def markdown_table(results, quick):
    lines = [
        "| problem | published PINN error (paper, table) | Tessera rel. L2 | after the first stage "
        "| wall s | ranks |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        spec = PROBLEMS[r["problem"]]
        published = f"{spec['published']} ({spec['citation']})"
        wall = f"{r['wall_s']:.0f}" if r.get("ok") else "-"
        lines.append(
            f"| {r['problem']} | {published} | {format_errors(r)} | {format_first_stage(r)} "
            f"| {wall} | {r['ranks']} |"
        )
    if quick:
        lines.append("")
        lines.append(
            f"--quick: every stage shortened to {QUICK_ITERATIONS['adam']} Adam / "
            f"{QUICK_ITERATIONS['lbfgs']} L-BFGS iterations; not comparable to the published figures."
        )
    return "\n".join(lines)


def load_bounds(text):
    if text.lstrip().startswith("{"):
        return json.loads(text)
    with open(text) as f:
        return json.load(f)


def finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def check_bounds(results, bounds):
    """List of failure messages (empty when every problem meets its bound)."""
    failures = []
    for r in results:
        name = r["problem"]
        if name in bounds:
            bound = bounds[name]
        elif "*" in bounds:
            bound = bounds["*"]
        else:
            continue
        if not r.get("ok"):
            failures.append(f"{name}: {r.get('failure', 'not run')}")
            continue
        figures = dict(r["rel_l2"])
        figures["stacked"] = r.get("stacked")
        for key, value in r.get("away", {}).items():
            if key != "radius":
                figures[f"{key}_away"] = value
        if "parameter" in r:
            figures[r["parameter"]["name"]] = r["parameter"]["rel_error"]
        if bound is None or isinstance(bound, (int, float)):
            checks = {"stacked": bound}
        else:
            checks = bound
        for key, limit in checks.items():
            value = figures.get(key)
            if not finite(value):
                failures.append(f"{name}: {key} error is {value} (not finite or not reported)")
            elif limit is not None and value > limit:
                failures.append(f"{name}: {key} error {value:.3e} exceeds the bound {limit:.3e}")
    return failures


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated problems (default: all, see --list)")
    parser.add_argument("--ranks", type=int, default=2, help="MPI ranks per run (default 2)")
    parser.add_argument("--quick", action="store_true", help="shorten every stage (smoke test)")
    parser.add_argument("--out-dir", default=os.path.join("results", "validation"))
    parser.add_argument("--check", metavar="BOUNDS", help="JSON file or inline JSON of bounds")
    parser.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    parser.add_argument("--mpiexec", default="mpiexec.mpich")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per run")
    parser.add_argument("--list", action="store_true", help="list the problems and exit")
    parser.add_argument(
        "--finish",
        choices=QUASI_NEWTON,
        help="run every quasi-Newton stage with this optimizer instead of the case's",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a case override passed to every run (repeatable), e.g. network.hidden=[100,100]",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument(
        "--collect",
        action="store_true",
        help="run nothing: make the table from the outputs already in --out-dir "
        "(runs split over several invocations, each with its own --only)",
    )
    args = parser.parse_args()

    if args.list:
        for name, spec in PROBLEMS.items():
            print(f"{name:24} {spec['case']:45} {spec['published']} ({spec['citation']})")
        return 0
    names = list(PROBLEMS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in PROBLEMS]
        if unknown:
            print(
                f"validation.py: unknown problem(s) {', '.join(unknown)}; see --list",
                file=sys.stderr,
            )
            return 2
    if args.ranks < 1:
        print("validation.py: --ranks must be at least 1", file=sys.stderr)
        return 2
    bounds = None
    if args.check:
        try:
            bounds = load_bounds(args.check)
        except (OSError, ValueError) as error:
            print(f"validation.py: --check {args.check}: {error}", file=sys.stderr)
            return 2
    if not args.dry_run and not args.collect and not os.path.exists(args.tessera):
        print(f"validation.py: {args.tessera} does not exist; build first", file=sys.stderr)
        return 2

    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    results = [run_problem(name, args, out_dir) for name in names]
    if args.dry_run:
        return 0
    table = markdown_table(results, args.quick)
    print(table)
    with open(os.path.join(out_dir, "summary_table.txt"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"quick": args.quick, "ranks": args.ranks, "results": results}, f, indent=2)
    status = 0 if all(r.get("ok") for r in results) else 1
    if bounds is not None:
        failures = check_bounds(results, bounds)
        for message in failures:
            print(f"FAIL: {message}", file=sys.stderr)
        status = 1 if failures else status
    return status


if __name__ == "__main__":
    sys.exit(main())
