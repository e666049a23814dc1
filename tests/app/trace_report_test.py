#!/usr/bin/env python3
"""Smoke tests of `tpusim trace summarize`, bounded traces (`run --trace-lanes/--trace-window/
--trace-gzip/--trace-detail-ops`) and `tpusim report`, one ctest test per function.

    trace_report_test.py TPUSIM SOURCE_DIR TEST [ARGS...]

Shares app_test.py's harness (a fresh temporary directory per test, failures naming the command).
Exit codes: 0 pass, 1 fail, 77 skipped (chromium missing; ctest SKIP_RETURN_CODE).
"""
import gzip
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import app_test  # noqa: E402
from app_test import Failure, check, expect_bad_input, run, write  # noqa: E402

SKIP = 77


def esc(s):
    return html.escape(s, quote=True)

# A small training run: bert-tiny, a few steps with a compile each for train and eval.
TINY = """kind: training
model: bert-tiny
dataset: {train: 'fixed:40:64', eval: 'fixed:30:16'}
max_length: 64
padding: longest
per_device_batch_size: 4
eval_per_device_batch_size: 8
epochs: 1
"""


class Skip(Exception):
    pass


def kernel_trace(tmp, extra=()):
    out = os.path.join(tmp, "kernel")
    run(["run", "--workload", app_test.KERNEL, "--engine", "analytical", "--out", out, "--trace", "--quiet"] +
        list(extra), tmp)
    return out


def training_trace(tmp, name="train", extra=()):
    wl = write(tmp, "tiny.yaml", TINY)
    out = os.path.join(tmp, name)
    run(["run", "--workload", wl, "--out", out, "--trace", "--quiet"] + list(extra), tmp)
    return out


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f)
    ev = data["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    xs = [(procs[e["pid"]], threads[(e["pid"], e["tid"])], e) for e in ev if e.get("ph") == "X"]
    return data, xs


def summarize(tmp, args):
    proc, where = run(["trace", "summarize"] + args + ["--json"], tmp)
    try:
        return json.loads(proc.stdout), where
    except ValueError as e:
        raise Failure("--json output is not JSON: {}\n{}".format(e, where))


def union_us(spans):
    """Total length of the union of (start, end) spans, in ns-rounded µs."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted((round(a * 1000), round(b * 1000)) for a, b in spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total / 1000.0


# ---- trace summarize ----------------------------------------------------------------------------

def test_summarize_kernel(tmp):
    """On a kernel trace: busy time of a lane equals the union of its events computed here, utilization
    is busy over the window, the critical path's parts sum to its span, top-N is longest first."""
    out = kernel_trace(tmp)
    path = os.path.join(out, "trace.json")
    _, xs = load_trace(path)
    s, where = summarize(tmp, [path, "--top", "5"])
    window = s["window_us"]
    starts = [e["ts"] for _, _, e in xs]
    ends = [e["ts"] + e["dur"] for _, _, e in xs]
    check(abs(window["from"] - min(starts)) < 1e-3 and abs(window["to"] - max(ends)) < 1e-3,
          "window {} is not the events' span".format(window), where)
    lanes = {l["lane"]: l for l in s["lanes"]}
    for lane in ("slice.chip0.core0.mxu0", "slice.chip0.core0.vpu", "slice.chip0.core0.dma0"):
        p, t = lane.split(".core0.")[0], "core0." + lane.split(".core0.")[1]
        spans = [(e["ts"], e["ts"] + e["dur"]) for pp, tt, e in xs if pp == p and tt == t]
        check(lane in lanes, "no lane {} in {}".format(lane, sorted(lanes)), where)
        expect = union_us(spans)
        check(abs(lanes[lane]["busy_us"] - expect) < 1e-3,
              "{} busy {} µs, the union of its events is {} µs".format(lane, lanes[lane]["busy_us"], expect), where)
        check(lanes[lane]["operations"] == len(spans), "{} operations differ".format(lane), where)
        check(abs(lanes[lane]["utilization"] - expect / window["length"]) < 1e-6, "utilization of " + lane, where)
    check(lanes["slice.chip0.core0.mxu0"]["kind"] == "mxu" and lanes["slice.chip0.core0.dma0"]["kind"] == "dma_hbm",
          "lane kinds", where)
    (p,) = s["critical_paths"]
    parts = sum(p["by_kind_us"].values()) + p["wait_us"]
    check(abs(parts - p["span_us"]) < 1e-2, "critical path parts {} != span {}".format(parts, p["span_us"]), where)
    check(p["by_kind_us"].get("mxu", 0) > 0 and p["by_kind_us"].get("dma_hbm", 0) > 0, "path composition", where)
    durs = [o["dur_us"] for o in s["top_operations"]]
    check(len(durs) == 5 and durs == sorted(durs, reverse=True), "top operations {}".format(durs), where)
    check(max(e["dur"] for _, _, e in xs) == durs[0], "the longest operation is not first", where)
    idle = {i["lane"]: i for i in s["idle"]}
    mxu = idle["slice.chip0.core0.mxu0"]
    check(abs(mxu["idle_us"] - (window["length"] - lanes["slice.chip0.core0.mxu0"]["busy_us"])) < 1e-2,
          "mxu idle + busy != window", where)
    check(abs(sum(mxu["by_cause_us"].values()) - mxu["idle_us"]) < 1e-2, "causes do not sum to the idle time", where)
    # The text form: every section, figures with units.
    proc, where = run(["trace", "summarize", path], tmp)
    for needle in ("lanes: busy time", "critical path", "top 10 operations", "idle time of compute lanes",
                   "longest idle gaps", " µs", "%"):
        check(needle in proc.stdout, "text output lacks {!r}".format(needle), where)


def test_summarize_training(tmp):
    """On a training trace: per-step critical paths with the host's compile, step-lane gaps caused by
    the compile, --steps and --lanes selections; a directory stands for its trace."""
    out = training_trace(tmp)
    s, where = summarize(tmp, [out])
    check(s["trace"]["other_data"].get("config_hash", "").startswith("fnv1a64:"), "no config hash in otherData", where)
    paths = {p["step"]: p for p in s["critical_paths"]}
    check(0 in paths, "no critical path of step 0: {}".format(sorted(paths)), where)
    p0 = paths[0]
    check(p0["host_us"].get("compile", 0) > 0.5 * p0["span_us"], "step 0's path is not mostly compile: {}".format(p0),
          where)
    check(p0["unit_detail"] in ("full", "partial"), "step 0 has no unit detail", where)
    gaps = s["gaps"]
    check(gaps and gaps[0]["cause"] == "host_compile" and gaps[0]["lane"].endswith(".step"),
          "the longest gap is not a step lane waiting for a compile: {}".format(gaps[:2]), where)
    check(gaps[0]["same_lanes"] == 8, "the first gap should be every core's ({}).".format(gaps[0]["same_lanes"]), where)
    s1, where = summarize(tmp, [out, "--steps", "1:2"])
    check([p["step"] for p in s1["critical_paths"]] == [1], "--steps 1:2 paths", where)
    check(s1["window_us"]["from"] >= s["window_us"]["from"] and s1["window_us"]["length"] < s["window_us"]["length"],
          "--steps did not narrow the window", where)
    sh, where = summarize(tmp, [out, "--lanes", "host*"])
    check(sh["lanes"] and all(l["lane"].startswith("host0.") for l in sh["lanes"]), "--lanes host*", where)
    sw, where = summarize(tmp, [out, "--window", "0:1ms"])
    check(abs(sw["window_us"]["to"] - 1000) < 1e-6 and sw["window_us"]["from"] == 0, "--window 0:1ms", where)


def test_summarize_bad_input(tmp):
    out = kernel_trace(tmp)
    path = os.path.join(out, "trace.json")
    expect_bad_input(tmp, ["trace", "summarize", "no/such/trace.json"], ["no/such/trace.json", "no such file",
                                                                        "tpusim run --trace"])
    notjson = write(tmp, "notjson.json", "this is not json\n")
    expect_bad_input(tmp, ["trace", "summarize", notjson], ["notjson.json", "is not JSON"])
    report = os.path.join(out, "report.json")
    expect_bad_input(tmp, ["trace", "summarize", report], ["report.json", "not a Chrome trace-event file",
                                                          "tpusim run --trace"])
    badgz = os.path.join(tmp, "cut.json.gz")
    with open(path, "rb") as f:
        z = gzip.compress(f.read())
    with open(badgz, "wb") as f:
        f.write(z[:len(z) // 2])
    expect_bad_input(tmp, ["trace", "summarize", badgz], ["cut.json.gz", "gzip"])
    expect_bad_input(tmp, ["trace", "summarize", path, "--window", "5:2"], ["--window", "'5:2'", "A < B", "e.g."])
    expect_bad_input(tmp, ["trace", "summarize", path, "--window", "abc"], ["--window", "'abc'"])
    expect_bad_input(tmp, ["trace", "summarize", path, "--window", "10s:20s"], ["--window", "outside", "span"])
    expect_bad_input(tmp, ["trace", "summarize", path, "--steps", "0:2"], ["--steps", "no steps", "--window"])
    expect_bad_input(tmp, ["trace", "summarize", path, "--lanes", "core9.*"], ["--lanes", "core9.*", "matches no lane"])
    expect_bad_input(tmp, ["trace", "summarize", path, "--top", "0"], ["--top", "'0'"])
    expect_bad_input(tmp, ["trace", "summarize", tmp], [tmp, "trace.json"])  # a directory without a trace
    expect_bad_input(tmp, ["trace"], ["summarize"])


# ---- bounded traces -----------------------------------------------------------------------------

def test_trace_bounds(tmp):
    """--trace-lanes keeps only matching lanes, --trace-window only events overlapping it, and
    --trace-gzip writes trace.json.gz (removing a stale trace.json) that reads like the plain one."""
    full = training_trace(tmp, "full")
    _, xs_full = load_trace(os.path.join(full, "trace.json"))

    lanes = training_trace(tmp, "lanes", ["--trace-lanes", "core0.*,host*"])
    data, xs = load_trace(os.path.join(lanes, "trace.json"))
    check(xs and all(t.startswith("core0.") or p.startswith("host") for p, t, _ in xs),
          "--trace-lanes kept {}".format(sorted({(p, t) for p, t, _ in xs})))
    check({p for p, t, _ in xs} >= {"host0", "slice.chip0", "slice.chip3"}, "core0 of every chip is kept")
    check(data["otherData"]["bounds"]["lanes"] == "core0.*,host*", "otherData lacks the lane bounds")

    # A window of 1 ms around the first step's device start.
    step0 = min(e["ts"] for p, t, e in xs_full if t.endswith(".step"))
    a, b = step0, step0 + 1000.0
    win = training_trace(tmp, "window", ["--trace-window", "{:.3f}:{:.3f}".format(a, b)])
    _, xw = load_trace(os.path.join(win, "trace.json"))
    check(xw and all(e["ts"] < b and e["ts"] + e["dur"] > a or (e["dur"] == 0 and a <= e["ts"] < b) for _, _, e in xw),
          "an event outside the window [{}, {}) µs".format(a, b))
    check(len(xw) < len(xs_full), "--trace-window kept everything")
    check(any(".mxu" in t for _, t, _ in xw), "the window holds the step's unit detail")

    # gzip: same events, smaller file, and the plain trace of an earlier run in the directory is removed.
    gz = training_trace(tmp, "full", ["--trace-gzip"])
    check(os.path.isfile(os.path.join(gz, "trace.json.gz")), "no trace.json.gz")
    check(not os.path.exists(os.path.join(gz, "trace.json")), "the stale trace.json was not removed")
    with open(os.path.join(gz, "trace.json.gz"), "rb") as f:
        check(f.read(2) == b"\x1f\x8b", "trace.json.gz is not gzip")
    _, xg = load_trace(os.path.join(gz, "trace.json.gz"))
    check(len(xg) == len(xs_full), "gzip trace has {} events, plain {}".format(len(xg), len(xs_full)))
    # summarize reads both alike.
    plain = training_trace(tmp, "plain")
    sp, _ = summarize(tmp, [os.path.join(plain, "trace.json")])
    sg, _ = summarize(tmp, [os.path.join(gz, "trace.json.gz")])
    check(sg["trace"]["gzip"] and not sp["trace"]["gzip"], "gzip flag in the summary")
    for k in ("lanes", "critical_paths", "top_operations", "idle", "gaps"):
        check(sp[k] == sg[k], "summary.{} differs between the plain and the gzip trace".format(k))

    # --trace-detail-ops caps the unit detail per program; 0 lifts the cap.
    few = training_trace(tmp, "few", ["--trace-detail-ops", "100"])
    _, xf = load_trace(os.path.join(few, "trace.json"))
    unit = [e for p, t, e in xf if p.startswith("slice") and not t.endswith(".step")]
    programs = len({e["args"]["step"] for e in unit})
    check(0 < len(unit) <= 100 * programs, "{} unit events for {} programs at 100 each".format(len(unit), programs))

    for flag, value in (("--trace-lanes", "x"), ("--trace-window", "0:1"), ("--trace-detail-ops", "5")):
        expect_bad_input(tmp, ["run", "--workload", app_test.KERNEL, flag, value], [flag, "needs --trace"])
    expect_bad_input(tmp, ["run", "--workload", app_test.KERNEL, "--trace-gzip"], ["--trace-gzip", "needs --trace"])
    expect_bad_input(tmp, ["run", "--workload", app_test.KERNEL, "--trace", "--trace-window", "9:1"],
                     ["--trace-window", "'9:1'"])
    expect_bad_input(tmp, ["run", "--workload", app_test.KERNEL, "--trace", "--trace-lanes", "a,,b"], ["--trace-lanes"])
    expect_bad_input(tmp, ["run", "--workload", app_test.KERNEL, "--trace", "--trace-detail-ops", "7"],
                     ["--trace-detail-ops", "training"])


# ---- report -------------------------------------------------------------------------------------

def check_page(page, where, min_figures):
    """Self-contained: inline SVG figures, no script, stylesheet, image or font from elsewhere."""
    figures = re.findall(r'<figure class="fig" data-figure="([^"]+)"><svg', page)
    check(len(figures) >= min_figures, "{} figures: {}".format(len(figures), figures), where)
    for bad in ("<script", "<link", "<img", "<iframe", "@import", "url(http", 'src="', 'href="http'):
        check(bad not in page, "the page refers to something outside it: {!r}".format(bad), where)
    ids = re.findall(r'\bid="([^"]+)"', page)
    check(len(ids) == len(set(ids)), "duplicate element ids", where)
    return figures


def test_report_training(tmp):
    out = training_trace(tmp)
    proc, where = run(["report", out], tmp)
    page_path = os.path.join(out, "report.html")
    check(os.path.isfile(page_path) and "report.html" in proc.stdout, "no report.html", where)
    with open(page_path, encoding="utf-8") as f:
        page = f.read()
    figures = check_page(page, where, 7)
    for name in ("breakdown", "step-timeline", "compiles", "memory", "lanes", "critical-path", "idle"):
        check(name in figures, "no {} figure (figures: {})".format(name, figures), where)
    for needle in ("Where did the time go", "Compile events", "Peak HBM per program", "Utilization per lane"):
        check(needle in page, "page lacks {!r}".format(needle), where)
    # -o elsewhere; deterministic bytes for the same run directory.
    other = os.path.join(tmp, "again.html")
    run(["report", out, "-o", other], tmp)
    with open(other, encoding="utf-8") as f:
        check(f.read() == page, "two reports of one run differ")
    # Without a trace: the report still renders, with a note.
    os.remove(os.path.join(out, "trace.json"))
    proc, where = run(["report", out, "-o", os.path.join(tmp, "notrace.html")], tmp)
    with open(os.path.join(tmp, "notrace.html"), encoding="utf-8") as f:
        bare = f.read()
    check_page(bare, where, 4)
    check("No trace" in bare, "no note about the missing trace", where)
    # Another run's trace in the directory (its config hash differs) is not drawn, with a warning.
    kernel = kernel_trace(tmp)
    shutil.copy(os.path.join(kernel, "trace.json"), os.path.join(out, "trace.json"))
    proc, where = run(["report", out, "-o", os.path.join(tmp, "mismatch.html")], tmp)
    check("another run" in proc.stderr and "config hash" in proc.stderr, "no warning about the foreign trace", where)
    with open(os.path.join(tmp, "mismatch.html"), encoding="utf-8") as f:
        page = f.read()
    check('data-figure="lanes"' not in page and "another run" in page, "the foreign trace was drawn", where)


def test_report_kernel(tmp):
    out = kernel_trace(tmp)
    proc, where = run(["report", out], tmp)
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
        page = f.read()
    figures = check_page(page, where, 4)
    for name in ("bounds", "blocks", "lanes", "critical-path"):
        check(name in figures, "no {} figure (figures: {})".format(name, figures), where)


def test_report_multi(tmp):
    """Several runs on one page: side-by-side figures and overlaid/paired charts, no lane figures."""
    a = training_trace(tmp, "a")
    b = training_trace(tmp, "b", ["--set", "precision=bf16"])
    k = kernel_trace(tmp)
    proc, where = run(["report", a, b, k], tmp)
    page_path = os.path.join(a, "compare.html")
    check(os.path.isfile(page_path) and "compare.html" in proc.stdout, "no compare.html", where)
    with open(page_path, encoding="utf-8") as f:
        page = f.read()
    figures = check_page(page, where, 4)
    for name in ("multi-steps", "multi-breakdown", "multi-memory", "multi-kernels"):
        check(name in figures, "no {} figure (figures: {})".format(name, figures), where)
    check("lanes" not in figures, "a multi-run page drew a trace", where)
    for needle in ("Figures side by side", "A (baseline)", "B (vs A)", "C (vs A)", "total time", "only the figures "
                   "they share", a, b, k):
        check(esc(needle) in page, "page lacks {!r}".format(needle), where)
    # Deterministic bytes; one run keeps its own page.
    other = os.path.join(tmp, "again.html")
    run(["report", a, b, k, "-o", other], tmp)
    with open(other, encoding="utf-8") as f:
        check(f.read() == page, "two multi-run pages of the same runs differ")
    run(["report", a], tmp)
    with open(os.path.join(a, "report.html"), encoding="utf-8") as f:
        check("Figures side by side" not in f.read(), "one run drew the multi-run page")
    expect_bad_input(tmp, ["report", a, os.path.join(tmp, "nope")], ["nope", "no such directory"])


def test_report_bad_input(tmp):
    expect_bad_input(tmp, ["report", os.path.join(tmp, "nope")], ["nope", "no such directory"])
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    expect_bad_input(tmp, ["report", empty], ["empty", "no report.json", "tpusim run --out"])
    write(empty, "report.json", "{ broken")
    expect_bad_input(tmp, ["report", empty], ["report.json", "is not JSON"])
    write(empty, "report.json", '{"traceEvents": []}')
    expect_bad_input(tmp, ["report", empty], ["report.json", "not a tpusim report.json"])
    out = kernel_trace(tmp)
    expect_bad_input(tmp, ["report", out, "-o", os.path.join(tmp, "no", "dir", "r.html")], ["-o", "does not exist"])


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


# Injected into a copy of the page (never into the report itself): records script errors, console
# messages and resource loads, then measures every figure once the page has loaded.
CHECKER = """<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push('error: ' + e.message); }, true);
  ['error', 'warn', 'log', 'info'].forEach(function (level) {
    var orig = console[level];
    console[level] = function () { errors.push(level + ': ' + Array.prototype.join.call(arguments, ' ')); orig.apply(console, arguments); };
  });
  window.addEventListener('load', function () {
    var figs = Array.prototype.map.call(document.querySelectorAll('figure.fig'), function (f) {
      var svg = f.querySelector('svg'), r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
      return {name: f.getAttribute('data-figure'), width: r.width, height: r.height,
              shapes: svg ? svg.querySelectorAll('path, rect, use').length : 0};
    });
    var out = document.createElement('pre');
    out.id = 'tpusim-check';
    out.textContent = JSON.stringify({errors: errors, figures: figs, title: document.title,
      resources: performance.getEntriesByType('resource').map(function (r) { return r.name; })});
    document.body.appendChild(out);
  });
})();
</script>"""


def check_in_chromium(browser, tmp, page, name, min_figures):
    """Loads `page` in headless Chromium with a checker: no console messages or requests, and every
    figure renders with a real size."""
    probe = os.path.join(tmp, name + "-probe.html")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(page.replace("<head>", "<head>" + CHECKER, 1))
    cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
           "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(tmp, "profile-" + name),
           # Nothing may be fetched: any request would fail (and show up as a resource or console error).
           "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
           "--window-size=1200,900", "--virtual-time-budget=5000", "--dump-dom", "file://" + probe]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, HOME=tmp))
    where = "{} page\n$ {}\n--- exit {}\n--- stderr (tail)\n{}".format(name, " ".join(cmd), proc.returncode,
                                                                      proc.stderr[-3000:])
    check(proc.returncode == 0, "chromium failed", where)
    m = re.search(r'<pre id="tpusim-check">(.*?)</pre>', proc.stdout, re.S)
    check(m is not None, "the page did not finish loading (no check result in the DOM)", where)
    res = json.loads(html.unescape(m.group(1)))
    check(not res["errors"], "console messages or script errors: {}".format(res["errors"]), where)
    check(not res["resources"], "the page requested {}".format(res["resources"]), where)
    console = [l for l in proc.stderr.splitlines() if ":CONSOLE" in l]
    check(not console, "console messages in chromium's log: {}".format(console), where)
    figs = res["figures"]
    check(len(figs) >= min_figures, "{} figures rendered".format(len(figs)), where)
    for fig in figs:
        check(fig["width"] > 200 and fig["height"] > 80 and fig["shapes"] > 10,
              "figure {} did not render: {}".format(fig["name"], fig), where)
    check(res["title"].startswith("tpusim report"), "title {!r}".format(res["title"]), where)


def test_report_chromium(tmp):
    """The page of a short training run, and the page of two runs side by side, load in headless
    Chromium without console messages or requests, and every figure renders with a real size."""
    browser = chromium()
    if not browser:
        raise Skip("chromium is not installed (Debian package chromium; scripts/build.sh installs it)")
    out = training_trace(tmp)
    run(["report", out], tmp)
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
        check_in_chromium(browser, tmp, f.read(), "single", 7)
    other = training_trace(tmp, "bf16", ["--set", "precision=bf16"])
    run(["report", out, other], tmp)
    with open(os.path.join(out, "compare.html"), encoding="utf-8") as f:
        check_in_chromium(browser, tmp, f.read(), "multi", 4)


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    app_test.TPUSIM, app_test.SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    app_test.KERNEL = os.path.join(app_test.SRC, "configs", "workloads", "kernel_encoder_block_512x1024.yaml")
    app_test.HW = os.path.join(app_test.SRC, "configs", "hw", "v3-8.yaml")
    name, args = sys.argv[3], sys.argv[4:]
    test = globals().get("test_" + name)
    if test is None:
        print("unknown test " + name)
        return 2
    tmp = tempfile.mkdtemp(prefix="tpusim_trace_test_")
    try:
        test(tmp, *args)
    except Skip as e:
        print("SKIP {}: {}".format(name, e))
        return SKIP
    except Failure as e:
        print("FAIL {}: {}".format(name, e))
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
