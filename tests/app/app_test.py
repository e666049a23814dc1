#!/usr/bin/env python3
"""Smoke tests of the tpusim binary, one ctest test per function (see CMakeLists.txt).

    app_test.py TPUSIM SOURCE_DIR TEST [ARGS...]

Each test runs in a fresh temporary working directory (so nothing depends on being run from the
source tree) and fails with a message naming the command, its exit code and its output.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TPUSIM = ""
SRC = ""
HW = ""  # configs/hw/v3-8.yaml
KERNEL = ""  # configs/workloads/kernel_encoder_block_512x1024.yaml: the kernel tests' workload


class Failure(Exception):
    pass


def run(args, cwd, expect=0):
    proc = subprocess.run([TPUSIM] + args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    where = "$ tpusim {}\n--- exit {}\n--- stdout\n{}--- stderr\n{}".format(
        " ".join(args), proc.returncode, proc.stdout, proc.stderr)
    if expect is not None and proc.returncode != expect:
        raise Failure("expected exit {}, got {}\n{}".format(expect, proc.returncode, where))
    # Bad input and failures are reported in one line of our own, never a crash or a stack trace.
    for marker in ("terminate called", "Aborted", "Segmentation fault", "#0 ", "AddressSanitizer"):
        if marker in proc.stderr:
            raise Failure("crash marker {!r} in stderr\n{}".format(marker, where))
    return proc, where


def check(cond, msg, where=""):
    if not cond:
        raise Failure(msg + ("\n" + where if where else ""))


def load_report(out_dir):
    path = os.path.join(out_dir, "report.json")
    check(os.path.isfile(path), "no report.json in " + out_dir)
    with open(path) as f:
        text = f.read()
    return json.loads(text), text


# ---- tests -------------------------------------------------------------------------------------

def test_default_run(tmp):
    """`tpusim run` with no arguments: the embedded default (BERT-base on MRPC, v3-8) with its embedded
    dataset, from a directory without configs/."""
    proc, where = run(["run"], tmp)
    for needle in ("bert-base-cased", "v3-8", "where did the time go", "compile", "all-reduce", "steady",
                   "warm-up", "HBM"):
        check(needle in proc.stdout, "summary lacks {!r}".format(needle), where)


def test_kernel_default_workload(tmp):
    """The encoder-block kernel (the default before the training driver) still runs and summarizes."""
    proc, where = run(["run", "--workload", KERNEL], tmp)
    for needle in ("encoder_block", "v3-8", "cycles", "TFLOP/s", "GB/s", "ideal", "busy cycles"):
        check(needle in proc.stdout, "summary lacks {!r}".format(needle), where)


def test_quiet(tmp):
    proc, where = run(["run", "--workload", KERNEL, "--engine", "analytical", "--quiet"], tmp)
    check(proc.stdout == "" and proc.stderr == "", "--quiet printed something", where)


def test_version(tmp):
    proc, where = run(["--version"], tmp)
    check(re.match(r"tpusim \d+\.\d+\.\d+", proc.stdout) is not None, "bad --version output", where)


def test_kernel(tmp, workload, engine):
    """One shipped kernel workload on v3-8 with one engine."""
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--hw", HW, "--workload", workload, "--engine", engine, "--out", out, "--quiet"],
                      tmp)
    rep, _ = load_report(out)
    check(rep["summary"]["device_cycles"] > 0, "device_cycles is not positive", where)
    check(rep["run"]["engine"] == engine, "report names engine {!r}".format(rep["run"]["engine"]), where)
    s = rep["summary"]
    check(0 < s["mxu_utilization"] <= 1.0 or s["flops"] == 0, "mxu_utilization out of (0, 1]: {}".format(
        s["mxu_utilization"]), where)
    check(s["device_cycles"] >= max(s["ideal_compute_cycles"], s["ideal_hbm_cycles"]) * 0.999,
          "device cycles below the ideal bound", where)


def test_hw(tmp, hw, engine):
    """The default workload on one shipped hardware config with one engine."""
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--hw", hw, "--workload", KERNEL, "--engine", engine, "--out", out, "--quiet"], tmp)
    rep, _ = load_report(out)
    check(rep["summary"]["device_cycles"] > 0, "device_cycles is not positive", where)


def test_report(tmp):
    out = os.path.join(tmp, "res")
    run(["run", "--workload", KERNEL, "--engine", "analytical", "--out", out, "--quiet"], tmp)
    rep, _ = load_report(out)
    for key in ("tpusim", "run", "hw", "workload", "summary", "units", "blocks"):
        check(key in rep, "report.json lacks " + key)
    check(rep["summary"]["device_cycles"] > 0, "summary.device_cycles is not positive")
    check(rep["tpusim"]["config_hash"].startswith("fnv1a64:"), "bad config_hash")
    for k, v in rep["summary"].items():
        if isinstance(v, (int, float)):
            check("summary." + k in rep["units"], "no unit for summary." + k)
    check(isinstance(rep["run"]["wall_time_s"], dict), "run.wall_time_s is not an object")


def strip_wall_time(text):
    """The report minus run.wall_time_s, the only field allowed to differ between runs."""
    rep = json.loads(text)
    del rep["run"]["wall_time_s"]
    return json.dumps(rep, indent=2, sort_keys=False)


def test_report_deterministic(tmp, engine):
    texts = []
    for i in range(2):
        out = os.path.join(tmp, "r{}".format(i))
        run(["run", "--workload", KERNEL, "--engine", engine, "--out", out, "--quiet"], tmp)
        texts.append(load_report(out)[1])
    a, b = (strip_wall_time(t) for t in texts)
    check(a == b, "report.json differs between two identical runs (beyond run.wall_time_s)")
    # Byte-level too: removing the wall_time_s block from the files themselves leaves equal bytes.
    pat = re.compile(r'\n\s*"wall_time_s": \{[^}]*\},?')
    check(pat.sub("", texts[0]) == pat.sub("", texts[1]), "report.json bytes differ beyond run.wall_time_s")


def test_trace(tmp, engine):
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--workload", KERNEL, "--engine", engine, "--out", out, "--trace"], tmp)
    path = os.path.join(out, "trace.json")
    check(os.path.isfile(path), "no trace.json", where)
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    threads = {e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for lane in ("core0.mxu0", "core0.vpu"):
        check(lane in threads, "trace has no track {} (tracks: {})".format(lane, sorted(threads)), where)
    # The SystemC engine models HBM channels; the analytical one has a single contention-free HBM lane.
    hbm = "hbm.ch" if engine == "systemc" else "hbm."
    check(any(t.startswith(hbm) for t in threads), "trace has no {}* track: {}".format(hbm, sorted(threads)), where)
    xs = [e for e in events if e.get("ph") == "X"]
    check(len(xs) > 0, "trace has no complete events")
    for e in xs[:1000]:
        check(e["dur"] >= 0 and e["ts"] >= 0 and "dur_cycles" in e["args"], "bad event {}".format(e))
    # Complete events on one track must nest or follow each other (viewers mis-draw partial overlaps).
    lanes = {}
    for e in xs:
        lanes.setdefault((e["pid"], e["tid"]), []).append((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
    for lane, spans in lanes.items():
        open_ends = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            check(not open_ends or end <= open_ends[-1], "partially overlapping events on track {}".format(lane))
            open_ends.append(end)
    check("trace.json" in proc.stdout, "summary does not say where the trace is", where)


def test_trace_default_out(tmp):
    """--trace without --out writes into ./out/."""
    run(["run", "--workload", KERNEL, "--engine", "analytical", "--trace", "--quiet"], tmp)
    check(os.path.isfile(os.path.join(tmp, "out", "trace.json")), "no out/trace.json")
    check(os.path.isfile(os.path.join(tmp, "out", "report.json")), "no out/report.json")


def test_dump_config(tmp):
    proc, where = run(["run", "--workload", KERNEL, "--dump-config", "--set", "workload.shape.seq=256"], tmp)
    check("---" in proc.stdout and "256" in proc.stdout, "dump lacks the two documents or the override",
          where)


def expect_bad_input(tmp, args, needles):
    proc, where = run(args, tmp, expect=2)
    check(proc.stderr.startswith("error: "), "stderr does not start with 'error: '", where)
    for n in needles:
        check(n in proc.stderr, "message lacks {!r}".format(n), where)


def copy_hw_tree(tmp):
    """A private copy of configs/hw (with the chip files it includes) to edit."""
    dst = os.path.join(tmp, "hw")
    shutil.copytree(os.path.join(SRC, "configs", "hw"), dst)
    return os.path.join(dst, os.path.basename(HW))


def test_bad_hw_key(tmp):
    """An unknown (misspelled) key in a hardware file: exit 2, the file and a 'did you mean'."""
    path = copy_hw_tree(tmp)
    with open(path) as f:
        lines = f.read().split("\n")
    # Misspell the first top-level key with a value on its line ("name: v3-8" -> "namee: v3-8").
    for i, line in enumerate(lines):
        m = re.match(r"^([a-z_]+):\s*\S", line)
        if m and m.group(1) != "include":
            key = m.group(1)
            lines[i] = key + key[-1] + line[len(key):]
            break
    else:
        raise Failure("no top-level scalar key to misspell in " + HW)
    with open(path, "w") as f:
        f.write("\n".join(lines))
    expect_bad_input(tmp, ["run", "--hw", path], [os.path.basename(path), key + key[-1], "did you mean"])
    expect_bad_input(tmp, ["validate", path], [os.path.basename(path), "did you mean"])


def test_bad_set(tmp):
    expect_bad_input(tmp, ["run", "--set", "hw.chip.core.mxu.count=abc"], ["--set", "mxu.count", "abc"])
    expect_bad_input(tmp, ["run", "--set", "chip.core.mxu.cuont=2"], ["--set", "cuont"])
    expect_bad_input(tmp, ["run", "--set", "nosuchkey=1"], ["--set", "nosuchkey"])
    expect_bad_input(tmp, ["run", "--set", "no-equals-sign"], ["no-equals-sign"])


def test_bad_missing_file(tmp):
    expect_bad_input(tmp, ["run", "--hw", "no/such/hw.yaml"], ["no/such/hw.yaml"])
    expect_bad_input(tmp, ["run", "--workload", "missing.yaml"], ["missing.yaml"])
    expect_bad_input(tmp, ["validate", "missing.yaml"], ["missing.yaml"])


def test_bad_engine(tmp):
    expect_bad_input(tmp, ["run", "--engine", "systemcc"], ["systemcc", "did you mean 'systemc'", "analytical"])
    expect_bad_input(tmp, ["run", "--engine", "gpu"], ["gpu", "systemc", "analytical"])


def test_bad_flags(tmp):
    expect_bad_input(tmp, ["run", "--no-such-flag"], ["--no-such-flag"])
    expect_bad_input(tmp, ["frobnicate"], ["frobnicate"])


def test_bad_yaml(tmp):
    path = os.path.join(tmp, "broken.yaml")
    with open(path, "w") as f:
        f.write("kind: kernel\nkernel: [matmul\n")
    expect_bad_input(tmp, ["validate", path], ["broken.yaml"])
    expect_bad_input(tmp, ["run", "--workload", path], ["broken.yaml"])


def test_sim_failure(tmp):
    """A workload that cannot run on the simulated hardware (1 MiB of VMEM): exit 3, naming VMEM."""
    proc, where = run(["run", "--workload", KERNEL, "--set", "hw.chip.core.vmem.size_mib=1"], tmp, expect=3)
    check(proc.stderr.startswith("error: ") and "VMEM" in proc.stderr, "message does not name VMEM", where)


# ---- training workloads --------------------------------------------------------------------------

TINY_TRAINING = """kind: training
model: bert-tiny
dataset: {train: 'uniform:8-60:160', eval: 'fixed:30:64'}
max_length: 64
padding: longest
per_device_batch_size: 4
eval_per_device_batch_size: 8
epochs: 2
"""


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def check_training_report(rep, where):
    for key in ("tpusim", "run", "hw", "workload", "summary", "metrics", "steps", "programs", "processes", "units"):
        check(key in rep, "report.json lacks " + key, where)
    s = rep["summary"]
    for k, v in s.items():
        if isinstance(v, (int, float)):
            check("summary." + k in rep["units"], "no unit for summary." + k, where)
    check(s["total_time_s"] > 0 and s["compiles"] >= 1, "implausible summary {}".format(s), where)
    check(0 < s["mxu_utilization"] <= 1, "mxu_utilization out of (0, 1]", where)
    b = s["breakdown_s"]
    check(abs(sum(b.values()) - s["total_time_s"]) < 1e-6 * s["total_time_s"], "breakdown does not sum to total", where)
    for name in ("CompileTime", "ExecuteTime", "TransferToDeviceTime", "TransferFromDeviceTime"):
        check("count" in rep["metrics"][name] and "total_s" in rep["metrics"][name], "metric " + name, where)
    for name in ("UncachedCompile", "CachedCompile", "MarkStep"):
        check(isinstance(rep["metrics"][name], int), "counter " + name, where)
    check(rep["metrics"]["UncachedCompile"] == s["compiles"], "UncachedCompile != compiles", where)
    for st in rep["steps"]:
        check(st["kind"] in ("train", "eval") and st["compile"] in ("compiled", "cached", "persistent"),
              "bad step {}".format(st), where)


def test_training(tmp, workload):
    """A shipped training workload, capped at a few steps (evaluation still runs once)."""
    hw = os.path.join(SRC, "configs", "hw", "v2-8.yaml" if "_v2-8" in workload else "v3-8.yaml")
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--hw", hw, "--workload", workload, "--engine", "analytical", "--set", "steps=3",
                       "--set", "epochs=1", "--out", out], tmp)
    rep, _ = load_report(out)
    check_training_report(rep, where)
    check(rep["summary"]["train_steps"] == 3, "steps cap not applied", where)
    check("where did the time go" in proc.stdout, "no breakdown table", where)


def test_training_report_deterministic(tmp):
    wl = write(tmp, "tiny.yaml", TINY_TRAINING)
    texts = []
    for i in range(2):
        out = os.path.join(tmp, "r{}".format(i))
        run(["run", "--workload", wl, "--out", out, "--quiet"], tmp)
        texts.append(load_report(out)[1])
    check(strip_wall_time(texts[0]) == strip_wall_time(texts[1]), "training report.json differs between runs")
    check_training_report(json.loads(texts[0]), "")


def test_training_full_sim(tmp):
    """--full-sim simulates every step; the totals equal the replayed run's."""
    wl = write(tmp, "tiny.yaml", TINY_TRAINING)
    reps = []
    for flag in ([], ["--full-sim"]):
        out = os.path.join(tmp, "full" if flag else "replay")
        run(["run", "--workload", wl, "--engine", "analytical", "--out", out, "--quiet"] + flag, tmp)
        reps.append(load_report(out)[0])
    a, b = reps
    check(b["run"]["replays"] == 0 and a["run"]["replays"] > 0, "replay counts {} / {}".format(
        a["run"]["replays"], b["run"]["replays"]))
    for k in ("total_time_s", "steady_step_time_s", "compile_time_s", "warmup_time_s"):
        check(a["summary"][k] == b["summary"][k], "summary.{} differs: {} vs {}".format(k, a["summary"][k], b["summary"][k]))


def test_training_trace(tmp):
    """--trace on a capped MRPC training run: host, step and engine lanes, small enough to open."""
    wl = os.path.join(SRC, "configs", "workloads", "bert_base_mrpc_v3-8.yaml")
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--workload", wl, "--engine", "analytical", "--set", "steps=3", "--out", out,
                       "--trace"], tmp)
    path = os.path.join(out, "trace.json")
    check(os.path.isfile(path), "no trace.json", where)
    size = os.path.getsize(path)
    check(size < 8 << 20, "trace.json is {} bytes".format(size), where)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    xs = [(procs[e["pid"]], threads[(e["pid"], e["tid"])], e) for e in events if e.get("ph") == "X"]
    host = [(t, e) for p, t, e in xs if p == "host0"]
    check(any(t == "compile" and e["name"].startswith("train") for t, e in host), "no host compile slice", where)
    check(any(t == "tracing" for t, e in host), "no host tracing slice", where)
    check(any(t == "transfer" for t, e in host), "no host transfer slice", where)
    cores = {(p, t) for p, t, e in xs if t.endswith(".step")}
    check(len(cores) == 8, "core step lanes: {}".format(sorted(cores)), where)
    check(any(".mxu" in t for p, t, e in xs), "no mxu lane event", where)
    check("trace.json" in proc.stdout, "summary does not say where the trace is", where)
    # --trace-steps limits the step slices to the range.
    out2 = os.path.join(tmp, "out2")
    run(["run", "--workload", wl, "--engine", "analytical", "--set", "steps=3", "--out", out2, "--trace",
         "--trace-steps", "1:2", "--quiet"], tmp)
    with open(os.path.join(out2, "trace.json")) as f:
        events2 = json.load(f)["traceEvents"]
    threads2 = {(e["pid"], e["tid"]): e["args"]["name"] for e in events2
                if e.get("ph") == "M" and e.get("name") == "thread_name"}
    steps2 = [e for e in events2 if e.get("ph") == "X" and threads2[(e["pid"], e["tid"])].endswith(".step")]
    check(len(steps2) == 8, "--trace-steps 1:2 gave {} step slices".format(len(steps2)))
    expect_bad_input(tmp, ["run", "--workload", wl, "--trace", "--trace-steps", "5:2"], ["--trace-steps"])


def test_training_oom(tmp):
    """BERT-base on a core with 0.5 GiB of HBM: exit 3, XLA-style, naming the buffer and the free bytes."""
    proc, where = run(["run", "--engine", "analytical", "--set", "hw.chip.hbm.size_gib=1"], tmp, expect=3)
    for needle in ("Resource exhausted", "attempting to allocate", "free", "bytes"):
        check(needle in proc.stderr, "message lacks {!r}".format(needle), where)


def test_training_notebook_ram(tmp):
    """notebook_fork building BERT-base in each of 8 processes on an 8 GiB host: exit 3 with the fix."""
    proc, where = run(["run", "--engine", "analytical", "--set", "launcher=notebook_fork", "--set",
                       "build_model_in_each_process=true", "--set", "host.ram_gib=8"], tmp, expect=3)
    for needle in ("host RAM", "build_model_in_each_process: false"):
        check(needle in proc.stderr, "message lacks {!r}".format(needle), where)


def test_training_bad_input(tmp):
    expect_bad_input(tmp, ["run", "--set", "model=bert-bsae-cased"], ["model", "did you mean 'bert-base-cased'"])
    expect_bad_input(tmp, ["run", "--set", "framework=tf_kears"], ["framework", "did you mean 'tf_keras'"])
    expect_bad_input(tmp, ["run", "--set", "padding=multiple_of:0"], ["padding"])


def shipped_configs():
    # Slices, the chip files they include, and workloads.
    files = sorted(glob.glob(os.path.join(SRC, "configs", "hw", "**", "*.yaml"), recursive=True) +
                   glob.glob(os.path.join(SRC, "configs", "workloads", "*.yaml")))
    check(len(files) > 0, "no shipped configs found under " + SRC)
    return files


def test_validate_shipped(tmp):
    files = shipped_configs()
    proc, where = run(["validate"] + files, tmp)
    for f in files:
        check("ok " + f in proc.stdout.splitlines(), "validate did not print 'ok {}'".format(f), where)


def test_validate_mixed(tmp):
    """One bad file among good ones: every good file is 'ok', the bad one named, exit 2."""
    good = shipped_configs()[:2]
    bad = os.path.join(tmp, "bad.yaml")
    with open(bad, "w") as f:
        f.write("kind: kernel\nkernel: matmul\nshape: {m: 0, k: 8, n: 8}\n")
    proc, where = run(["validate", good[0], bad, good[1]], tmp, expect=2)
    for f in good:
        check("ok " + f in proc.stdout.splitlines(), "no 'ok {}'".format(f), where)
    check("bad.yaml" in proc.stderr, "the bad file is not named", where)


def main():
    global TPUSIM, SRC, HW, KERNEL
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    TPUSIM, SRC, name, args = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3], sys.argv[4:]
    HW = os.path.join(SRC, "configs", "hw", "v3-8.yaml")
    KERNEL = os.path.join(SRC, "configs", "workloads", "kernel_encoder_block_512x1024.yaml")
    test = globals().get("test_" + name)
    if test is None:
        print("unknown test " + name)
        return 2
    tmp = tempfile.mkdtemp(prefix="tpusim_app_test_")
    try:
        test(tmp, *args)
    except Failure as e:
        print("FAIL {}: {}".format(name, e))
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
