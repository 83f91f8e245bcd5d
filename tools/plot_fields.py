#!/usr/bin/python3
"""Plots a field of a Tessera run's grid output (<name>.h5, see docs/output-format.md) as a PNG.

Panels: the field, its error against the exact solution or reference (when the file has
one), and the subdomain map (which subdomain's network produced each value). Points outside
an irregular domain (NaN, subdomain -1) are left blank.

  2-D:            the plane.
  1-D + time:     the x-t plane, plus the field (and exact solution) at --time.
  2-D + time:     the plane at --time (nearest stored time; default the last).
  3-D (+ time):   the plane through --slice-value (default the middle) normal to --slice-axis
                  (default the last coordinate), at --time.
  1-D:            curves over x.

Usage (Debian's /usr/bin/python3 has numpy, h5py and matplotlib):
    tools/plot_fields.py results/poisson2d                    # writes results/poisson2d/poisson2d_u.png
    tools/plot_fields.py results/heat1d --time 0.5 -o /tmp/heat.png
    tools/plot_fields.py results/box3d --slice-axis z --slice-value 0.25
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes; we only write files
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import BoundaryNorm, ListedColormap  # noqa: E402

PROG = "plot_fields"


class ToolError(Exception):
    """A user-facing problem: printed as one line, no traceback."""


def find_h5(path):
    """The grid output file: PATH itself, or <name>.h5 in the output folder PATH."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise ToolError(
            f"{path}: no such file or folder (give a Tessera output folder or its <name>.h5)"
        )
    try:  # run.json names the case; other .h5 files (a copied reference) may lie beside it
        with open(os.path.join(path, "run.json"), encoding="utf-8") as f:
            name = json.load(f)["case"]["name"]
        if os.path.isfile(os.path.join(path, name + ".h5")):
            return os.path.join(path, name + ".h5")
    except (OSError, ValueError, KeyError, TypeError):
        pass
    found = sorted(glob.glob(os.path.join(path, "*.h5")))
    if len(found) != 1:
        raise ToolError(
            f"{path}: expected one <name>.h5, found {len(found)}"
            + (
                f" ({', '.join(os.path.basename(f) for f in found)}); give the file"
                if found
                else ""
            )
        )
    return found[0]


def load(path):
    """(coordinates in file order, time name or None, {coord: axis values}, {dataset: array}, attrs)."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ToolError(f"{path}: not a readable HDF5 file ({e})") from None
    with f:
        if "mesh" in f:
            raise ToolError(f"{path}: mesh output is not supported here; open the .xmf in ParaView")
        if "grid" not in f or "fields" not in f:
            raise ToolError(f"{path}: no /grid and /fields groups (not Tessera grid output)")
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        grids = {k: f["grid"][k][()] for k in f["grid"]}
        fields = {k: f["fields"][k][()] for k in f["fields"]}
    time = attrs.get("time_coordinate") or ("t" if "t" in grids else None)
    # Tessera records the coordinate order (first fastest); else assume x, y, z, others, time.
    coords = (
        attrs["coordinates"].split(",")
        if "coordinates" in attrs
        else sorted(grids, key=lambda c: (c == time, "xyz".find(c) % 4, c))
    )
    missing = [c for c in coords if c not in grids]
    if missing:
        raise ToolError(
            f"{path}: /grid/{missing[0]} is missing (coordinates attribute says {','.join(coords)})"
        )
    shape = tuple(len(grids[c]) for c in reversed(coords))
    for name, values in fields.items():
        if values.shape != shape:
            raise ToolError(f"{path}: /fields/{name} has shape {values.shape}, the grid {shape}")
    return coords, time, grids, fields, attrs


def pick_field(fields, wanted, h5_path):
    """The plotted field: --field, else the case's first field (run.json), else the first stored."""
    primary = [
        k
        for k in fields
        if k != "subdomain"
        and not k.startswith("residual_")
        and not k.endswith(("_exact", "_error"))
    ]
    if wanted:
        if wanted not in fields:
            raise ToolError(f"{h5_path}: no field '{wanted}' (fields: {', '.join(sorted(fields))})")
        return wanted
    try:
        with open(os.path.join(os.path.dirname(h5_path), "run.json"), encoding="utf-8") as f:
            order = json.load(f)["case"]["fields"]
        primary.sort(key=lambda k: order.index(k) if k in order else len(order))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if not primary:
        raise ToolError(f"{h5_path}: no field to plot (datasets: {', '.join(sorted(fields))})")
    return primary[0]


def nearest(values, target):
    return int(np.argmin(np.abs(values - target)))


def reduce_to_plane(coords, time, grids, arrays, args):
    """Slices every array down to at most two axes.

    Returns (axes: coordinate names of the remaining array axes, slowest first, the arrays,
    notes for the title, the time index for the 1-D + time line panel or None)."""
    axes = list(reversed(coords))  # array axis order: time slowest, first coordinate fastest
    notes = []
    spatial = [c for c in coords if c != time]

    def take(name, index):
        position = axes.index(name)
        for key in arrays:
            arrays[key] = np.take(arrays[key], index, axis=position)
        axes.remove(name)
        notes.append(f"{name} = {grids[name][index]:.4g}")

    time_index = None
    if time in axes:
        time_index = len(grids[time]) - 1 if args.time is None else nearest(grids[time], args.time)
        if len(spatial) >= 2:  # keep the x-t plane of a 1-D problem: it shows the whole history
            take(time, time_index)
            time_index = None
    elif args.time is not None:
        raise ToolError(
            f"--time: the case has no time coordinate (coordinates: {','.join(coords)})"
        )

    if len(spatial) == 3:
        axis = args.slice_axis or spatial[-1]
        if axis not in spatial:
            raise ToolError(
                f"--slice-axis {axis}: not a spatial coordinate (coordinates: {','.join(spatial)})"
            )
        values = grids[axis]
        value = 0.5 * (values[0] + values[-1]) if args.slice_value is None else args.slice_value
        take(axis, nearest(values, value))
    elif args.slice_axis or args.slice_value is not None:
        raise ToolError("--slice-axis/--slice-value: only for 3-D cases")
    return axes, arrays, notes, time_index


def subdomain_colours(ids):
    """A discrete colour map: one colour per subdomain id, boundaries between integers."""
    present = np.unique(ids.compressed()) if ids.count() else np.array([0])
    lo, hi = int(present.min()), int(present.max())
    base = plt.get_cmap("tab20" if hi - lo >= 10 else "tab10")
    cmap = ListedColormap([base(i % base.N) for i in range(hi - lo + 1)])
    return cmap, BoundaryNorm(np.arange(lo - 0.5, hi + 1.5), cmap.N), lo, hi


def plot_plane(fig, axs, axes, grids, panels, subdomain, field, time, time_value):
    """Images over the two remaining coordinates; masked (NaN) cells are not drawn."""
    y_name, x_name = axes
    x, y = grids[x_name], grids[y_name]
    for ax, (title, values, kind) in zip(axs, panels):
        data = np.ma.masked_invalid(values)
        if kind == "error":
            limit = float(np.abs(data).max()) if data.count() else 1.0
            image = ax.pcolormesh(
                x, y, data, shading="nearest", cmap="RdBu_r", vmin=-limit, vmax=limit
            )
            fig.colorbar(image, ax=ax)
        elif kind == "subdomain":
            ids = np.ma.masked_less(subdomain, 0)  # -1: outside the domain
            cmap, norm, lo, hi = subdomain_colours(ids)
            image = ax.pcolormesh(x, y, ids, shading="nearest", cmap=cmap, norm=norm)
            fig.colorbar(image, ax=ax, ticks=range(lo, hi + 1) if hi - lo < 20 else None)
            gx, gy = np.meshgrid(x, y)
            for i in np.unique(ids.compressed()):  # the id at the centre of its region
                inside = ids == i
                ax.text(
                    gx[inside].mean(),
                    gy[inside].mean(),
                    str(i),
                    ha="center",
                    va="center",
                    fontsize="small",
                )
        else:
            image = ax.pcolormesh(x, y, data, shading="nearest", cmap="viridis")
            fig.colorbar(image, ax=ax)
        if time_value is not None:
            ax.axhline(
                time_value,
                color="white" if kind == "field" else "black",
                linestyle="--",
                linewidth=1,
            )
        ax.set_title(title)
        ax.set_xlabel(x_name)
        ax.set_ylabel(y_name)
        if time not in axes:  # equal scales for space; time has its own units
            ax.set_aspect("equal")


def plot_curves(axs, x_name, x, panels, subdomain, exact):
    """Curves over one coordinate; NaN breaks the line, so points outside stay blank."""
    for ax, (title, values, kind) in zip(axs, panels):
        if kind == "subdomain":
            ax.step(x, np.where(subdomain < 0, np.nan, subdomain), where="mid")
            ax.set_yticks(np.unique(subdomain[subdomain >= 0]))
        else:
            ax.plot(x, values, label=title.split(" ")[0])
            if kind == "field" and exact is not None:
                ax.plot(x, exact, "k--", linewidth=1, label="exact")
                ax.legend(fontsize="small")
        if kind == "error":
            ax.axhline(0.0, color="gray", linewidth=0.5)
        ax.set_title(title)
        ax.set_xlabel(x_name)
        ax.grid(True, alpha=0.3)


def plot(h5_path, args):
    coords, time, grids, fields, attrs = load(h5_path)
    field = pick_field(fields, args.field, h5_path)
    wanted = {
        "field": field,
        "exact": field + "_exact",
        "error": field + "_error",
        "subdomain": "subdomain",
    }
    arrays = {k: fields[name] for k, name in wanted.items() if name in fields}
    axes, arrays, notes, time_index = reduce_to_plane(coords, time, grids, arrays, args)

    subdomain = arrays.get("subdomain")
    panels = [(f"{field}", arrays["field"], "field")]
    if "error" in arrays:
        panels.append((f"{field} error (prediction - exact)", arrays["error"], "error"))
    if subdomain is not None:
        panels.append(("subdomain", subdomain, "subdomain"))

    heading = attrs.get("case_name", os.path.basename(h5_path))
    if f"rel_l2_{field}" in attrs:
        heading += f": relative L2 error of {field} {attrs[f'rel_l2_{field}']:.3g}"
    if notes:
        heading += f" ({', '.join(notes)})"

    if len(axes) == 2:
        line = time_index is not None  # 1-D + time: add the profile at the chosen time
        n = len(panels) + line
        fig, axs = plt.subplots(1, n, figsize=(4.8 * n, 4.4), squeeze=False)
        axs = axs[0]
        time_value = grids[time][time_index] if line else None
        plot_plane(fig, axs, axes, grids, panels, subdomain, field, time, time_value)
        if line:
            x_name = axes[1]
            exact = arrays["exact"][time_index] if "exact" in arrays else None
            plot_curves(
                [axs[-1]],
                x_name,
                grids[x_name],
                [(f"{field} at {time} = {time_value:.4g}", arrays["field"][time_index], "field")],
                None,
                exact,
            )
    else:
        fig, axs = plt.subplots(
            len(panels), 1, sharex=True, figsize=(7, 2.6 * len(panels) + 0.6), squeeze=False
        )
        plot_curves(axs[:, 0], axes[0], grids[axes[0]], panels, subdomain, arrays.get("exact"))
    fig.suptitle(heading)
    fig.tight_layout()
    out_path = args.output or os.path.join(
        os.path.dirname(h5_path), f"{attrs.get('case_name', 'fields')}_{field}.png"
    )
    try:
        fig.savefig(out_path, dpi=110)
    except OSError as e:
        raise ToolError(f"{out_path}: cannot write ({e.strerror})") from None
    finally:
        plt.close(fig)
    return out_path


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", help="a Tessera output folder (or its <name>.h5)")
    parser.add_argument("--field", help="field to plot (default: the case's first field)")
    parser.add_argument(
        "--time",
        type=float,
        help="space-time cases: time of the slice (nearest stored; default last)",
    )
    parser.add_argument(
        "--slice-axis", help="3-D cases: coordinate normal to the plotted plane (default: the last)"
    )
    parser.add_argument(
        "--slice-value",
        type=float,
        help="3-D cases: where the plane cuts that axis (default: middle)",
    )
    parser.add_argument(
        "-o", "--output", help="PNG to write (default: OUTPUT_DIR/<name>_<field>.png)"
    )
    args = parser.parse_args(argv)
    try:
        out_path = plot(find_h5(args.output_dir), args)
    except ToolError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    print(f"{PROG}: wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
