#!/usr/bin/env python3
"""Renders a tpusim run, or several side by side, as one self-contained HTML page (run by `tpusim report`).

    report_html.py --report REPORT.json [--trace-summary SUMMARY.json] --out PAGE.html
                   [--source DIR] [--note TEXT]
    report_html.py --report A.json --report B.json [...] --comparison COMPARISON.json --out PAGE.html
                   [--source DIR_A --source DIR_B ...] [--note TEXT]

REPORT.json is the run's report.json; SUMMARY.json the `tpusim trace summarize --json` of its trace
(tpusim report computes it). With several reports, COMPARISON.json is `tpusim compare --json` of the
runs (tpusim report computes it) and the page shows the runs side by side: their figures with
differences against the first, and overlaid or paired charts. Every figure is drawn by matplotlib and embedded inline as SVG (text as
paths, ids prefixed per figure), with no script, stylesheet, font or image from elsewhere: the page
works offline. Equal inputs give equal bytes (fixed SVG hash salt, no dates).

Exit codes: 0 ok; 2 bad arguments or input; 3 matplotlib cannot be imported.
"""
import argparse
import html
import io
import json
import re
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch
except ImportError as e:  # tpusim report names the Debian package
    print("report_html.py: matplotlib is not available ({}); install python3-matplotlib".format(e), file=sys.stderr)
    sys.exit(3)

matplotlib.rcParams.update({
    "svg.hashsalt": "tpusim",  # deterministic ids
    "svg.fonttype": "path",  # glyphs as paths: no font needed by the viewer
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
})

GIB = 1024.0 ** 3

# Colours by lane kind / cause (tpusim trace summarize keys), shared by every figure.
KIND_COLOURS = {
    "mxu": "#1f77b4", "vpu": "#2ca02c", "dma_hbm": "#ff7f0e", "ici_transfer": "#9467bd", "barrier": "#8c564b",
    "host": "#d62728", "device_step": "#7f7f7f", "other": "#bcbd22", "wait": "#dddddd",
}
CAUSE_COLOURS = {
    "dma_hbm": "#ff7f0e", "mxu_weights": "#aec7e8", "ici_transfer": "#9467bd", "barrier": "#8c564b",
    "compute": "#2ca02c", "host_compile": "#d62728", "host_transfer": "#e377c2", "host_tracing": "#ff9896",
    "host_other": "#c49c94", "other": "#bcbd22", "nothing": "#dddddd",
}
STEP_COLOURS = {"train": "#1f77b4", "eval": "#ff7f0e"}


# ---- formatting ---------------------------------------------------------------------------------

def esc(s):
    return html.escape(str(s), quote=True)


def dur(s):
    """Seconds for people, with a unit."""
    if s is None:
        return "-"
    a = abs(s)
    if a < 1e-6:
        return "{:.0f} ns".format(s * 1e9)
    if a < 1e-3:
        return "{:.2f} µs".format(s * 1e6)
    if a < 1:
        return "{:.2f} ms".format(s * 1e3)
    if a < 120:
        return "{:.2f} s".format(s)
    return "{} min {:04.1f} s".format(int(s // 60), s % 60)


def pct(x):
    return "{:.1f}%".format(100 * x)


def gib(b):
    return "{:.2f} GiB".format(b / GIB)


def si(v, unit):
    for p in ("", "k", "M", "G", "T", "P"):
        if abs(v) < 1000 or p == "P":
            return "{:.2f} {}{}".format(v, p, unit) if p else "{:g} {}".format(v, unit)
        v /= 1000.0


def table(headers, rows, cls=""):
    out = ['<table class="{}"><thead><tr>'.format(cls)]
    out += ["<th>{}</th>".format(esc(h)) for h in headers]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join("<td>{}</td>".format(esc(c)) for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ---- figures ------------------------------------------------------------------------------------

class Figures:
    """Turns matplotlib figures into inline SVG with ids unique in the page."""

    def __init__(self):
        self.count = 0

    def svg(self, fig, name, caption):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        plt.close(fig)
        text = buf.getvalue()
        text = text[text.index("<svg"):]  # drop the XML declaration and DOCTYPE
        self.count += 1
        prefix = "f{}-".format(self.count)
        ids = set(re.findall(r'\bid="([^"]+)"', text))
        text = re.sub(r'\bid="([^"]+)"', lambda m: 'id="{}{}"'.format(prefix, m.group(1)), text)
        text = re.sub(r'#([A-Za-z_][\w.-]*)', lambda m: "#" + prefix + m.group(1) if m.group(1) in ids else m.group(0),
                      text)
        # Scales with the page; the viewBox keeps the aspect ratio.
        text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1', text, count=1)
        return ('<figure class="fig" data-figure="{}">{}<figcaption>{}</figcaption></figure>'
                .format(esc(name), text, esc(caption)))


BREAKDOWN = [("compile", "compile (XLA, blocks the step)"), ("warmup", "warm-up (program load, upload)"),
             ("host", "host (tracing, dispatch, sync)"), ("device", "device compute"),
             ("allreduce", "gradient all-reduce"), ("eval", "evaluation")]


def fig_breakdown(F, s):
    b = s["breakdown_s"]
    names = BREAKDOWN
    total = s["total_time_s"]
    labels = [n[1] for n in names]
    vals = [b.get(n[0], 0.0) for n in names]
    fig, ax = plt.subplots(figsize=(7.5, 2.6))
    y = range(len(vals))
    ax.barh(list(y), vals, color=["#d62728", "#e377c2", "#ff9896", "#1f77b4", "#9467bd", "#ff7f0e"])
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    for i, v in enumerate(vals):
        ax.text(v, i, "  {} ({})".format(dur(v), pct(v / total) if total else "-"), va="center", fontsize=8)
    ax.set_xlim(0, max(vals + [1e-9]) * 1.45)
    ax.set_title("Where did the time go (total {})".format(dur(total)))
    return F.svg(fig, "breakdown", "Time breakdown of the run; the rows sum to the total (report.json summary.breakdown_s).")


def fig_step_timeline(F, steps):
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 4.6), gridspec_kw={"height_ratios": [1.2, 2]})
    for kind, colour in STEP_COLOURS.items():
        spans = [(st["start_s"], max(st["end_s"] - st["start_s"], 0)) for st in steps if st["kind"] == kind]
        if spans:
            ax.broken_barh(spans, (1.6, 0.8), color=colour, label="{} steps".format(kind))
    comp = [st for st in steps if st["compile"] != "cached" and st["compile_s"] > 0]
    if comp:
        # The compile runs on the host and ends when the step can start.
        ax.broken_barh([(st["start_s"] - st["compile_s"], st["compile_s"]) for st in comp], (0.6, 0.8),
                       color="#d62728", label="compiles")
        ax.plot([st["start_s"] for st in comp], [2.6] * len(comp), "v", color="#d62728", markersize=6)
    ax.set_yticks([1.0, 2.0], ["host compile", "device"])
    ax.set_ylim(0.3, 3.0)
    ax.set_xlabel("run time (s)")
    ax.legend(loc="center left", fontsize=7, frameon=False, bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Step timeline (compiles marked ▼)")

    idx = [st["index"] for st in steps]
    times = [max(st["step_time_s"], 1e-9) for st in steps]
    colours = [STEP_COLOURS.get(st["kind"], "#7f7f7f") for st in steps]
    ax2.bar(idx, times, color=colours, width=1.0 if len(steps) > 60 else 0.8)
    cidx = [st["index"] for st in comp]
    ax2.plot(cidx, [max(st["step_time_s"], 1e-9) for st in comp], "v", color="#d62728", markersize=6,
             label="compiled")
    ax2.set_yscale("log")
    ax2.set_xlabel("step index (report.json steps[])")
    ax2.set_ylabel("step time (s, log)")
    ax2.legend(handles=[Patch(color=c, label=k) for k, c in STEP_COLOURS.items()] +
               [plt.Line2D([], [], marker="v", color="#d62728", linestyle="", label="compiled")],
               fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return F.svg(fig, "step-timeline",
                 "Top: every step's execution on the device (start_s to end_s) and the compiles before them. "
                 "Bottom: step time (end of the previous step to the end of this one), log scale.")


def fig_compiles(F, comp):
    fig, ax = plt.subplots(figsize=(7.5, 0.5 + 0.32 * len(comp) + 0.8))
    labels = ["step {} {} B={} S={}".format(st["index"], st["graph"], st["batch"], st["seq"]) for st in comp]
    vals = [st["compile_s"] for st in comp]
    ax.barh(range(len(comp)), vals, color=["#d62728" if st["compile"] == "compiled" else "#e377c2" for st in comp])
    ax.set_yticks(range(len(comp)), labels)
    ax.invert_yaxis()
    for i, v in enumerate(vals):
        ax.text(v, i, "  " + dur(v), va="center", fontsize=8)
    ax.set_xlim(0, max(vals) * 1.25)
    ax.set_xlabel("compile time (s; the longest of any process)")
    ax.set_title("Compile events")
    return F.svg(fig, "compiles", "Each XLA compile (red) or persistent-cache load (pink), by the step that needed it.")


def program_of(step, programs):
    for p in programs:
        if p["graph"] == step["graph"] and p["batch"] == step["batch"] and p["seq"] == step["seq"]:
            return p
    return None


def fig_memory(F, rep):
    programs, steps = rep["programs"], rep["steps"]
    cap = rep["hw"].get("hbm_bytes_per_core", 0) / GIB
    dev = "chip" if rep["hw"].get("megacore") else "core"  # a megacore chip is one device (v4)
    peak = max([p["peak_hbm_bytes"] / GIB for p in programs] + [1e-9])
    # The core's HBM is drawn when it is near the data; far above it would flatten every bar.
    top = cap * 1.05 if cap and cap < 3 * peak else peak * 1.3
    cap_note = "" if not cap or cap < 3 * peak else " (HBM per {}: {:.1f} GiB, off scale)".format(dev, cap)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.5, 2.2 + 0.35 * max(len(programs), 3)),
                                  gridspec_kw={"width_ratios": [1, 1.3]})
    names = [p["name"] for p in programs]
    ax.barh(range(len(programs)), [p["peak_hbm_bytes"] / GIB for p in programs], color="#1f77b4",
            label="peak (temporaries included)")
    ax.barh(range(len(programs)), [p["persistent_bytes"] / GIB for p in programs], color="#aec7e8",
            label="persistent (parameters, optimizer state)")
    ax.set_yticks(range(len(programs)), names)
    ax.invert_yaxis()
    if cap and not cap_note:
        ax.axvline(cap, color="#d62728", linestyle="--", label="HBM per " + dev)
    ax.set_xlim(0, top)
    ax.set_xlabel("GiB per " + dev + cap_note)
    ax.set_title("Peak HBM per program")
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.45))

    # Memory in use over time: persistent buffers (parameters, optimizer state: the same tensors in
    # every program) stay resident once created; a step adds its program's temporaries.
    xs, ys, px, py = [0.0], [0.0], [], []
    resident = 0.0
    for st in steps:
        p = program_of(st, programs)
        if p is None:
            continue
        resident = max(resident, p["persistent_bytes"] / GIB)
        during = resident + (p["peak_hbm_bytes"] - p["persistent_bytes"]) / GIB
        xs += [st["start_s"], st["end_s"]]
        ys += [during, resident]
        px.append(st["start_s"])
        py.append(during)
    top = max(top, max(ys) * 1.15)
    ax2.step(xs, ys, where="post", color="#1f77b4", linewidth=1.2, label="in use")
    ax2.plot(px, py, "o", color="#1f77b4", markersize=3)
    if cap and not cap_note:
        ax2.axhline(cap, color="#d62728", linestyle="--", label="HBM per " + dev)
    ax2.set_ylim(0, top)
    ax2.set_xlabel("run time (s)")
    ax2.set_ylabel("GiB per " + dev)
    ax2.set_title("HBM over time (upper bound)")
    ax2.legend(fontsize=7, frameon=False, loc="upper left")
    fig.tight_layout()
    return F.svg(fig, "memory",
                 "Left: each program's peak HBM per " + dev + " and its persistent part. Right: HBM in use over the run, "
                 "derived from steps[] and programs[] (matched by graph and shape): persistent buffers (parameters, "
                 "optimizer state) stay resident once created, and each step adds its program's temporaries "
                 "(peak minus persistent; a dot per step)." + cap_note)


def fig_kernel_bounds(F, s):
    fig, ax = plt.subplots(figsize=(7, 2.0))
    labels = ["device (simulated)", "ideal compute", "ideal HBM"]
    vals = [s["device_cycles"], s["ideal_compute_cycles"], s["ideal_hbm_cycles"]]
    ax.barh(range(3), vals, color=["#1f77b4", "#2ca02c", "#ff7f0e"])
    ax.set_yticks(range(3), labels)
    ax.invert_yaxis()
    for i, v in enumerate(vals):
        ax.text(v, i, "  {:,} cycles".format(int(v)), va="center", fontsize=8)
    ax.set_xlim(0, max(vals) * 1.35)
    ax.set_xlabel("core cycles")
    ax.set_title("Device time against its lower bounds")
    return F.svg(fig, "bounds", "The simulated device cycles against the compute bound (FLOPs at MXU peak) and the "
                               "HBM bound (compulsory bytes at HBM peak).")


def block_rows(blocks):
    """(name, utilization) per block, HBM channels collapsed into their mean over the busy ones."""
    rows, groups = [], {}
    for name, stats in blocks.items():
        u = stats.get("utilization")
        if not isinstance(u, dict) or not isinstance(u.get("value"), (int, float)):
            continue
        m = re.match(r"^(.*\.ch)(\d+)$", name)
        if m:
            groups.setdefault(m.group(1), []).append((int(m.group(2)), u["value"]))
        else:
            rows.append((name, u["value"]))
    for prefix, members in sorted(groups.items()):
        busy = [v for _, v in members if v > 0]
        idx = [i for i, _ in members]
        rows.append(("{}{}..{} (mean of {} busy)".format(prefix, min(idx), max(idx), len(busy)),
                     sum(busy) / len(busy) if busy else 0.0))
    return rows


def fig_blocks(F, rows):
    fig, ax = plt.subplots(figsize=(7.5, 0.6 + 0.3 * len(rows)))
    ax.barh(range(len(rows)), [100 * u for _, u in rows], color="#1f77b4")
    ax.set_yticks(range(len(rows)), [n for n, _ in rows])
    ax.invert_yaxis()
    for i, (_, u) in enumerate(rows):
        ax.text(100 * u, i, "  " + pct(u), va="center", fontsize=8)
    ax.set_xlim(0, 115)
    ax.set_xlabel("utilization (%)")
    ax.set_title("Utilization per block (report.json blocks)")
    return F.svg(fig, "blocks", "Each block's utilization stat over the run (its definition is in report.json).")


def collapse_alike(rows, key):
    """Device-step lanes with equal figures (every core runs the same step) as one row, at the first."""
    out, first = [], {}
    for r in rows:
        k = key(r) if r["kind"] == "device_step" else None
        if k is not None and k in first:
            out[first[k]][1] += 1
            continue
        if k is not None:
            first[k] = len(out)
        out.append([r, 1])
    return [dict(r, lane=r["lane"] + (" (+{} alike)".format(n - 1) if n > 1 else "")) for r, n in out]


def fig_lanes(F, summ, title="Utilization per lane (trace)", caption=None, xlabel="utilization over the trace window (%)"):
    lanes = collapse_alike(summ["lanes"], lambda l: (l["busy_us"], l["operations"]))
    fig, ax = plt.subplots(figsize=(7.5, 0.7 + 0.24 * len(lanes)))
    ax.barh(range(len(lanes)), [100 * l["utilization"] for l in lanes],
            color=[KIND_COLOURS.get(l["kind"], "#7f7f7f") for l in lanes])
    ax.set_yticks(range(len(lanes)), [l["lane"] for l in lanes], fontsize=7)
    ax.invert_yaxis()
    for i, l in enumerate(lanes):
        ax.text(100 * l["utilization"], i, "  {} busy".format(dur(l["busy_us"] / 1e6)), va="center", fontsize=7)
    ax.set_xlim(0, 125)
    ax.set_xlabel(xlabel)
    kinds = sorted({l["kind"] for l in lanes}, key=list(KIND_COLOURS).index)
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=summ["labels"]["kinds"].get(k, k)) for k in kinds],
              fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(title)
    return F.svg(fig, "lanes", caption or "Busy time of each trace lane (union of its operations) over the trace "
                 "window of {}.".format(dur(summ["window_us"]["length"] / 1e6)))


def fig_critical_path(F, summ):
    paths = summ["critical_paths"]
    if len(paths) > 30:
        paths = sorted(sorted(paths, key=lambda p: -p["span_us"])[:30], key=lambda p: p["step"] or 0)
    kinds = [k for k in KIND_COLOURS if k != "wait"]
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.3 * len(paths)))
    labels = []
    for i, p in enumerate(paths):
        left = 0.0
        for k in kinds + ["wait"]:
            v = p["wait_us"] if k == "wait" else p["by_kind_us"].get(k, 0.0)
            share = 100 * v / p["span_us"] if p["span_us"] else 0
            if share > 0:
                ax.barh(i, share, left=left, color=KIND_COLOURS[k])
                left += share
        labels.append("window" if p["step"] is None else
                      "step {} {}".format(p["step"], p["program"]).strip())
        ax.text(101, i, dur(p["span_us"] / 1e6), va="center", fontsize=7)
    ax.set_yticks(range(len(paths)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 115)
    ax.set_xlabel("share of the critical path's span (%)")
    used = [k for k in kinds if any(p["by_kind_us"].get(k, 0) > 0 for p in paths)]
    if any(p["wait_us"] > 0 for p in paths):
        used.append("wait")
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=summ["labels"]["kinds"].get(k, k)) for k in used],
              fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Critical path by lane kind")
    return F.svg(fig, "critical-path",
                 "Composition of each critical path (heuristic: back from the operation that finishes last through "
                 "the operation that ends latest before each one starts; docs/traces.md). Span on the right.")


def fig_idle(F, summ):
    idle = collapse_alike([i for i in summ["idle"] if i["idle_us"] > 0],
                          lambda i: (i["idle_us"], i["measured_us"], tuple(sorted(i["by_cause_us"].items()))))
    causes = list(CAUSE_COLOURS)
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.28 * len(idle)))
    for i, li in enumerate(idle):
        left = 0.0
        for c in causes:
            v = li["by_cause_us"].get(c, 0.0)
            share = 100 * v / li["measured_us"] if li["measured_us"] else 0
            if share > 0:
                ax.barh(i, share, left=left, color=CAUSE_COLOURS[c])
                left += share
        ax.text(left, i, "  {} idle".format(dur(li["idle_us"] / 1e6)), va="center", fontsize=7)
    ax.set_yticks(range(len(idle)), [li["lane"] for li in idle], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 125)
    ax.set_xlabel("idle share of the measured time (%)")
    used = [c for c in causes if any(li["by_cause_us"].get(c, 0) > 0 for li in idle)]
    ax.legend(handles=[Patch(color=CAUSE_COLOURS[c], label=summ["labels"]["causes"].get(c, c)) for c in used],
              fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Idle time of compute lanes, by what else was busy")
    return F.svg(fig, "idle", "Each idle instant of a compute lane is attributed to the first busy cause in priority "
                              "order (DMA/HBM, MXU weights, ICI/transfers, barrier, compute, host compile, host "
                              "transfer, host tracing), else 'nothing else busy'.")


# ---- sections -----------------------------------------------------------------------------------

def units_of(rep, path):
    return rep.get("units", {}).get(path, "")


def summary_rows(rep, keys):
    s = rep["summary"]
    rows = []
    for key, label, fmt in keys:
        if key in s:
            unit = units_of(rep, "summary." + key)
            rows.append((label, fmt(s[key]), "summary.{}{}".format(key, " ({})".format(unit) if unit else "")))
    return rows


def training_sections(F, rep):
    s = rep["summary"]
    out = []
    keys = [
        ("total_time_s", "total time", dur), ("steady_step_time_s", "steady step time", dur),
        ("steady_examples_per_s", "steady throughput", lambda v: "{:.1f} examples/s".format(v)),
        ("examples_per_s", "end-to-end throughput", lambda v: "{:.1f} examples/s".format(v)),
        ("compiles", "compiles (busiest process)", str), ("compile_time_s", "compile time (busiest process)", dur),
        ("warmup_time_s", "warm-up", dur), ("upload_time_s", "parameter upload", dur),
        ("peak_hbm_bytes", "peak HBM per " + ("chip" if rep["hw"].get("megacore") else "core"), gib), ("mxu_utilization", "MXU utilization while executing", pct),
        ("mfu", "MFU (steady steps)", pct), ("allreduce_share", "all-reduce share of steady device time", pct),
        ("padding_waste", "padding waste", pct), ("train_steps", "train steps", str), ("eval_steps", "eval steps", str),
    ]
    out.append(section("summary", "Summary", table(["figure", "value", "report.json field (unit)"], summary_rows(rep, keys))))
    b = s["breakdown_s"]
    brows = [(label, dur(b.get(k, 0.0)), pct(b.get(k, 0.0) / s["total_time_s"]) if s["total_time_s"] else "-")
             for k, label in BREAKDOWN]
    brows.append(("total", dur(s["total_time_s"]), "100.0%"))
    out.append(section("breakdown", "Where did the time go", fig_breakdown(F, s) +
                       table(["part", "time", "share"], brows)))
    steps = rep.get("steps", [])
    if steps:
        out.append(section("steps", "Step timeline", fig_step_timeline(F, steps)))
        comp = [st for st in steps if st["compile"] != "cached" and st["compile_s"] > 0]
        if comp:
            crow = [(st["index"], st["kind"], st["graph"], "B={} S={}".format(st["batch"], st["seq"]), st["compile"],
                     dur(st["compile_s"]), st.get("compiling_processes", "")) for st in comp]
            out.append(section("compiles", "Compile events ({}, {} in total)".format(
                len(comp), dur(sum(st["compile_s"] for st in comp))),
                fig_compiles(F, comp) + table(["step", "kind", "graph", "shape", "compile", "time",
                                               "compiling processes"], crow)))
    if rep.get("programs"):
        out.append(section("memory", "Memory", fig_memory(F, rep)))
        prow = [(p["name"], p["executions"], dur(p["compile_s"]), dur(p["device_s"]), gib(p["peak_hbm_bytes"]),
                 gib(p["persistent_bytes"]), si(p["flops"], "FLOP")) for p in rep["programs"]]
        out.append(section("programs", "Programs", table(
            ["program", "executions", "compile", "device time", "peak HBM/core", "persistent/core", "flops/core"], prow)))
    return out


def kernel_sections(F, rep):
    s = rep["summary"]
    keys = [
        ("device_cycles", "device cycles", lambda v: "{:,}".format(v)), ("device_time_s", "device time", dur),
        ("flops", "flops", lambda v: si(v, "FLOP")),
        ("achieved_tflop_per_s", "achieved", lambda v: "{:.2f} TFLOP/s".format(v)),
        ("peak_tflop_per_s", "peak (bf16)", lambda v: "{:.2f} TFLOP/s".format(v)),
        ("mxu_utilization", "MXU utilization", pct), ("hbm_bytes", "HBM traffic", lambda v: si(v, "B")),
        ("achieved_hbm_gbyte_per_s", "HBM bandwidth", lambda v: "{:.1f} GB/s".format(v)),
        ("hbm_bandwidth_utilization", "HBM bandwidth utilization", pct),
        ("ideal_bound_fraction", "ideal bound / device time", pct), ("fusions", "fusions", str),
        ("instructions", "instructions", lambda v: "{:,}".format(v)),
    ]
    out = [section("summary", "Summary", table(["figure", "value", "report.json field (unit)"], summary_rows(rep, keys)))]
    out.append(section("bounds", "Device time and its bounds", fig_kernel_bounds(F, s)))
    rows = block_rows(rep.get("blocks", {}))
    if rows:
        out.append(section("blocks", "Blocks", fig_blocks(F, rows)))
    return out


def trace_sections(F, summ, detail=None, detail_label=""):
    out = []
    w = summ["window_us"]
    intro = "<p>From {} ({}{} operations on {} lanes), window from {} to {} of the run.</p>".format(
        esc(summ["trace"]["file"]), "gzip, " if summ["trace"]["gzip"] else "", summ["trace"]["operations"],
        summ["trace"]["lanes"], esc(dur(w["from"] / 1e6)), esc(dur(w["to"] / 1e6)))
    lrow = [(l["lane"], summ["labels"]["kinds"].get(l["kind"], l["kind"]), l["operations"], dur(l["busy_us"] / 1e6),
             pct(l["utilization"]), si(l["bytes"], "B") if l["bytes"] else "-") for l in summ["lanes"]]
    body = intro + fig_lanes(F, summ)
    if detail and detail["lanes"]:
        # A training trace has unit-level detail for a few ms of a long run: over the whole window its
        # MXU/VPU/DMA lanes look idle, so they are shown over one step's detail as well.
        dw = detail["window_us"]
        body += fig_lanes(F, detail, "Utilization per lane during the unit detail of {}".format(detail_label),
                          "The same over {} to {} ({}), the span of {}'s unit-level operations in the trace "
                          "(tpusim trace summarize --window gives it too).".format(
                              dur(dw["from"] / 1e6), dur(dw["to"] / 1e6), dur(dw["length"] / 1e6), detail_label),
                          "utilization over that span (%)")
    out.append(section("lanes", "Utilization per lane", body +
                       table(["lane", "kind", "ops", "busy", "utilization", "bytes"], lrow)))
    if summ["critical_paths"]:
        out.append(section("critical-path", "Critical path", fig_critical_path(F, summ)))
    if any(i["idle_us"] > 0 for i in summ["idle"]):
        grow = [(g["lane"] + (" (+{} lanes)".format(g["same_lanes"] - 1) if g["same_lanes"] > 1 else ""),
                 dur(g["start_us"] / 1e6), dur(g["dur_us"] / 1e6), g["cause_label"]) for g in summ["gaps"]]
        out.append(section("idle", "Idle gaps of compute lanes", fig_idle(F, summ) +
                           "<h3>Longest gaps ({} of {})</h3>".format(len(grow), summ["gaps_total"]) +
                           table(["lane", "start", "duration", "likely cause"], grow)))
    if summ["top_operations"]:
        trow = [(dur(o["dur_us"] / 1e6), o["lane"], dur(o["start_us"] / 1e6),
                 "-" if o["step"] is None else o["step"], o["name"]) for o in summ["top_operations"]]
        out.append(section("top-ops", "Longest operations", table(["duration", "lane", "start", "step", "name"], trow)))
    return out


# ---- several runs -------------------------------------------------------------------------------

RUN_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def run_letter(i):
    return chr(ord("A") + min(i, 25))


def run_colour(i):
    return RUN_COLOURS[i % len(RUN_COLOURS)]


def value_text(v, unit):
    """A comparison value (base unit, tpusim compare --json) for people."""
    if v is None:
        return "-"
    if unit == "s":
        return dur(v)
    if unit == "bytes":
        return gib(v) if abs(v) >= GIB else "{:.1f} MiB".format(v / 1024.0 ** 2)
    if unit == "fraction":
        return pct(v)
    if unit == "count":
        return "{:.0f}".format(v)
    return "{:.4g} {}".format(v, unit)


def diff_text(d, rel, unit):
    if d is None:
        return "-"
    sign = "+" if d >= 0 else "−"
    text = sign + ("{:.1f} pp".format(abs(100 * d)) if unit == "fraction" else value_text(abs(d), unit))
    return text + (" ({:+.1f}%)".format(100 * rel) if rel is not None else "")


def comparison_table(cmp):
    runs = cmp["runs"]
    headers = ["figure", "unit"] + ["{} ({})".format(run_letter(0), "baseline")] + \
        ["{} (vs A)".format(run_letter(i)) for i in range(1, len(runs))]
    section_name, rows = None, []
    for r in cmp["rows"]:
        if r["section"] != section_name:
            section_name = r["section"]
            rows.append(("[{}]".format(section_name), "") + ("",) * len(runs))
        cells = [value_text(r["values"][0], r["unit"])]
        for i in range(1, len(runs)):
            cells.append("{} {}".format(value_text(r["values"][i], r["unit"]),
                                        "" if r["values"][i] is None else
                                        "[" + diff_text(r["diff"][i], r["rel_diff"][i], r["unit"]) + "]"))
        rows.append((r["name"], r["unit"]) + tuple(cells))
    return table(headers, rows, "compare")


def fig_multi_steps(F, reps):
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for i, rep in enumerate(reps):
        steps = [st for st in rep.get("steps", []) if st.get("kind") == "train"]
        if steps:
            ax.plot([st["index"] for st in steps], [max(st["step_time_s"], 1e-9) for st in steps], "-",
                    color=run_colour(i), linewidth=1.0, label=run_letter(i), drawstyle="steps-mid")
    ax.set_yscale("log")
    ax.set_xlabel("step index (report.json steps[])")
    ax.set_ylabel("train step time (s, log)")
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Train step times, overlaid")
    return F.svg(fig, "multi-steps", "Each run's train step times (end of the previous step to the end of this one); "
                                     "the spikes are compiles and first executions.")


def fig_multi_breakdown(F, reps, idx):
    colours = ["#d62728", "#e377c2", "#ff9896", "#1f77b4", "#9467bd", "#ff7f0e"]
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * len(idx)))
    for row, i in enumerate(idx):
        b, left = reps[i]["summary"]["breakdown_s"], 0.0
        for (key, _), c in zip(BREAKDOWN, colours):
            v = b.get(key, 0.0)
            ax.barh(row, v, left=left, color=c)
            left += v
        ax.text(left, row, "  " + dur(left), va="center", fontsize=8)
    ax.set_yticks(range(len(idx)), [run_letter(i) for i in idx])
    ax.invert_yaxis()
    ax.set_xlim(0, max(reps[i]["summary"]["total_time_s"] for i in idx) * 1.2 or 1)
    ax.set_xlabel("time (s)")
    ax.legend(handles=[Patch(color=c, label=label) for (_, label), c in zip(BREAKDOWN, colours)], fontsize=7,
              frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Where did the time go, per run")
    return F.svg(fig, "multi-breakdown", "Each run's time breakdown (summary.breakdown_s), stacked; the bar's length "
                                         "is the run's total time.")


MEMORY_PARTS = [("parameter_bytes", "parameters", "#1f77b4"), ("gathered_parameter_bytes", "gathered parameters", "#aec7e8"),
                ("gradient_bytes", "gradients", "#2ca02c"), ("optimizer_state_bytes", "optimizer state", "#ff7f0e"),
                ("activation_bytes", "activations", "#9467bd")]


def fig_multi_memory(F, reps, idx):
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * len(idx)))
    for row, i in enumerate(idx):
        m, left = reps[i]["summary"].get("memory", {}), 0.0
        for key, _, c in MEMORY_PARTS:
            v = m.get(key, 0) / GIB
            ax.barh(row, v, left=left, color=c)
            left += v
        ax.text(left, row, "  " + gib(reps[i]["summary"].get("peak_hbm_bytes", 0)), va="center", fontsize=8)
    ax.set_yticks(range(len(idx)), [run_letter(i) for i in idx])
    ax.invert_yaxis()
    ax.set_xlim(0, max(reps[i]["summary"].get("peak_hbm_bytes", 0) / GIB for i in idx) * 1.25 or 1)
    ax.set_xlabel("GiB per device")
    ax.legend(handles=[Patch(color=c, label=label) for _, label, c in MEMORY_PARTS], fontsize=7, frameon=False,
              loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Peak HBM per device, per run")
    return F.svg(fig, "multi-memory", "Each run's HBM per device at its peak (summary.memory), by what holds it.")


def fig_multi_kernels(F, cmp):
    rows = [r for r in cmp["rows"] if r["section"] == "kernels"][:12]
    n = len(cmp["runs"])
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.22 * n * len(rows)))
    h = 0.8 / n
    for i in range(n):
        ax.barh([k + i * h for k in range(len(rows))], [1e3 * (r["values"][i] or 0) for r in rows], height=h,
                color=run_colour(i), label=run_letter(i))
    ax.set_yticks([k + 0.4 - h / 2 for k in range(len(rows))], [r["name"] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ms per execution")
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Costliest kernels, paired")
    return F.svg(fig, "multi-kernels", "The costliest kernels of each run's op profile (a training run's main train "
                                       "program; a layer's copies as one row), matched by name; a missing bar: the "
                                       "run has no such kernel.")


def multi_page(F, reps, cmp, sources):
    runs = cmp["runs"]
    rrows = []
    for i, (rep, r) in enumerate(zip(reps, runs)):
        w, hw = rep["workload"], rep["hw"]
        what = "{} {}".format(w.get("model", ""), w.get("task", "")) if r["kind"] == "training" else \
            "{} kernel".format(w.get("kernel", ""))
        rrows.append((run_letter(i), sources[i] if i < len(sources) else r["dir"], r["workload"], what.strip(),
                      hw.get("name", ""), rep.get("run", {}).get("engine", ""), rep["tpusim"].get("config_hash", "")))
    body = [section("runs", "Runs", table(["run", "directory", "workload", "what", "hardware", "engine",
                                           "config hash"], rrows))]
    notes = "".join('<p class="note">{}</p>'.format(esc(n)) for n in cmp.get("notes", []))
    body.append(section("figures", "Figures side by side", notes + "<p>Differences against run A, in brackets.</p>" +
                        comparison_table(cmp)))
    training = [i for i, r in enumerate(runs) if r["kind"] == "training"]
    if training:
        body.append(section("steps", "Step times", fig_multi_steps(F, reps)))
        body.append(section("breakdown", "Where did the time go", fig_multi_breakdown(F, reps, training)))
        if any("memory" in reps[i]["summary"] for i in training):
            body.append(section("memory", "Memory", fig_multi_memory(F, reps, training)))
    if any(r["section"] == "kernels" for r in cmp["rows"]):
        body.append(section("kernels", "Costliest kernels", fig_multi_kernels(F, cmp)))
    title = "{} runs: {}".format(len(runs), ", ".join("{} {}".format(run_letter(i), r["workload"])
                                                      for i, r in enumerate(runs)))
    return title, body


def section(sid, title, body):
    return '<section id="{}"><h2>{}</h2>{}</section>'.format(esc(sid), esc(title), body)


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;
color:#222;line-height:1.4}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;
margin-top:1.6em}h3{font-size:1em}
.meta{color:#555;font-size:.9em}.note{background:#fff4e5;border-left:4px solid #ff7f0e;padding:.4em .8em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}th,td{border:1px solid #ddd;padding:.2em .6em;
text-align:left}th{background:#f4f4f4}td:nth-child(n+2){font-variant-numeric:tabular-nums}
figure.fig{margin:.8em 0}figure.fig svg{max-width:100%;height:auto;display:block}
figcaption{color:#555;font-size:.85em;max-width:60em}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--report", required=True, action="append")
    ap.add_argument("--comparison", help="tpusim compare --json of the reports (several reports)")
    ap.add_argument("--trace-summary")
    ap.add_argument("--detail-summary", help="the same summary over one training step's unit detail")
    ap.add_argument("--detail-label", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--source", action="append", default=[])
    ap.add_argument("--note", action="append", default=[])
    a = ap.parse_args()
    try:
        reps = []
        for path in a.report:
            with open(path, encoding="utf-8") as f:
                reps.append(json.load(f))
        rep = reps[0]
        cmp = None
        if len(reps) > 1:
            if not a.comparison:
                print("report_html.py: several reports need --comparison", file=sys.stderr)
                return 2
            with open(a.comparison, encoding="utf-8") as f:
                cmp = json.load(f)
        summ = detail = None
        if a.trace_summary:
            with open(a.trace_summary, encoding="utf-8") as f:
                summ = json.load(f)
        if a.detail_summary:
            with open(a.detail_summary, encoding="utf-8") as f:
                detail = json.load(f)
    except (OSError, ValueError) as e:
        print("report_html.py: {}".format(e), file=sys.stderr)
        return 2

    F = Figures()
    w, hw = rep["workload"], rep["hw"]
    kind = w.get("kind", "")
    if cmp is not None:
        title, body = multi_page(F, reps, cmp, a.source)
        meta = "Run A is the baseline; every figure of the other runs is compared with it."
        prov = "tpusim {}{}".format(rep["tpusim"].get("version", ""),
                                    " · from " + ", ".join(a.source) if a.source else "")
        return write_page(a, title, meta, prov, "".join('<p class="note">{}</p>'.format(esc(n)) for n in a.note),
                          body, F)
    if kind == "training":
        title = "{} {} on {}".format(w.get("model", ""), w.get("task", ""), hw.get("name", ""))
        meta = "{}, {} processes, per-device batch {}, padding {}, precision {}, {} epochs".format(
            w.get("framework", ""), w.get("processes", ""), w.get("per_device_batch_size", ""), w.get("padding", ""),
            w.get("precision", ""), w.get("epochs", ""))
        body = training_sections(F, rep)
    else:
        title = "{} kernel ({}) on {}".format(w.get("kernel", ""), w.get("name", ""), hw.get("name", ""))
        meta = "shape {}, {}, precision {}".format(
            " ".join("{}={}".format(k, v) for k, v in w.get("shape", {}).items()), w.get("dtype", ""),
            w.get("precision", ""))
        body = kernel_sections(F, rep)
    if summ and summ["lanes"]:
        body += trace_sections(F, summ, detail, a.detail_label)
    elif summ:
        a.note.append("The trace has no operations: no lane figures.")
    run = rep.get("run", {})
    prov = "tpusim {} · {} · engine {} · {} + {}{}".format(
        rep["tpusim"].get("version", ""), rep["tpusim"].get("config_hash", ""), run.get("engine", ""),
        run.get("hw_file", ""), run.get("workload_file", ""), " · from " + a.source[0] if a.source else "")
    notes = "".join('<p class="note">{}</p>'.format(esc(n)) for n in a.note)
    if not summ and not a.note:
        notes += '<p class="note">No trace in the run directory: run with <code>--trace</code> for lane ' \
                 'utilization, critical paths and idle gaps.</p>'
    return write_page(a, title, meta, prov, notes, body, F)


def write_page(a, title, meta, prov, notes, body, F):
    page = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>tpusim report: {t}</title><style>{css}</style></head><body>'
            '<h1>tpusim report: {t}</h1><p class="meta">{m}</p><p class="meta">{p}</p>{n}{b}'
            '<footer class="meta"><p>{c} figures drawn with matplotlib; generated by <code>tpusim report</code>.'
            '</p></footer></body></html>\n').format(t=esc(title), css=CSS, m=esc(meta), p=esc(prov), n=notes,
                                                    b="".join(body), c=F.count)
    try:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        print("report_html.py: {}".format(e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
