#!/usr/bin/python3
"""Draws the plots of a tpusim sweep.

    /usr/bin/python3 scripts/plot_sweep.py DIR

For each plot in DIR/sweep.json (the sweep file's `plots:`), writes DIR/plots/NAME.png and NAME.svg
from DIR/results.csv, using the points whose status is ok, and prints "wrote PATH" per file.
`tpusim sweep` runs this script (embedded in the binary) after the last point and `tpusim sweep
merge` after merging; run it by hand to redraw. Needs only the standard library and matplotlib
(Debian: python3-matplotlib).

Exit codes: 0 plots written; 2 bad input; 3 matplotlib is not installed (tpusim reports a warning).
Kinds (docs/sweeps.md, "Plots"):
  line         y column(s) against one x column, a line per series value (duplicates averaged)
  bar          grouped bars per x category (several x columns form "a / b" labels)
  stacked_bar  the y columns stacked per x category (default: the training time breakdown)
  roofline     achieved TFLOP/s against flops/byte, log-log, with the compute and HBM roofs
               (peak_tflop_per_s, peak_hbm_gbyte_per_s) of each distinct hardware point
"""
import csv
import json
import os
import sys

NO_MATPLOTLIB = 3
BAD_INPUT = 2


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def unique(seq):
    """Distinct items in order of first appearance (rows come sorted by point id, i.e. axis order)."""
    seen, out = set(), []
    for s in seq:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def category(row, cols):
    return " / ".join(row[c] for c in cols)


def default_title(sweep, p):
    if p["kind"] == "roofline":
        return "{}: roofline".format(sweep)
    return "{}: {} vs {}".format(sweep, ", ".join(p["y"]), " / ".join(p["x"]))


# Units as plotted: byte counts are drawn in GiB (2^30 bytes), everything else as recorded.
GIB = float(1 << 30)
FIGURES = {}  # column -> {"unit", "doc"}, from sweep.json (set in main)


def unit(col):
    u = FIGURES.get(col, {}).get("unit", "")
    return "GiB" if u == "bytes" else u


def scale(col):
    return 1.0 / GIB if FIGURES.get(col, {}).get("unit") == "bytes" else 1.0


def value(row, col):
    v = number(row[col])
    return None if v is None else v * scale(col)


def words(col):
    """A column in words for legends and axes: its documented meaning, shortened; else its name."""
    doc = FIGURES.get(col, {}).get("doc", "")
    if not doc:
        return col
    if doc.startswith("time breakdown: "):
        doc = doc[len("time breakdown: "):]
    doc = doc.split(" (")[0].split(": ")[0]
    return doc if len(doc) <= 48 else col


def axis_label(cols):
    units = unique(unit(c) for c in cols)
    u = units[0] if len(units) == 1 else ""
    text = words(cols[0]) if len(cols) == 1 else ("time" if u == "s" else "")
    if u and u not in ("count",):
        return "{} ({})".format(text, u) if text else u
    return text or " / ".join(cols)


def default_ylabel(ys):
    return axis_label(ys)


def series_values(rows, p):
    if not p["series"]:
        return [None]
    return unique(r[p["series"]] for r in rows)


def in_series(rows, p, s):
    return rows if s is None else [r for r in rows if r[p["series"]] == s]


def series_label(p, y, s, many_y):
    parts = []
    if many_y:
        parts.append(words(y))
    if s is not None:
        parts.append("{} {}".format(p["series"], s))
    return ", ".join(parts) or words(y)


def annotate(ax, x, y, text):
    ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7, alpha=0.8)


def draw_line(ax, p, rows):
    x = p["x"][0]
    numeric_x = all(number(r[x]) is not None for r in rows)
    cats = unique(r[x] for r in rows)
    for y in p["y"]:
        for s in series_values(rows, p):
            sub = in_series(rows, p, s)
            keys = unique(r[x] for r in sub)
            if numeric_x:
                keys.sort(key=number)
            xs = [number(k) * scale(x) if numeric_x else cats.index(k) for k in keys]
            ys = [mean(value(r, y) for r in sub if r[x] == k) for k in keys]
            pts = [(a, b, k) for a, b, k in zip(xs, ys, keys) if b is not None]
            if pts:
                ax.plot([a for a, _, _ in pts], [b for _, b, _ in pts], marker="o",
                        label=series_label(p, y, s, len(p["y"]) > 1))
            if p.get("annotate"):
                for a, b, k in pts:
                    names = unique(r[p["annotate"]] for r in sub if r[x] == k)
                    annotate(ax, a, b, "/".join(names))
    if not numeric_x:
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats, rotation=30, ha="right")
    if p["logx"] and numeric_x:
        ax.set_xscale("log", base=2)
        plain_log_ticks(ax.xaxis)
    if p["logy"]:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)


def draw_bar(ax, p, rows):
    cats = unique(category(r, p["x"]) for r in rows)
    groups = [(y, s) for y in p["y"] for s in series_values(rows, p)]
    width = 0.8 / max(1, len(groups))
    for g, (y, s) in enumerate(groups):
        sub = in_series(rows, p, s)
        heights = [mean(value(r, y) for r in sub if category(r, p["x"]) == c) for c in cats]
        xs = [i - 0.4 + width * (g + 0.5) for i in range(len(cats))]
        ax.bar(xs, [h or 0 for h in heights], width, label=series_label(p, y, s, len(p["y"]) > 1))
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats, rotation=30, ha="right")
    if p["logy"]:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)


def draw_stacked_bar(ax, p, rows):
    cols = p["x"] + ([p["series"]] if p["series"] else [])
    cats = unique(category(r, cols) for r in rows)
    bottom = [0.0] * len(cats)
    for y in p["y"]:
        heights = [mean(value(r, y) for r in rows if category(r, cols) == c) or 0.0 for c in cats]
        ax.bar(range(len(cats)), heights, 0.7, bottom=bottom, label=words(y))
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats, rotation=30, ha="right")


def draw_roofline(ax, p, rows):
    x, y = p["x"][0], p["y"][0]
    pts = [(number(r[x]), number(r[y]), r) for r in rows]
    pts = [t for t in pts if t[0] and t[1]]
    if not pts:
        return
    xs = [a for a, _, _ in pts]
    lo, hi = min(xs) / 2, max(xs) * 2
    roofs = unique((r.get("peak_tflop_per_s"), r.get("peak_hbm_gbyte_per_s")) for _, _, r in pts)
    for peak_text, bw_text in roofs:
        peak, bw = number(peak_text), number(bw_text)
        if not peak or not bw:
            continue
        ridge = peak * 1000.0 / bw  # flop/byte where bandwidth x intensity reaches the compute peak
        grid = sorted({lo, hi, min(max(ridge, lo), hi)})
        # TFLOP/s = GB/s x flop/byte / 1000
        ax.plot(grid, [min(peak, bw * i / 1000.0) for i in grid], linestyle="--", linewidth=1,
                label="roof: {:.4g} TFLOP/s, {:.4g} GB/s".format(peak, bw))
    for s in series_values([r for _, _, r in pts], p):
        sub = [(a, b) for a, b, r in pts if s is None or r[p["series"]] == s]
        ax.scatter([a for a, _ in sub], [b for _, b in sub], zorder=3,
                   label="{} {}".format(p["series"], s) if s is not None else "points")
    if p.get("annotate"):
        # One label per distinct position (series of one kernel often share its intensity).
        done = set()
        for a, b, r in pts:
            key = (r[p["annotate"]], round(a, 6))
            if key not in done:
                done.add(key)
                annotate(ax, a, b, r[p["annotate"]])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)


def plain_log_ticks(axis):
    """Tick labels as plain numbers (64, 128, 0.5) rather than powers, for people reading values off."""
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: "{:g}".format(v)))


DRAW = {"line": draw_line, "bar": draw_bar, "stacked_bar": draw_stacked_bar, "roofline": draw_roofline}


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return BAD_INPUT
    out = argv[1]
    try:
        with open(os.path.join(out, "sweep.json")) as f:
            desc = json.load(f)
        with open(os.path.join(out, "results.csv"), newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("status") == "ok"]
    except (OSError, ValueError) as e:
        print("error: {}: not a sweep output directory ({})".format(out, e), file=sys.stderr)
        return BAD_INPUT
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("warning: matplotlib is not available ({}); install python3-matplotlib".format(e), file=sys.stderr)
        return NO_MATPLOTLIB
    # Same inputs, same files: fixed SVG element ids, no dates or version strings in the metadata.
    matplotlib.rcParams["svg.hashsalt"] = "tpusim"
    metadata = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
    FIGURES.update(desc.get("figures", {}))
    plots_dir = os.path.join(out, "plots")
    os.makedirs(plots_dir, exist_ok=True)
    for p in desc.get("plots", []):
        fig, ax = plt.subplots(figsize=(9.0, 4.8))
        DRAW[p["kind"]](ax, p, rows)
        ax.set_title(p["title"] or default_title(desc.get("name", ""), p), fontsize=11)
        ax.set_xlabel(p["xlabel"] or (axis_label(p["x"]) if p["kind"] in ("line", "roofline") else " / ".join(p["x"])))
        ax.set_ylabel(p["ylabel"] or default_ylabel(p["y"]))
        ax.grid(True, which="major", alpha=0.3)
        if not rows:
            ax.text(0.5, 0.5, "no successful points", transform=ax.transAxes, ha="center")
        elif ax.get_legend_handles_labels()[0]:
            # Beside the axes, not over the data; tight_layout makes room for it.
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
        fig.tight_layout()
        for ext in ("png", "svg"):
            path = os.path.join(plots_dir, "{}.{}".format(p["name"], ext))
            fig.savefig(path, dpi=120, metadata=metadata[ext])
            print("wrote " + path)
        plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
