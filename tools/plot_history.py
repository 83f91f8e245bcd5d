#!/usr/bin/python3
"""Plots a Tessera run's training history (history.jsonl, see docs/output-format.md) as a PNG.

Panels, all against the iteration: the loss and each unweighted loss term (log scale), the
relative L2 error of each field (and the interface jump of decomposed runs), the learning
rate, and, when present, learned parameters and adaptive weights. Dotted lines mark where a
training stage (adam, lbfgs) begins.

Usage (Debian's /usr/bin/python3 has numpy and matplotlib):
    tools/plot_history.py results/poisson2d                 # writes results/poisson2d/history.png
    tools/plot_history.py results/heat1d -o /tmp/heat_history.png

A missing, empty or malformed history.jsonl gives a one-line error naming the file and line.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes; we only write files
import matplotlib.pyplot as plt  # noqa: E402

PROG = "plot_history"


class ToolError(Exception):
    """A user-facing problem: printed as one line, no traceback."""


def read_history(path):
    """The logged records of history.jsonl, in file order, without the closing "final" record."""
    if not os.path.isfile(path):
        raise ToolError(
            f"{path}: no such file (give a Tessera output folder, which holds history.jsonl)"
        )
    records = []
    # errors="replace": a binary or mis-encoded line then fails as JSON, with its line number.
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines) and not line.endswith("\n"):
                break  # a running job is still writing its last line: plot what is complete
            raise ToolError(
                f"{path}:{number}: not valid JSON ({e.msg} at column {e.colno})"
            ) from None
        if not isinstance(record, dict):
            raise ToolError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        for key, kind in (("iteration", (int, float)), ("loss", (int, float)), ("terms", dict)):
            if not isinstance(record.get(key), kind):
                raise ToolError(f"{path}:{number}: missing or wrong-typed key '{key}'")
        # The run ends with a "final" record that repeats the last iteration (lr 0, terms
        # re-evaluated); plotting it would draw a vertical step and a zero on a log axis.
        if not record.get("final"):
            records.append(record)
    if not records:
        raise ToolError(
            f"{path}: empty (no logged iterations yet; training.log_every sets how often)"
        )
    return records


def series(records, key):
    """{name: ([iteration], [value])} for a dict-valued key ("terms", "rel_l2", ...)."""
    out = {}
    for r in records:
        for name, value in (r.get(key) or {}).items():
            if isinstance(value, (int, float)):
                xs, ys = out.setdefault(name, ([], []))
                xs.append(r["iteration"])
                ys.append(value)
    return out


def plot_lines(ax, lines, log, steps=False):
    style = {"marker": "o", "markersize": 3} if max(len(x) for x, _ in lines.values()) < 20 else {}
    for name, (xs, ys) in lines.items():
        ax.plot(xs, ys, label=name, drawstyle="steps-post" if steps else "default", **style)
    # A log axis cannot show zeros or negatives (a term that is exactly 0, a negative parameter).
    if log and all(y > 0 for _, ys in lines.values() for y in ys):
        ax.set_yscale("log")
    # Outside the axes: a run can have many terms, and the stage names sit at the top inside.
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, which="major", alpha=0.3)


def mark_stages(axes, records):
    """Dotted line and stage name where the stage changes; at the last iteration logged before it."""
    previous = records[0]
    changes = [(records[0]["iteration"], records[0].get("stage", ""))]
    for r in records[1:]:
        if r.get("stage") != previous.get("stage"):
            changes.append((previous["iteration"], r.get("stage", "")))
        previous = r
    for ax in axes:
        for x, _ in changes[1:]:
            ax.axvline(x, color="gray", linestyle=":", linewidth=1)
    top = axes[0]
    for x, stage in changes:
        top.annotate(
            stage,
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12),
            textcoords="offset points",
            fontsize="small",
            color="gray",
        )


def plot(records, title, out_path):
    panels = []  # (y label, lines, log scale, draw as steps)
    loss = series(records, "terms")
    loss = {
        "loss (weighted sum)": ([r["iteration"] for r in records], [r["loss"] for r in records]),
        **loss,
    }
    panels.append(("loss and unweighted terms", loss, True, False))
    accuracy = {f"rel. L2 {k}": v for k, v in series(records, "rel_l2").items()}
    jumps = [(r["iteration"], r["interface_jump"]) for r in records if "interface_jump" in r]
    if jumps:
        accuracy["interface jump (RMS)"] = ([x for x, _ in jumps], [y for _, y in jumps])
    if accuracy:
        label = "rel. L2 error, interface jump" if jumps else "relative L2 error"
        panels.append((label, accuracy, True, False))
    # One line per stage: L-BFGS logs its step scale (1.0), which is no continuation of Adam's lr.
    lr = {}
    for r in records:
        if isinstance(r.get("lr"), (int, float)):
            xs, ys = lr.setdefault(r.get("stage", "lr"), ([], []))
            xs.append(r["iteration"])
            ys.append(r["lr"])
    if lr:
        panels.append(("learning rate", lr, True, True))
    parameters = series(records, "parameters")
    if parameters:
        panels.append(("learned parameters", parameters, False, False))
    # Fixed weights are one flat line per term: only adaptive ("grad_norm") ones are worth a panel.
    weights = {k: v for k, v in series(records, "weights").items() if len(set(v[1])) > 1}
    if weights:
        panels.append(("loss weights", weights, True, True))

    fig, axes = plt.subplots(
        len(panels), 1, sharex=True, figsize=(10, 2.6 * len(panels) + 0.6), squeeze=False
    )
    axes = axes[:, 0]
    for ax, (label, lines, log, steps) in zip(axes, panels):
        plot_lines(ax, lines, log, steps)
        ax.set_ylabel(label)
    mark_stages(axes, records)
    axes[-1].set_xlabel("iteration")
    axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", help="a Tessera output folder (or its history.jsonl)")
    parser.add_argument("-o", "--output", help="PNG to write (default: OUTPUT_DIR/history.png)")
    args = parser.parse_args(argv)
    try:
        path = args.output_dir
        if not os.path.isfile(path):
            path = os.path.join(path, "history.jsonl")
        records = read_history(path)
        out_path = args.output or os.path.join(os.path.dirname(path), "history.png")
        last = records[-1]
        title = (
            f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}: {len(records)} records, "
            f"iteration {last['iteration']}, loss {last['loss']:.3g}"
        )
        if isinstance(last.get("wall_s"), (int, float)):
            title += f", {last['wall_s']:.1f} s"
        try:
            plot(records, title, out_path)
        except OSError as e:
            raise ToolError(f"{out_path}: cannot write ({e.strerror})") from None
    except ToolError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    print(f"{PROG}: wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
