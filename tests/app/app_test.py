#!/usr/bin/env python3
"""Smoke tests of the tpusim binary, one ctest test per function (see CMakeLists.txt).

    app_test.py TPUSIM SOURCE_DIR TEST [ARGS...]

Each test runs in a fresh temporary working directory (so nothing depends on being run from the
source tree) and fails with a message naming the command, its exit code and its output.
"""
import csv
import glob
import json
import os
import re
import resource
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


def run(args, cwd, expect=0, env=None):
    proc = subprocess.run([TPUSIM] + args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env=env)
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
                   "warm-up", "HBM", "where the step time goes", "roofline"):
        check(needle in proc.stdout, "summary lacks {!r}".format(needle), where)


def test_kernel_default_workload(tmp):
    """The encoder-block kernel (the default before the training driver) still runs and summarizes."""
    proc, where = run(["run", "--workload", KERNEL], tmp)
    for needle in ("encoder_block", "v3-8", "cycles", "TFLOP/s", "GB/s", "ideal", "busy cycles", "where the time goes",
                   "roofline", "by bound"):
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
    op = rep["op_profile"]  # the kernel's op profile: the launch and the kernel, adding up to the device time
    check(any(e["name"] == "(launch)" for e in op) and len(op) >= 2, "op_profile lacks entries")
    total = sum(e["time_s"] for e in op)
    check(abs(total - rep["summary"]["device_time_s"]) <= 1e-9 * total, "op_profile does not sum to device_time_s")
    check(sum(e["flops"] for e in op) == rep["summary"]["flops"], "op_profile flops != summary.flops")


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


def test_max_time(tmp):
    """Issue 15, part 5: a simulation estimated to take longer than --max-time (default 5 min) is
    refused up front (exit 2) with the estimate and the knobs, as the full pod on the SystemC engine
    is; none lifts the limit; bad text is exit 2; a sweep passes it to every point."""
    expect_bad_input(tmp, ["run", "--max-time", "1ms", "--quiet"],
                     ["--max-time: value '1ms' must be a positive duration"])
    expect_bad_input(tmp, ["run", "--workload", KERNEL, "--max-time", "0.000001s", "--quiet"],
                     ["--max-time: value '0 s' (--max-time 0.000001s) is too short for program", "which would take an estimated",
                      "--engine analytical", "--max-time none"])
    run(["run", "--workload", KERNEL, "--max-time", "none", "--quiet"], tmp)
    run(["run", "--workload", KERNEL, "--max-time", "2m", "--quiet"], tmp)
    for bad in ["0", "-5m", "soon", "5d"]:
        expect_bad_input(tmp, ["run", "--max-time", bad], ["--max-time: value '{}' must be a positive duration".format(bad)])
    sweep = kernel_sweep(tmp)
    out = os.path.join(tmp, "sw")
    proc, where = run(["sweep", sweep, "--max-time", "0.000001s", "--out", out, "--no-plots"], tmp, expect=4)
    _, rows = read_csv(os.path.join(out, "results.csv"))
    for r in rows:
        check(r["status"] == "failed" and r["exit_code"] == "2" and "--max-time" in r["error"], "row " + str(r), where)
    expect_bad_input(tmp, ["sweep", sweep, "--max-time", "later"], ["--max-time: value 'later' must be a positive duration"])


def test_paths_that_are_not_files(tmp):
    """Issue 15: paths that exist but are not files said "file not found" (and suggested an unrelated file)."""
    expect_bad_input(tmp, ["run", "--workload", os.path.join(SRC, "configs", "workloads")],
                     ["is a directory, not a file", "kernel_matmul_512.yaml"])
    expect_bad_input(tmp, ["run", "--hw", os.path.join(SRC, "configs", "hw")], ["is a directory, not a file", "v3-8.yaml"])
    expect_bad_input(tmp, ["run", "--workload", "/dev/null"], ["/dev/null: is not a regular file"])
    hw = write(tmp, "hw.yaml", "chip:\n  include: {}\n".format(os.path.join(SRC, "configs", "hw", "chips")))
    expect_bad_input(tmp, ["run", "--hw", hw], ["hw.yaml:2", "chip.include", "is a directory", "tpu_v3.yaml"])


def test_empty_and_zero_flags(tmp):
    """Issue 15: `--out ''` wrote nothing and exited 0; `--jobs 0` silently meant the default."""
    expect_bad_input(tmp, ["run", "--out", ""], ["--out: must not be empty"])
    expect_bad_input(tmp, ["sweep", os.path.join(SRC, "configs", "sweeps", "mxu.yaml"), "--dry-run", "--jobs", "0"],
                     ["--jobs", "not in range 1 to 4096"])


def test_max_memory(tmp):
    """Issue 15, parts 1 and 5: a simulation whose estimated peak memory exceeds --max-memory is
    refused before it runs (exit 2: the estimate, the limit, the knobs); a bad SIZE is bad input."""
    expect_bad_input(tmp, ["run", "--max-memory", "1MB", "--quiet"],
                     ["--max-memory: value '1000000 bytes' (--max-memory 1MB) is too low for program 'train_first_step",
                      "cores", "on the analytical engine need an estimated", "fewer cores", "raise --max-memory"])
    expect_bad_input(tmp, ["run", "--workload", KERNEL, "--max-memory", "2MiB", "--trace", "--out", os.path.join(tmp, "k")],
                     ["is too low for program", "on the systemc engine with a trace", "--engine analytical",
                      "run without --trace"])
    # A pod slice on SystemC: the estimate names the cores and instructions and suggests the
    # analytical engine (issue 15, part 5: the full pod is refused up front or fits).
    expect_bad_input(tmp, ["run", "--engine", "systemc", "--hw", os.path.join(SRC, "configs", "hw", "v3-32.yaml"),
                           "--max-memory", "120MiB", "--quiet"],
                     ["--max-memory: value '120 MiB' (--max-memory 120MiB) is too low for program 'train_first_step",
                      "32 cores", "on the systemc engine need an estimated", "--engine analytical",
                      "fewer cores (a smaller slice)"])
    for bad in ["lots", "0", "-5GB", "8XB", "1e30GB"]:
        expect_bad_input(tmp, ["run", "--max-memory", bad], ["--max-memory: value '{}' must be a positive size".format(bad)])
    run(["run", "--workload", KERNEL, "--max-memory", "64GiB", "--quiet"], tmp)


def test_hostile_values(tmp):
    """Issue 15, part 5: values that were silently accepted or escaped the output folder."""
    kernel = os.path.join(SRC, "configs", "workloads", "kernel_matmul_512.yaml")
    expect_bad_input(tmp, ["run", "--workload", kernel, "--set", "hw.chip.core.clock_mhz=1e-300"],
                     ["chip.core.clock_mhz", "must be a number in [1, 10000]"])
    expect_bad_input(tmp, ["run", "--workload", kernel, "--trace", "--trace-lanes", "[", "--out", os.path.join(tmp, "t")],
                     ["--trace-lanes", "'[' is not supported"])
    sweep = write(tmp, "escape.yaml", """name: ../../escape
hw: v3-8
workload: {}
axes:
  - {{path: workload.shape.m, values: [128]}}
""".format(kernel))
    expect_bad_input(tmp, ["sweep", sweep, "--dry-run"], ["escape.yaml:1", "name", "must be a file stem"])
    check(not os.path.exists(os.path.join(tmp, "..", "escape")), "nothing written outside", "")
    # A slice of 128 x 256 chips (32,768) grew without bound: at most 16,384 chips.
    expect_bad_input(tmp, ["run", "--set", "slice.topology.dims=[128,256]", "--set", "slice.hosts=8192"],
                     ["slice.topology.dims: value '[128, 256]' makes 32768 chips; a slice has at most 16384"])
    # A kernel on a chip or core the slice lacks was exit 3 without file or line.
    expect_bad_input(tmp, ["run", "--workload", kernel, "--set", "workload.chip=99"],
                     ["--set: chip: value '99' is not a chip of v3-8: it has 4 chips (0 to 3)"])
    core7 = write(tmp, "core7.yaml", "kind: kernel\nhw: v3-8\nkernel: matmul\nshape: {m: 128, k: 128, n: 128}\ncore: 7\n")
    expect_bad_input(tmp, ["validate", core7], ["core7.yaml:5: core: value '7' is not a core of a v3 chip"])
    expect_bad_input(tmp, ["run", "--workload", core7], ["core7.yaml:5: core: value '7'"])
    # An unknown dataset and a cache directory that is a file named no file or line (the latter an internal key).
    ds = write(tmp, "ds.yaml", "kind: training\nmodel: bert-base-cased\nper_device_batch_size: 4\ndataset:\n  train: glue_nope/train/bert-base-cased\n")
    expect_bad_input(tmp, ["run", "--workload", ds], ["ds.yaml:5: dataset.train: value 'glue_nope/train/bert-base-cased' is not a known dataset"])
    afile = write(tmp, "afile", "")
    expect_bad_input(tmp, ["run", "--set", "compile_cache.persistent_dir=" + afile],
                     ["--set: compile_cache.persistent_dir: value", "cannot be created as a directory"])


def test_kernel_shape_errors(tmp):
    """Issue 15: shape.m = 2^63-1 crashed (SIGFPE) and validate said ok; 2^40 hung; 2^20 per dimension
    took 4.1 GB. Now exit 2 from run and validate, naming the key, its file and line."""
    kernel = os.path.join(SRC, "configs", "workloads", "kernel_matmul_512.yaml")
    for m in ("9223372036854775807", "18446744073709551615", "1099511627776"):
        expect_bad_input(tmp, ["run", "--workload", kernel, "--set", "shape.m=" + m, "--out", os.path.join(tmp, "k")],
                         ["--set: shape.m: value '{}".format(m), "more than 2^40 elements"])
    big = write(tmp, "big.yaml", "kind: kernel\nhw: v3-8\nkernel: matmul\nshape: {m: 1048576, k: 1048576, n: 1048576}\n")
    for cmd in (["validate", big], ["run", "--workload", big, "--out", os.path.join(tmp, "k")]):
        expect_bad_input(tmp, cmd, ["big.yaml:4: shape.", "is too large", "of HBM a core of TPU v3 holds"])


def test_run_length(tmp):
    """Issue 15: `epochs: 10000` wrote a 791 MB report.json and the schema's maximum took 4 GB. A run
    is at most 2^20 steps, refused before anything runs; past 10,000 records identical steps fold
    into one (`repeat`), with the same summary as when every step is listed."""
    expect_bad_input(tmp, ["run", "--set", "epochs=10000"],
                     ["--set: epochs: value '10000' makes a run of 1220000 steps (115 per epoch of 3668 training examples, "
                      "plus 10000 evaluation passes of 7 steps); at most 1048576 (2^20)", "use fewer epochs"])
    expect_bad_input(tmp, ["run", "--set", "epochs=1048576"], ["makes a run of 127926272 steps"])
    reps = {}
    for epochs in (80, 100):  # 9760 and 12200 steps
        out = os.path.join(tmp, "len{}".format(epochs))
        run(["run", "--quiet", "--set", "epochs={}".format(epochs), "--out", out], tmp)
        with open(os.path.join(out, "report.json")) as f:
            reps[epochs] = json.load(f)
    listed = reps[80]["steps"]
    check(len(listed) == 9760 and all("repeat" not in s for s in listed), "a short run lists every step", "")
    folded = reps[100]["steps"]
    check(10000 < len(folded) < 10500, "a long run folds identical steps: {} records".format(len(folded)), "")
    nxt = 0
    for s in folded:
        check(s["index"] == nxt, "records follow one another", str(s["index"]))
        nxt = s["index"] + s.get("repeat", 1)
    check(nxt == 12200, "the records stand for every step", str(nxt))
    # The summary counts every step a record stands for.
    for rep in reps.values():
        steady = [s for s in rep["steps"] if s["kind"] == "train" and s["compile"] == "cached" and not s["first_execution"]]
        times = sorted(t for s in steady for t in [s["step_time_s"]] * s.get("repeat", 1))
        median = (times[(len(times) - 1) // 2] + times[len(times) // 2]) / 2
        coll = sum(s["collective_s"] * s.get("repeat", 1) for s in steady)
        dev = sum(s["device_s"] * s.get("repeat", 1) for s in steady)
        summ = rep["summary"]
        check(abs(summ["steady_step_time_s"] - median) <= 1e-9 * median, "steady step from the records",
              "{} vs {}".format(summ["steady_step_time_s"], median))
        check(abs(summ["collective_share"] - coll / dev) <= 1e-9, "collective share from the records",
              "{} vs {}".format(summ["collective_share"], coll / dev))


def test_huge_model(tmp):
    """Issue 15: the largest in-range model_config took 2.4 GB and exited 1 (std::bad_alloc). A step
    program that cannot be allocated is not lowered: exit 3, XLA's out-of-HBM error, and advice that
    fits (the weights alone do not fit: no smaller batch helps)."""
    sets = ["workload.model=custom", "workload.model_config.layers=2", "workload.model_config.hidden=65536",
            "workload.model_config.heads=1024", "workload.model_config.intermediate=262144",
            "workload.model_config.vocab=4194304", "workload.model_config.max_position=65536"]
    args = ["run", "--quiet", "--out", os.path.join(tmp, "huge")]
    for x in sets:
        args += ["--set", x]
    proc, where = run(args, tmp, expect=3)
    for n in ["Resource exhausted: out of HBM", "The parameters and optimizer state alone exceed the device's HBM",
              "sharding: fsdp"]:
        check(n in proc.stderr, "message lacks {!r}".format(n), where)
    check("Reduce per_device_batch_size" not in proc.stderr, "no batch advice when the weights alone do not fit", where)


def test_huge_model_fsdp(tmp):
    """Issue 15: an FSDP step that cannot be allocated was still lowered (the data-parallel one was
    not): the huge model under sharding: fsdp fails out of HBM (exit 3) without lowering, in bounded
    memory, with advice that fits an already-sharded run."""
    sets = ["workload.model=custom", "workload.model_config.layers=2", "workload.model_config.hidden=65536",
            "workload.model_config.heads=1024", "workload.model_config.intermediate=262144",
            "workload.model_config.vocab=4194304", "workload.model_config.max_position=65536",
            "workload.sharding=fsdp"]
    args = ["run", "--quiet", "--out", os.path.join(tmp, "huge")]
    for x in sets:
        args += ["--set", x]
    proc, where = run(args, tmp, expect=3)
    for n in ["Resource exhausted: out of HBM", "shard them over more devices"]:
        check(n in proc.stderr, "message lacks {!r}".format(n), where)
    # Lowered, this step's instruction streams alone took gigabytes.
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    check(peak_kib < 1024 * 1024, "peak RSS {} KiB: the step was lowered".format(peak_kib), where)


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


def builtin_hw_names():
    return sorted(os.path.splitext(os.path.basename(f))[0] for f in glob.glob(os.path.join(SRC, "configs", "hw", "*.yaml")))


def test_hw_builtin_name(tmp):
    """--hw NAME from a directory without configs/: the embedded slice file (and the chip file it includes)."""
    out = os.path.join(tmp, "out")
    for ref in ("v3-32", "v4-8.yaml", "configs/hw/v2-8.yaml"):
        name = os.path.splitext(os.path.basename(ref))[0]
        proc, where = run(["run", "--hw", ref, "--workload", KERNEL, "--engine", "analytical", "--out", out, "--quiet"], tmp)
        rep, _ = load_report(out)
        check(rep["run"]["hw_file"] == "(embedded) configs/hw/{}.yaml".format(name), "hw_file " + rep["run"]["hw_file"], where)
        check(rep["hw"]["name"] == name, "hw.name " + rep["hw"]["name"], where)
    check(rep["hw"]["generation"] == "v2", "v2-8 did not include the v2 chip file", where)
    # A file of that name in the working directory is a file, not the built-in.
    path = copy_hw_tree(tmp)
    proc, where = run(["run", "--hw", os.path.relpath(path, tmp), "--workload", KERNEL, "--engine", "analytical", "--out",
                       out, "--quiet"], tmp)
    check(load_report(out)[0]["run"]["hw_file"] == os.path.relpath(path, tmp), "a file was not preferred", where)
    # The built-in names are the shipped slice files, and docs/config-hw.md lists them all.
    proc, where = run(["run", "--hw", "v3-33"], tmp, expect=2)
    check("did you mean 'v3-32'" in proc.stderr, "no did-you-mean", where)
    check("built-in: " + ", ".join(builtin_hw_names()) in proc.stderr, "built-in list differs from configs/hw/", where)
    with open(os.path.join(SRC, "docs", "config-hw.md")) as f:
        doc = f.read()
    for n in builtin_hw_names():
        check("`{}`".format(n) in doc, "docs/config-hw.md does not list built-in " + n)


def test_workload_hw(tmp):
    """A workload's `hw:` (a built-in name, or a path relative to the workload file); --hw wins."""
    os.makedirs(os.path.join(tmp, "w"))
    path = copy_hw_tree(tmp)  # tmp/hw/v3-8.yaml with tmp/hw/chips/
    with open(KERNEL) as f:
        body = re.sub(r"(?m)^hw:.*\n", "", f.read()) + "name: k\n"
    builtin = write(tmp, "w/builtin.yaml", body.replace("kind: kernel\n", "kind: kernel\nhw: v2-8\n"))
    relative = write(tmp, "w/relative.yaml", body.replace("kind: kernel\n", "kind: kernel\nhw: ../hw/v3-32.yaml\n"))
    other = os.path.join(tmp, "elsewhere")
    os.makedirs(other)
    out = os.path.join(tmp, "out")
    for wl, hw_file in ((builtin, "(embedded) configs/hw/v2-8.yaml"), (relative, os.path.join(tmp, "hw", "v3-32.yaml"))):
        proc, where = run(["run", "--workload", wl, "--engine", "analytical", "--out", out, "--quiet"], other)
        rep, _ = load_report(out)
        check(rep["run"]["hw_file"] == hw_file, "hw_file {} != {}".format(rep["run"]["hw_file"], hw_file), where)
    proc, where = run(["run", "--hw", "v4-8", "--workload", relative, "--engine", "analytical", "--out", out, "--quiet"], other)
    check(load_report(out)[0]["run"]["hw_file"] == "(embedded) configs/hw/v4-8.yaml", "--hw did not win", where)
    # Not dumped: a workload with and without hw: on the same hardware has the same config hash.
    plain = write(tmp, "w/plain.yaml", body)
    hashes = []
    for wl in (builtin, plain):
        run(["run", "--hw", "v2-8", "--workload", wl, "--engine", "analytical", "--out", out, "--quiet"], other)
        hashes.append(load_report(out)[0]["tpusim"]["config_hash"])
    check(hashes[0] == hashes[1], "hw: changed the config hash")
    # Bad names: exit 2 naming the workload file, its line and the key; validate checks them too.
    bad = write(tmp, "w/bad.yaml", body.replace("kind: kernel\n", "kind: kernel\nhw: v3-9\n"))  # line 3
    for cmd in (["run", "--workload", bad], ["validate", bad]):
        expect_bad_input(other, cmd, [bad + ":3: hw: value 'v3-9'", "built-in", "did you mean 'v3-8'"])
    bad = write(tmp, "w/bad2.yaml", body.replace("kind: kernel\n", "kind: kernel\nhw: ../hw/v3-3.yaml\n"))
    expect_bad_input(other, ["run", "--workload", bad], ["hw: value '../hw/v3-3.yaml'", "did you mean"])
    proc, where = run(["validate", builtin, relative], other)


def test_dataset_file(tmp):
    """Datasets from length files: relative to the workload file (to the working directory for --set);
    the shipped example equals the table-based run; bad files exit 2 naming file and line."""
    out = os.path.join(tmp, "out")
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    run(["run", "--workload", os.path.join(SRC, "configs", "workloads", "bert_base_mrpc_v3-8.yaml"), "--set", "epochs=1",
         "--out", a, "--quiet"], tmp)
    run(["run", "--workload", os.path.join(SRC, "configs", "workloads", "bert_base_mrpc_v3-8_lengths_file.yaml"), "--set",
         "epochs=1", "--out", b, "--quiet"], tmp)
    ra, rb = load_report(a)[0], load_report(b)[0]
    check(ra["summary"] == rb["summary"] and ra["steps"] == rb["steps"], "the length files do not reproduce the table run")
    check(os.path.join(SRC, "data", "mrpc_train_lengths.json") in rb["config"]["workload_yaml"],
          "report.json does not name the dataset file")

    os.makedirs(os.path.join(tmp, "w", "data"))
    write(tmp, "w/data/train.csv", "id,text,num_tokens\n" + "".join('{},"a, b",{}\n'.format(i, 10 + i % 50) for i in range(64)))
    write(tmp, "w/data/eval.jsonl", "".join(json.dumps({"input_ids": list(range(5 + i % 9))}) + "\n" for i in range(16)))
    wl = write(tmp, "w/w.yaml", "kind: training\nhw: v3-8\nmodel: bert-tiny\nper_device_batch_size: 2\n"
               "dataset: {train: data/train.csv, eval: data/eval.jsonl}\n")
    proc, where = run(["run", "--workload", wl, "--out", out], b)  # another working directory
    rep, _ = load_report(out)
    check(rep["summary"]["train_examples"] == 64, "train_examples {}".format(rep["summary"]["train_examples"]), where)
    check(os.path.join(tmp, "w", "data", "train.csv") in proc.stdout, "the summary does not name the file", where)
    # --set: relative to the working directory.
    run(["run", "--workload", wl, "--set", "dataset.train=w/data/train.csv", "--quiet"], tmp)
    expect_bad_input(b, ["run", "--workload", wl, "--set", "dataset.train=w/data/train.csv"], ["w/data/train.csv", "not found"])

    # Errors: a missing file (nearby files suggested), bad contents (file:line, column or field).
    cases = [("data/trian.csv", None, ["bad.yaml:4: dataset.train", "not found", "did you mean", "data/train.csv"]),
             ("data/zero.txt", "5\n0\n", ["zero.txt:2", "zero"]),
             ("data/neg.json", "[5,\n -3]", ["neg.json:2", "column 2", "negative"]),
             ("data/text.csv", "length\n5\nfive\n", ["text.csv:3", "length", "five"]),
             ("data/nofield.jsonl", '{"n": 3}\n', ["nofield.jsonl:1", "none of the token-count fields", "#FIELD"]),
             ("data/field.jsonl#ntok", '{"n": 3}\n', ["field.jsonl:1", "ntok", "missing field"]),
             ("data/empty.json", "[]", ["empty.json", "no examples"])]
    for ref, text, needles in cases:
        if text is not None:
            write(tmp, "w/" + ref.split("#")[0], text)
        bad = write(tmp, "w/bad.yaml", "kind: training\nmodel: bert-tiny\nper_device_batch_size: 2\n"
                    "dataset: {{train: {}}}\n".format(ref))
        for cmd in (["run", "--workload", bad], ["validate", bad]):
            expect_bad_input(b, cmd, needles)


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


def check_training_report(rep, where, peak_factor=1):
    """peak_factor: how far above the bf16 peak the MXU can run (2 for int8/fp8 matmuls: MFU and MXU
    utilization are against the bf16 peak, docs/training.md "Quantization")."""
    for key in ("tpusim", "run", "hw", "workload", "summary", "metrics", "steps", "programs", "processes", "units"):
        check(key in rep, "report.json lacks " + key, where)
    s = rep["summary"]
    for k, v in s.items():
        if isinstance(v, (int, float)):
            check("summary." + k in rep["units"], "no unit for summary." + k, where)
    check(s["total_time_s"] > 0 and s["compiles"] >= 1, "implausible summary {}".format(s), where)
    check(0 < s["mxu_utilization"] <= peak_factor, "mxu_utilization out of (0, {}]".format(peak_factor), where)
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
    # programs[].op_profile: where each program's device time went, kernel by kernel; the entries add
    # up to the device time and their flops to the program's.
    keys = ("name", "count", "time_s", "flops", "hbm_bytes", "compute_bound_s", "memory_bound_s", "vpu_bound_s",
            "ici_bound_s", "bound")
    for p in rep["programs"]:
        op = p["op_profile"]
        check(len(op) > 1 and "op_profile_core" in p, "no op profile in program " + p["name"], where)
        for e in op:
            check(all(k in e for k in keys), "op_profile entry lacks keys: {}".format(e), where)
            check(e["bound"] in ("mxu", "hbm", "vpu", "ici", "fixed"), "bad bound {}".format(e), where)
        total = sum(e["time_s"] for e in op)
        check(abs(total - p["device_s"]) <= 1e-9 * p["device_s"], "op_profile does not sum to device_s", where)
        # The entries are the profiled core's; a megacore device's flops are both cores' (for an
        # odd batch, only the useful ones: at most both cores' work, at least one core's).
        per_core, cores = sum(e["flops"] for e in op), rep["hw"].get("cores_per_device", 1)
        if cores == 1:
            check(per_core == p["flops"], "op_profile flops != program flops", where)
        else:
            check(per_core <= p["flops"] <= cores * per_core, "op_profile flops vs device flops", where)
    for k in ("time_s", "flops", "hbm_bytes", "count", "compute_bound_s"):
        check("programs[].op_profile[]." + k in rep["units"], "no unit for op_profile " + k, where)


def test_training(tmp, workload):
    """A shipped training workload, capped at a few steps (evaluation still runs once), on the slice its
    file name ends with (e.g. ..._v3-32.yaml runs on configs/hw/v3-32.yaml, ..._v5litepod-256x2.yaml on two
    v5e pods; v3-8 otherwise)."""
    m = re.search(r"_(v\d+[a-z]*-\d+(?:x\d+)?)(_|\.yaml$)", os.path.basename(workload))
    slice_name = m.group(1) if m else "v3-8"
    # A slice with a file of its own, or one generated from the rules (v5p-256: by name).
    hw = os.path.join(SRC, "configs", "hw", slice_name + ".yaml")
    if not os.path.exists(hw):
        hw = slice_name
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--hw", hw, "--workload", workload, "--engine", "analytical", "--set", "steps=3",
                       "--set", "epochs=1", "--out", out], tmp)
    rep, _ = load_report(out)
    with open(workload) as f:
        quantized = re.search(r"^quantization:\s*(int8|fp8)", f.read(), re.M) is not None
    check_training_report(rep, where, 2 if quantized else 1)
    check(rep["summary"]["train_steps"] == 3, "steps cap not applied", where)
    check(0 <= rep["summary"]["mfu"] <= (2 if quantized else 1), "summary.mfu out of range", where)
    check(0 <= rep["summary"]["allreduce_share"] <= 1, "summary.allreduce_share out of [0, 1]", where)
    # (padding: longest compiles a new shape at each of its 3 steps: no steady step)
    check(rep["summary"]["steady_step_time_s"] > 0 or "_longest" in workload or "multiple_of" in workload,
          "no steady step time", where)
    check("where did the time go" in proc.stdout, "no breakdown table", where)
    # Without --hw it runs on the slice its `hw:` names: the same one.
    proc, where = run(["run", "--workload", workload, "--dump-config"], tmp)
    check(any("# Resolved hardware config, from ({}) configs/hw/{}.yaml".format(origin, slice_name) in proc.stdout
              for origin in ("embedded", "generated")),
          "the workload's hw: did not select " + slice_name, where)


def test_training_fsdp(tmp):
    """The same tiny workload data-parallel and FSDP on a v3-8: FSDP's model state is 1/8 per core,
    and its collectives are all-gathers (twice the parameter bytes) and reduce-scatters (once)."""
    # Small embeddings, so that the layers' activations (what checkpointing saves) set the peak.
    wl = write(tmp, "tiny.yaml", TINY_TRAINING.replace("model: bert-tiny", "model: {layers: 4, hidden: 256, heads: 4, "
                                                       "intermediate: 1024, vocab: 2048}")
               .replace("per_device_batch_size: 4", "per_device_batch_size: 16"))
    reps = {}
    for sharding, extra in (("data_parallel", []), ("fsdp", []), ("fsdp_ckpt", ["--set", "fsdp_grad_ckpt=true"])):
        out = os.path.join(tmp, sharding)
        run(["run", "--workload", wl, "--engine", "analytical", "--set", "steps=3", "--set", "epochs=1",
             "--set", "sharding=" + sharding.replace("_ckpt", ""), "--out", out, "--quiet"] + extra, tmp)
        reps[sharding], _ = load_report(out)
        check_training_report(reps[sharding], sharding)
    dp, fs, ck = (reps[k]["summary"] for k in ("data_parallel", "fsdp", "fsdp_ckpt"))
    check(dp["sharding"] == "data_parallel" and fs["sharding"] == "fsdp", "summary.sharding")
    ratio = dp["memory"]["parameter_bytes"] / fs["memory"]["parameter_bytes"]
    check(7 < ratio < 8.5, "fsdp parameter slices are not ~1/8: ratio {}".format(ratio))
    check(fs["memory"]["optimizer_state_bytes"] * 7 < dp["memory"]["optimizer_state_bytes"], "optimizer state not sharded")
    c = fs["collectives"]
    check(c["allreduce"]["bytes"] == 0 and dp["collectives"]["allreduce"]["bytes"] > 0, "all-reduce bytes")
    check(c["allgather"]["bytes"] == 2 * c["reducescatter"]["bytes"] > 0, "all-gather != 2 x reduce-scatter bytes")
    check(c["allgather"]["time_s"] > 0 and c["reducescatter"]["time_s"] > 0, "no simulated collective time")
    check(dp["collectives"]["allreduce"]["time_s"] > 0, "no all-reduce time")
    check(ck["memory"]["activation_bytes"] < fs["memory"]["activation_bytes"], "checkpointing saves no activations")
    flops = [sum(p["flops"] for p in reps[k]["programs"] if p["graph"] == "train") for k in ("fsdp", "fsdp_ckpt")]
    check(flops[1] > flops[0], "checkpointing adds no flops")


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


def test_replicas_full_sim(tmp):
    """On a torus (v5p-128: 64 chips of 2 cores in a 4x4x4 cube with wraparound) the analytical engine simulates
    one core for the slice's symmetric replicas; --full-sim simulates every core and every step. Every
    figure of the two reports is the same."""
    wl = write(tmp, "tiny.yaml", TINY_TRAINING.replace("epochs: 2", "epochs: 1").replace(":160'", ":2048'"))
    reps = []
    for flag in ([], ["--full-sim"]):
        out = os.path.join(tmp, "full" if flag else "replicas")
        run(["run", "--workload", wl, "--hw", "v5p-128", "--engine", "analytical", "--out", out, "--quiet"] + flag, tmp)
        reps.append(load_report(out)[0])
    a, b = reps
    check(b["run"]["full_sim"] and not a["run"]["full_sim"], "full_sim flags")
    for p, q in zip(a["programs"], b["programs"]):
        check(p["simulated_cores"] == 1 and q["simulated_cores"] == q["cores"] == 128,
              "simulated cores {} / {} of {}".format(p["simulated_cores"], q["simulated_cores"], q["cores"]))
        del p["simulated_cores"], q["simulated_cores"]
    for k in ("summary", "programs", "steps", "metrics"):
        check(json.dumps(a[k], sort_keys=True) == json.dumps(b[k], sort_keys=True), "report.{} differs".format(k))


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


def test_training_llama_oom(tmp):
    """Llama-2-7B fine-tuning on a v3-8 without FSDP (every core holds the whole model and its AdamW
    state): exit 3, out of HBM, as a real run fails (the shipped llama2_7b_fsdp_* examples fit)."""
    workload = write(tmp, "llama2_7b_v3-8.yaml", """kind: training
hw: v3-8
model: meta-llama/Llama-2-7b-hf
task: causal_lm
dataset: {train: 'fixed:1024:64'}
max_length: 1024
per_device_batch_size: 1
precision: bf16
""")
    proc, where = run(["run", "--workload", workload], tmp, expect=3)
    for needle in ("Resource exhausted", "out of HBM", "attempting to allocate", "16.00 GiB"):
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
    # MaxText's command line: a model it has no preset for, a mesh axis across slices it does not model.
    expect_bad_input(tmp, ["run", "--hw", "v6e-8", "--maxtext-args", "model_name=gpt3-6b"], ["model_name", "gpt3-175b"])
    expect_bad_input(tmp, ["run", "--hw", "v6e-8", "--maxtext-args", "model_name=llama2-7b dcn_fsdp_parallelism=2"],
                     ["dcn_fsdp_parallelism", "only data parallelism"])
    out = os.path.join(tmp, "maxtext")
    _, where = run(["run", "--hw", "v6e-8", "--maxtext-args", "model_name=llama2-7b per_device_batch_size=1 "
                    "max_target_length=1024 steps=2 run_name=smoke", "--out", out, "--quiet"], tmp)
    rep, _ = load_report(out)
    check(rep["workload"]["model"] == "meta-llama/Llama-2-7b-hf" and rep["workload"]["sharding"] == "fsdp",
          "--maxtext-args did not give the Llama-2-7B FSDP workload", where)
    check(rep["workload"]["ignored_keys"] == ["maxtext:run_name"], "ignored keys {}".format(rep["workload"]["ignored_keys"]), where)
    # Multislice: a chip without a data-center network, a DCN mesh that is not the slices.
    expect_bad_input(tmp, ["run", "--hw", "v3-8", "--set", "multislice.slices=2"], ["multislice.slices", "chip.dcn"])
    expect_bad_input(tmp, ["run", "--hw", "v6e-8", "--set", "multislice.slices=2", "--set", "dcn_mesh.data=3"],
                     ["dcn_mesh.data", "multislice.slices"])


def test_models(tmp):
    """`tpusim models`: every preset with its family and parameter count, the table and --json; a preset
    of a family not simulated yet is exit 2 saying so; a training report counts its model's parameters
    as `tpusim models` does."""
    proc, where = run(["models"], tmp)
    for needle in ("bert-base-uncased", "roberta-base", "meta-llama/Llama-2-7b-hf", "t5-small", "6,738,415,616",
                   "simulated families today: bert, roberta, distilbert, albert, gpt2, llama, mistral, gemma, gpt3, t5, bart, vit"):
        check(needle in proc.stdout, "table lacks {!r}".format(needle), where)
    proc, where = run(["models", "--json"], tmp)
    presets = {p["name"]: p for p in json.loads(proc.stdout)}
    for p in presets.values():
        missing = {"name", "family", "parameters", "layers", "hidden", "heads", "vocab", "simulated"} - set(p)
        check(not missing, "{} lacks {}".format(p["name"], missing), where)
        check(p["simulated"], "every family is simulated: " + p["name"], where)
    check(presets["gpt2"]["parameters"] == 124439808 and presets["gpt2"]["family"] == "gpt2", "gpt2", where)
    check(presets["google/vit-base-patch16-224"]["vocab"] is None, "ViT has no vocabulary", where)
    check(presets["t5-small"]["layers"] == 6 and presets["t5-small"]["decoder_layers"] == 6, "t5-small layers", where)
    expect_bad_input(tmp, ["models", "--json", "--markdown"], ["--markdown"])
    # A listed preset of another family, an unknown name (did you mean over every family's presets).
    # T5 takes task seq2seq, and seq2seq a T5 model with source/target pairs.
    expect_bad_input(tmp, ["run", "--set", "model=t5-small"], ["task", "use task: seq2seq"])
    expect_bad_input(tmp, ["run", "--set", "task=seq2seq"], ["task", "needs a T5 or BART model"])
    # GPT-2 takes task causal_lm, and causal_lm a GPT-2 or Llama model.
    expect_bad_input(tmp, ["run", "--set", "model=openai-community/gpt2"], ["task", "use task: causal_lm"])
    expect_bad_input(tmp, ["run", "--set", "task=causal_lm"], ["task", "needs a GPT-2 or Llama model"])
    expect_bad_input(tmp, ["run", "--set", "model=robreta-base"], ["model", "did you mean 'roberta-base'"])
    # report.json workload.model_parameters: BertModel's count, for a preset and for an inline architecture.
    wl = os.path.join(tmp, "tiny.yaml")
    with open(wl, "w") as f:
        f.write("kind: training\nmodel: bert-tiny\ndataset: {train: 'fixed:16:64'}\nper_device_batch_size: 2\n"
                "epochs: 1\neval_strategy: 'no'\n")
    out = os.path.join(tmp, "out")
    _, where = run(["run", "--workload", wl, "--out", out, "--quiet"], tmp)
    rep, _ = load_report(out)
    check(rep["workload"]["model_parameters"] == presets["bert-tiny"]["parameters"] == 4385920,
          "model_parameters {}".format(rep["workload"]["model_parameters"]), where)
    check(rep["units"]["workload.model_parameters"].startswith("count"), "no unit for model_parameters", where)
    _, where = run(["run", "--workload", wl, "--out", out, "--quiet", "--set", "model_config.layers=1"], tmp)
    rep, _ = load_report(out)
    # One BertLayer fewer: 4 (H^2 + H) + 2 H I + I + H + 4 H with H = 128, I = 512.
    check(rep["workload"]["model_parameters"] == 4385920 - (4 * (128 * 128 + 128) + 2 * 128 * 512 + 512 + 128 + 4 * 128),
          "model_parameters {} with one layer".format(rep["workload"]["model_parameters"]), where)
    # A ViT run counts ViTModel as `tpusim models` does (the classifier excluded).
    _, where = run(["run", "--workload", os.path.join(SRC, "configs", "workloads", "vit_base_v4-8.yaml"),
                    "--out", out, "--quiet", "--set", "steps=1", "--set", "eval_strategy=no"], tmp)
    rep, _ = load_report(out)
    check(rep["workload"]["model_parameters"] == presets["google/vit-base-patch16-224"]["parameters"] == 86389248,
          "ViT model_parameters {}".format(rep["workload"]["model_parameters"]), where)


def test_training_args(tmp):
    """Hugging Face names: a workload written with them and `--training-args FILE` (JSON, then an
    Accelerate config) on top; ignored keys in report.json; bad values exit 2 naming file, line and key."""
    wl = os.path.join(tmp, "hf.yaml")
    with open(wl, "w") as f:
        f.write("kind: training\nmodel: bert-tiny\ndataset: {train: 'fixed:64:512'}\n"
                "per_device_batch_size: 16\nprecision: fp32\nlearning_rate: 3.0e-5\n")
    args = os.path.join(tmp, "training_args.json")
    with open(args, "w") as f:
        json.dump({"per_device_train_batch_size": 4, "max_steps": 2, "gradient_accumulation_steps": 2,
                   "bf16": True, "optim": "adamw_torch_xla", "output_dir": "out", "report_to": ["tensorboard"],
                   "fp16": False, "per_gpu_train_batch_size": None}, f, indent=2)
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--workload", wl, "--training-args", args, "--out", out], tmp)
    rep, _ = load_report(out)
    w = rep["workload"]
    check(w["per_device_batch_size"] == 4 and w["precision"] == "bf16" and w["optimizer"] == "adamw",
          "training args not applied over the workload", where)
    check(rep["summary"]["train_steps"] == 4 and rep["summary"]["optimizer_steps"] == 2,
          "max_steps 2 x gradient_accumulation_steps 2 should be 4 micro-steps", where)
    check(w["ignored_keys"] == ["fp16", "learning_rate", "output_dir", "report_to"],
          "ignored_keys: {}".format(w["ignored_keys"]), where)
    check("ignored" in proc.stdout and "4 Hugging Face" in proc.stdout, "no ignored-keys line in the summary", where)
    # An Accelerate config: num_processes must match the slice's devices (8 on v3-8, 32 on v3-32).
    acc = os.path.join(SRC, "tests", "config", "hf", "accelerate_tpu_config.yaml")
    run(["run", "--workload", wl, "--training-args", acc, "--set", "steps=1", "--set", "per_device_batch_size=4", "-q"], tmp)
    expect_bad_input(tmp, ["run", "--hw", os.path.join(SRC, "configs", "hw", "v3-32.yaml"), "--workload", wl,
                           "--training-args", acc], ["accelerate_tpu_config.yaml:10: num_processes", "32 devices"])
    # Unsupported values and conflicts: exit 2 at the line the user wrote.
    with open(args, "w") as f:
        f.write('{\n  "fp16": true\n}\n')
    expect_bad_input(tmp, ["run", "--workload", wl, "--training-args", args],
                     ["training_args.json:2: fp16", "use bf16: true"])
    with open(wl, "a") as f:
        f.write("per_device_train_batch_size: 8\n")
    expect_bad_input(tmp, ["run", "--workload", wl], ["hf.yaml:7: per_device_train_batch_size", "'per_device_batch_size'"])
    expect_bad_input(tmp, ["run", "--set", "per_device_eval_batch_sise=8"], ["per_device_eval_batch_sise"])


def compare_runs(tmp):
    """The default run, the same in bf16, and the kernel tests' workload: three run directories."""
    a, b, k = (os.path.join(tmp, n) for n in ("a", "b", "k"))
    run(["run", "--out", a, "--quiet"], tmp)
    run(["run", "--out", b, "--set", "precision=bf16", "--quiet"], tmp)
    run(["run", "--workload", KERNEL, "--engine", "analytical", "--out", k, "--quiet"], tmp)
    return a, b, k


def test_compare(tmp):
    """`tpusim compare`: figures side by side within 100 columns, --json with the reports' numbers and
    differences against the first run, a kernel run against a training run, more runs than one block."""
    a, b, k = compare_runs(tmp)
    proc, where = run(["compare", a, b], tmp)
    for needle in ("total time (s)", "steady step time", "compiles", "warm-up", "peak HBM per device (GiB)",
                   "device compute", "MFU (%)", "costliest kernels", "B-A"):
        check(needle in proc.stdout, "compare output lacks {!r}".format(needle), where)
    for line in proc.stdout.splitlines():
        check(len(line) <= 100, "line wider than 100 columns: {!r}".format(line), where)
    proc, where = run(["compare", a, b, "--json"], tmp)
    cmp = json.loads(proc.stdout)
    ra, rb = load_report(a)[0]["summary"], load_report(b)[0]["summary"]
    rows = {r["name"]: r for r in cmp["rows"] if r["section"] != "kernels"}
    for name, key in (("total time", "total_time_s"), ("steady step time", "steady_step_time_s"),
                      ("peak HBM per device", "peak_hbm_bytes"), ("MFU", "mfu")):
        check(name in rows, "no {!r} row".format(name), where)
        r = rows[name]
        check(r["values"] == [ra[key], rb[key]], "{}: {} != report values".format(name, r["values"]), where)
        check(r["diff"][0] is None and abs(r["diff"][1] - (rb[key] - ra[key])) <= 1e-9 * max(1, abs(ra[key])),
              "{}: diff {}".format(name, r["diff"]), where)
    # bf16 halves the parameters' bytes: the comparison must say so.
    check(abs(rows["parameters"]["rel_diff"][1] + 0.5) < 0.01, "parameters rel_diff {}".format(
        rows["parameters"]["rel_diff"]), where)
    check(any(r["section"] == "kernels" for r in cmp["rows"]), "no kernel rows", where)
    proc, where = run(["compare", a, k], tmp)
    check("note:" in proc.stdout and "share" in proc.stdout, "no note on kernel vs training", where)
    check("MXU utilization" in proc.stdout and "total time" not in proc.stdout, "kernel vs training rows", where)
    proc, where = run(["compare", a, b, k, a], tmp)
    check(proc.stdout.count("B-A") == 1 and "D-A" in proc.stdout, "four runs: two blocks", where)


def test_metrics(tmp):
    """`tpusim metrics`: torch_xla's metrics_report() layout, counts matching report.json."""
    a, _, k = compare_runs(tmp)
    rep = load_report(a)[0]
    proc, where = run(["metrics", a], tmp)
    out = proc.stdout
    compiles = rep["summary"]["compiles"]
    check("Metric: CompileTime\n  TotalSamples: {}\n  Accumulator: ".format(compiles) in out, "CompileTime", where)
    check("Counter: UncachedCompile\n  Value: {}\n".format(compiles) in out, "UncachedCompile", where)
    check("Metric: ExecuteTime\n  TotalSamples: {}\n".format(len(rep["steps"])) in out, "ExecuteTime", where)
    for name in ("TransferToDeviceTime", "InboundData", "CachedCompile", "MarkStep"):
        check(": " + name + "\n" in out, "no " + name, where)
    duration = r"(\d{2}[dhms])*(\d{3}ms)?\d{3}\.\d{3}us"
    check(re.search(r"Metric: CompileTime\n  TotalSamples: \d+\n  Accumulator: " + duration + r"\n", out),
          "CompileTime accumulator is not a torch_xla duration", where)
    check(re.search(r"Metric: InboundData\n  TotalSamples: \d+\n  Accumulator: \d+\.\d\d[KMGTP]?B\n", out),
          "InboundData accumulator is not torch_xla bytes", where)
    pcts = re.findall(r"  Percentiles: (.*)\n", out)
    check(pcts and all([p.split("=")[0] for p in line.split("; ")] ==
                       ["1%", "5%", "10%", "20%", "50%", "80%", "90%", "95%", "99%"] for line in pcts),
          "percentile labels", where)
    # report.json holds every sample compactly: the counts add up.
    for name in ("CompileTime", "ExecuteTime", "TransferToDeviceTime"):
        m = rep["metrics"][name]
        check(sum(n for _, n in m["samples_s"]) == m["count"], name + " samples do not add up", where)
    # One byte sample per transfer-time sample.
    for data, xfer in (("InboundData", "TransferToDeviceTime"), ("OutboundData", "TransferFromDeviceTime")):
        check(rep["metrics"][data]["count"] == rep["metrics"][xfer]["count"] and
              sum(n for _, n in rep["metrics"][data]["samples_bytes"]) == rep["metrics"][data]["count"],
              "{} samples != {} samples".format(data, xfer), where)
    proc, where = run(["metrics", k], tmp)
    check(proc.stdout.startswith("Metric: ExecuteTime\n  TotalSamples: 1\n"), "kernel run metrics", where)


def test_compare_bad_input(tmp):
    a = os.path.join(tmp, "a")
    run(["run", "--out", a, "--quiet"], tmp)
    expect_bad_input(tmp, ["compare", a], ["compare", "at least two"])
    expect_bad_input(tmp, ["compare", a, os.path.join(tmp, "nope")], ["nope", "no such directory"])
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    expect_bad_input(tmp, ["compare", a, empty], ["empty", "no report.json"])
    with open(os.path.join(empty, "report.json"), "w") as f:
        f.write("{ broken")
    expect_bad_input(tmp, ["compare", a, empty], ["report.json", "is not JSON"])
    expect_bad_input(tmp, ["metrics", empty], ["report.json", "is not JSON"])
    with open(os.path.join(empty, "report.json"), "w") as f:
        f.write('{"traceEvents": []}')
    expect_bad_input(tmp, ["metrics", empty], ["report.json", "not a tpusim report.json"])
    expect_bad_input(tmp, ["metrics", os.path.join(tmp, "nope")], ["nope", "no such directory"])


def shipped_configs():
    # Slices, the chip files they include, workloads and sweeps.
    files = sorted(glob.glob(os.path.join(SRC, "configs", "hw", "**", "*.yaml"), recursive=True) +
                   glob.glob(os.path.join(SRC, "configs", "workloads", "*.yaml")) +
                   glob.glob(os.path.join(SRC, "configs", "sweeps", "*.yaml")))
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

def test_validate_hostile_yaml(tmp):
    """Issue 15: validate read a file's kind with yaml-cpp directly, so a mapping nested 500 deep said
    "YAML syntax error: bad file"; it now parses with the config reader's limits, as run does."""
    deep = write(tmp, "deep.yaml", "a:\n" + "".join("  " * (i + 1) + "b:\n" for i in range(500)))
    for cmd in (["validate", deep], ["run", "--workload", deep]):
        expect_bad_input(tmp, cmd, ["deep.yaml:", "nests deeper than 64 levels", "flatten the structure"])
    alias = write(tmp, "alias.yaml", "a: &a [*a]\n")
    expect_bad_input(tmp, ["validate", alias], ["alias.yaml:1", "nests deeper than 64 levels", "...", "an alias may not contain itself"])
    laughs = write(tmp, "laughs.yaml", "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        "{}: &{} [{}]\n".format(c, c, ",".join(["*" + p] * 9)) for p, c in zip("abcdefgh", "bcdefghi")))
    expect_bad_input(tmp, ["validate", laughs], ["laughs.yaml:1", "expands to more than 1048576 values"])


# ---- sweeps (docs/sweeps.md) --------------------------------------------------------------------

# 2 values of n x 2 zipped MXU sizes x 2 HBM bandwidths = 8 grid points; the constraint drops id 4
# (n=512, mxu=64, hbm=450: n is the slowest dimension, hbm the fastest).
KERNEL_SWEEP = """name: ksweep
hw: {src}/configs/hw/v3-8.yaml
workload: {src}/configs/workloads/kernel_matmul_1024.yaml
engine: analytical
{extra}axes:
  - path: workload.shape.n
    values: [256, 512]
  - path: hw.chip.core.mxu.rows
    name: mxu
    values: [64, 128]
    zip: square
  - path: hw.chip.core.mxu.cols
    name: mxu_cols
    values: [64, 128]
    zip: square
  - path: hw.chip.hbm.bandwidth_gbyte_per_s
    name: hbm
    values: [450, 900]
constraints:
  - "not (n == 512 and mxu == 64 and hbm == 450)"
plots:
  - {{name: tflops, x: [n], y: [achieved_tflop_per_s], series: hbm}}
  - {{name: roof, kind: roofline, series: hbm, annotate: n}}
"""
KERNEL_SWEEP_IDS = [0, 1, 2, 3, 5, 6, 7]


def kernel_sweep(tmp, extra=""):
    return write(tmp, "ksweep.yaml", KERNEL_SWEEP.format(src=SRC, extra=extra))


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def without_wall_times(out):
    """results.csv and results.jsonl of a sweep minus the wall-time fields and the count of programs a
    point read from the sweep's program memo (which point simulates a shared program depends on
    timing): must be identical between runs."""
    header, rows = read_csv(os.path.join(out, "results.csv"))
    csv_rows = [[r[c] for c in header if c != "wall_time_s"] for r in rows]
    records = read_jsonl(os.path.join(out, "results.jsonl"))
    for r in records:
        del r["wall_time_s"]
        if r["report"]:
            del r["report"]["run"]["wall_time_s"]
            r["report"]["run"].pop("memoized", None)
    return header, csv_rows, records


def test_sweep_end_to_end(tmp):
    """A kernel sweep with --jobs 2: crossed and zipped axes, a constraint, one row per point in
    results.csv and results.jsonl, sorted, deterministic, the report of every point."""
    sweep = kernel_sweep(tmp)
    out = os.path.join(tmp, "out")
    proc, where = run(["sweep", sweep, "--jobs", "2", "--out", out, "--no-plots"], tmp)
    check("ksweep: 7 points (7 ok, 0 failed)" in proc.stdout, "summary", where)
    check("sweep ksweep: 7/7 points" in proc.stderr and "\033" not in proc.stderr,
          "no plain progress line on a non-terminal stderr", where)
    header, rows = read_csv(os.path.join(out, "results.csv"))
    check(header[:8] == ["point", "n", "mxu", "mxu_cols", "hbm", "status", "exit_code", "error"], "header " + str(header))
    for col in ("device_cycles", "device_time_s", "achieved_tflop_per_s", "mxu_utilization", "hbm_bytes",
                "flops_per_byte", "config_hash"):
        check(col in header, "no column " + col)
    check(header[-1] == "wall_time_s", "wall_time_s is not last")
    check([int(r["point"]) for r in rows] == KERNEL_SWEEP_IDS, "point ids " + str([r["point"] for r in rows]))
    for r in rows:
        check(r["status"] == "ok" and r["exit_code"] == "0" and int(r["device_cycles"]) > 0, "row " + str(r))
        check(r["mxu"] == r["mxu_cols"], "zipped axes differ: " + str(r))
    check({(r["n"], r["mxu"], r["hbm"]) for r in rows} ==
          {(n, m, h) for n in ("256", "512") for m in ("64", "128") for h in ("450", "900")} - {("512", "64", "450")},
          "points are not the cross of n, the zipped MXU size and hbm minus the constraint")
    # The same bandwidth with a smaller MXU cannot be faster.
    by = {(r["n"], r["mxu"], r["hbm"]): int(r["device_cycles"]) for r in rows}
    check(by[("256", "64", "900")] >= by[("256", "128", "900")], "a 64x64 MXU beat a 128x128 one")
    records = read_jsonl(os.path.join(out, "results.jsonl"))
    check([r["point"] for r in records] == KERNEL_SWEEP_IDS, "jsonl point ids")
    for rec, row in zip(records, rows):
        check(rec["report"]["summary"]["device_cycles"] == int(row["device_cycles"]), "csv and jsonl disagree")
        check(rec["config_hash"] == rec["report"]["tpusim"]["config_hash"] == row["config_hash"],
              "the planned config hash is not the run's")
        check("hw.chip.core.mxu.rows=" + row["mxu"] in rec["overrides"], "overrides " + str(rec["overrides"]))
        check(rec["axes"]["n"] == int(row["n"]), "typed axis value")
        check(os.path.isfile(os.path.join(out, "points", "p{:04d}".format(rec["point"]), "report.json")),
              "no point directory for point {}".format(rec["point"]))
    # Same sweep, same bytes (apart from wall times).
    out2 = os.path.join(tmp, "out2")
    proc, where = run(["sweep", sweep, "--jobs", "2", "--out", out2, "--no-plots", "--quiet"], tmp)
    check(proc.stdout == "" and proc.stderr == "", "--quiet printed something", where)
    check(without_wall_times(out) == without_wall_times(out2), "two runs of one sweep differ beyond wall times")
    # Rows are written as points finish but end sorted: point 0 (a training run) finishes last here.
    write(tmp, "tiny.yaml", TINY_TRAINING)
    order = write(tmp, "order.yaml", """hw: {src}/configs/hw/v3-8.yaml
workload: tiny.yaml
axes:
  - path: workload
    values: [tiny.yaml, {src}/configs/workloads/kernel_matmul_512.yaml, {src}/configs/workloads/kernel_layernorm_2048x768.yaml]
""".format(src=SRC))
    out3 = os.path.join(tmp, "order")
    run(["sweep", order, "--jobs", "2", "--out", out3, "-q"], tmp)
    _, rows = read_csv(os.path.join(out3, "results.csv"))
    check([(r["point"], r["workload"]) for r in rows] ==
          [("0", "tiny"), ("1", "kernel_matmul_512"), ("2", "kernel_layernorm_2048x768")], "rows not sorted by point")
    check([r["point"] for r in read_jsonl(os.path.join(out3, "results.jsonl"))] == [0, 1, 2], "jsonl not sorted")
    # --dry-run lists the points without running them.
    proc, where = run(["sweep", sweep, "--dry-run"], tmp)
    check("7 points of a 8-point grid" in proc.stdout and "n=512 mxu=128 mxu_cols=128 hbm=900" in proc.stdout,
          "dry run", where)


def test_sweep_failing_points(tmp):
    """Points that fail (exit 3 on the simulated hardware, exit 2 for an invalid value, a timeout) are
    recorded with their exit code and first error line; the others run; the sweep exits 4."""
    sweep = write(tmp, "fail.yaml", """hw: {src}/configs/hw/v3-8.yaml
workload: {src}/configs/workloads/kernel_encoder_block_512x1024.yaml
engine: analytical
axes:
  - path: hw.chip.core.vmem.size_mib
    name: vmem_mib
    values: [16, 1]
  - path: hw.chip.core.mxu.count
    name: mxus
    values: [0, 2]
""".format(src=SRC))
    out = os.path.join(tmp, "out")
    proc, where = run(["sweep", sweep, "--jobs", "2", "--out", out], tmp, expect=4)
    _, rows = read_csv(os.path.join(out, "results.csv"))
    by = {(r["vmem_mib"], r["mxus"]): r for r in rows}
    check(len(rows) == 4, "rows: {}".format(len(rows)), where)
    check(by[("16", "2")]["status"] == "ok" and int(by[("16", "2")]["device_cycles"]) > 0, "the good point", where)
    vm = by[("1", "2")]
    check(vm["status"] == "failed" and vm["exit_code"] == "3" and "VMEM" in vm["error"] and vm["device_cycles"] == "",
          "the out-of-VMEM point: " + str(vm), where)
    for key in (("16", "0"), ("1", "0")):
        r = by[key]
        check(r["status"] == "failed" and r["exit_code"] == "2" and "mxu.count" in r["error"] and "[1, 16]" in r["error"],
              "the invalid point: " + str(r), where)
    check("1 ok, 3 failed" in proc.stdout and "exit 3:" in proc.stdout, "summary of failures", where)
    # A timeout: padding to the longest example of each batch compiles a program per length (about 4 s); 0.2 s is not enough.
    slow = write(tmp, "slow.yaml", """hw: {src}/configs/hw/v3-8.yaml
workload: {src}/configs/workloads/bert_base_mrpc_v3-8_longest.yaml
timeout_s: 0.2
axes:
  - {{path: workload.seed, values: [0]}}
""".format(src=SRC))
    out = os.path.join(tmp, "slow")
    proc, where = run(["sweep", slow, "--out", out], tmp, expect=4)
    _, rows = read_csv(os.path.join(out, "results.csv"))
    check(rows[0]["status"] == "timeout" and rows[0]["exit_code"] == "124" and "timed out" in rows[0]["error"],
          "timeout row " + str(rows[0]), where)


def test_sweep_max_memory(tmp):
    """Issue 15: --max-memory on sweep is the memory of the points running at once; each of the
    --jobs points is given its share as its own --max-memory (a point above it fails with exit 2,
    naming the limit); bad text is exit 2 before anything runs; the resume command keeps it."""
    sweep = kernel_sweep(tmp)
    out = os.path.join(tmp, "tight")
    proc, where = run(["sweep", sweep, "--jobs", "2", "--max-memory", "2MiB", "--out", out, "--no-plots"], tmp, expect=4)
    _, rows = read_csv(os.path.join(out, "results.csv"))
    check(len(rows) == 7, "rows: {}".format(len(rows)), where)
    for r in rows:  # 2 MiB for 2 jobs: 1 MiB each, below any simulation's estimate
        check(r["status"] == "failed" and r["exit_code"] == "2" and "--max-memory 1MiB" in r["error"], "row " + str(r), where)
    out = os.path.join(tmp, "ample")
    proc, where = run(["sweep", sweep, "--jobs", "2", "--max-memory", "16GiB", "--out", out, "--no-plots"], tmp)
    check("7 points (7 ok, 0 failed)" in proc.stdout, "summary", where)
    expect_bad_input(tmp, ["sweep", sweep, "--max-memory", "lots"], ["--max-memory: value 'lots' must be a positive size"])


def test_sweep_resume(tmp):
    """--resume keeps the finished points (by id and configuration) and runs the rest; a changed
    sweep file does not reuse stale rows."""
    sweep = kernel_sweep(tmp)
    full, out = os.path.join(tmp, "full"), os.path.join(tmp, "out")
    run(["sweep", sweep, "--jobs", "2", "--out", full, "--no-plots", "-q"], tmp)
    run(["sweep", sweep, "--jobs", "2", "--out", out, "--no-plots", "-q"], tmp)
    # An interrupted run: three points written, a fourth cut off mid-line, no sorted rewrite.
    path = os.path.join(out, "results.jsonl")
    with open(path) as f:
        lines = f.read().splitlines(True)
    with open(path, "w") as f:
        f.write("".join(lines[:3]) + lines[3][:50])
    kept = [json.loads(line) for line in lines[:3]]
    proc, where = run(["sweep", sweep, "--jobs", "2", "--out", out, "--no-plots", "--resume"], tmp)
    check("7 points (7 ok, 0 failed, 3 resumed)" in proc.stdout, "resume summary", where)
    records = read_jsonl(path)
    for k in kept:  # not re-run: the very same record, wall time included
        check(k in records, "point {} was re-run".format(k["point"]))
    check(without_wall_times(out) == without_wall_times(full), "resumed results differ from a full run")
    # A different sweep file (another `set:`): same point ids, other configurations: nothing reused.
    changed = kernel_sweep(tmp, extra="set: [workload.dtype=bf16]\n")
    proc, where = run(["sweep", changed, "--out", out, "--no-plots", "--resume"], tmp)
    check("7 points (7 ok, 0 failed)" in proc.stdout and "resumed" not in proc.stdout, "stale rows reused", where)
    check(all("workload.dtype=bf16" in r["overrides"] for r in read_jsonl(path)), "old rows kept")


def test_sweep_shard_merge(tmp):
    """Three shards merged equal the unsharded sweep; overlapping inputs are deduplicated; inputs
    from another sweep are refused."""
    sweep = kernel_sweep(tmp)
    full = os.path.join(tmp, "full")
    run(["sweep", sweep, "--out", full, "--no-plots", "-q"], tmp)
    shards = []
    for i in range(3):
        d = os.path.join(tmp, "shard{}".format(i))
        proc, where = run(["sweep", sweep, "--shard", "{}/3".format(i), "--out", d], tmp)
        check("(shard {}/3)".format(i) in proc.stdout, "shard summary", where)
        check(not os.path.isdir(os.path.join(d, "plots")), "a shard drew plots")
        _, rows = read_csv(os.path.join(d, "results.csv"))
        check(len(rows) in (2, 3), "shard {} has {} points".format(i, len(rows)))
        shards.append(d)
    merged = os.path.join(tmp, "merged")
    proc, where = run(["sweep", "merge", merged] + shards[::-1] + ["--no-plots"], tmp)
    check("merged     7 points from 3 directories" in proc.stdout, "merge summary", where)
    check(without_wall_times(merged) == without_wall_times(full), "merged shards differ from the unsharded sweep")
    with open(os.path.join(merged, "sweep.json")) as a, open(os.path.join(full, "sweep.json")) as b:
        check(a.read() == b.read(), "sweep.json differs")
    proc, where = run(["sweep", "merge", os.path.join(tmp, "dup")] + shards + [shards[0], "--no-plots"], tmp)
    check("duplicates dropped" in proc.stdout, "duplicates not reported", where)
    check(without_wall_times(os.path.join(tmp, "dup")) == without_wall_times(full), "dedup")
    proc, where = run(["sweep", "merge", os.path.join(tmp, "part"), shards[0], "--no-plots"], tmp)
    check("points are missing" in proc.stderr, "no warning for a missing shard", where)
    other = os.path.join(tmp, "other")
    run(["sweep", sweep, "--shard", "1/3", "--set", "workload.dtype=bf16", "--out", other, "-q"], tmp)
    expect_bad_input(tmp, ["sweep", "merge", os.path.join(tmp, "bad"), shards[0], other],
                     ["other", "different sweep"])
    expect_bad_input(tmp, ["sweep", "merge", os.path.join(tmp, "bad"), tmp], ["not a sweep output directory"])


# Two kernel points (milliseconds) then two training points that take seconds (padding to the
# longest example compiles a program per length): with --jobs 2 the slow ones are running once the
# fast ones have their rows.
STOP_SWEEP = """name: stop
hw: {src}/configs/hw/v3-8.yaml
workload: {src}/configs/workloads/kernel_matmul_512.yaml
engine: analytical
axes:
  - path: workload
    values: [{src}/configs/workloads/kernel_matmul_512.yaml, {src}/configs/workloads/kernel_matmul_1024.yaml,
             {src}/configs/workloads/bert_base_mrpc_v3-8_longest.yaml, {src}/configs/workloads/bert_base_mrpc_v3-8_longest.yaml]
"""


def children_of(pid):
    """The pids of the live (not zombie) processes whose parent is `pid`."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/{}/stat".format(entry)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def alive(pid):
    try:
        with open("/proc/{}/stat".format(pid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(cond, what, seconds=60):
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    raise Failure("timed out waiting for " + what)


def start_sweep(args, tmp):
    return subprocess.Popen([TPUSIM, "sweep"] + args, cwd=tmp, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_sweep(proc, sig, expect):
    """Sends `sig` to a running sweep once its two slow points run; checks they are gone afterwards."""
    children = wait_for(lambda: len(children_of(proc.pid)) == 2 and children_of(proc.pid), "two running points")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    where = "--- exit {}\n--- stdout\n{}--- stderr\n{}".format(proc.returncode, out, err)
    check(proc.returncode == expect, "exit code {} (expected {})".format(proc.returncode, expect), where)
    import time
    time.sleep(0.1)
    survivors = [c for c in children if alive(c)]
    check(not survivors, "point processes {} survived the sweep".format(survivors), where)
    return out, err, where


def test_sweep_interrupt(tmp):
    """SIGINT, then SIGTERM on --resume: the running points are killed (none survives), the finished
    rows are kept (sorted), the killed ones are not recorded, the resume command is printed, the exit
    codes are 130 and 143; the resumed run keeps the rows of the first."""
    import signal
    sweep = write(tmp, "stop.yaml", STOP_SWEEP.format(src=SRC))
    out = os.path.join(tmp, "out dir")  # a space: the printed command must quote it
    proc = start_sweep([sweep, "--jobs", "2", "--out", out, "--no-plots"], tmp)
    wait_for(lambda: os.path.exists(os.path.join(out, "results.jsonl")) and
             len(read_jsonl(os.path.join(out, "results.jsonl"))) == 2, "the two kernel rows")
    stdout, stderr, where = stop_sweep(proc, signal.SIGINT, 130)
    _, rows = read_csv(os.path.join(out, "results.csv"))
    check([r["point"] for r in rows] == ["0", "1"] and all(r["status"] == "ok" for r in rows), "rows " + str(rows), where)
    check([r["point"] for r in read_jsonl(os.path.join(out, "results.jsonl"))] == [0, 1], "jsonl rows", where)
    check("sweep stopped by SIGINT: 2 of 4 points finished" in stderr and "2 not run" in stderr, "stop message", where)
    resume = "resume with: tpusim sweep {} --jobs 2 --no-plots --out '{}' --resume".format(sweep, out)
    check(resume in stderr, "resume command", where)
    check("Traceback" not in stderr and "terminate" not in stderr, "crash", where)
    # The printed command resumes: the two rows are kept; SIGTERM stops it the same way.
    proc = start_sweep([sweep, "--jobs", "2", "--no-plots", "--out", out, "--resume"], tmp)
    stdout, stderr, where = stop_sweep(proc, signal.SIGTERM, 143)
    check("4 points (2 ok, 0 failed, 2 resumed)" in stdout, "resumed summary", where)
    check("sweep stopped by SIGTERM: 2 of 4 points finished" in stderr, "stop message", where)
    check([r["point"] for r in read_jsonl(os.path.join(out, "results.jsonl"))] == [0, 1], "rows after SIGTERM", where)


def test_sweep_lock(tmp):
    """A second sweep on an output directory in use exits 2 naming it and the first one's pid; the
    lock file left by a killed sweep does not block the next."""
    import signal
    # Two slow points only: both start at once, and nothing starts after them.
    sweep = write(tmp, "slow.yaml", STOP_SWEEP.format(src=SRC).replace(
        "{0}/configs/workloads/kernel_matmul_512.yaml, {0}/configs/workloads/kernel_matmul_1024.yaml,\n".format(SRC), ""))
    out = os.path.join(tmp, "out")
    first = start_sweep([sweep, "--jobs", "2", "--out", out, "--no-plots"], tmp)
    points = []
    try:
        points = wait_for(lambda: len(children_of(first.pid)) == 2 and children_of(first.pid), "the first sweep's points")
        expect_bad_input(tmp, ["sweep", kernel_sweep(tmp), "--out", out, "--no-plots"],
                         ["--out", out, "another tpusim sweep", "pid {}".format(first.pid), "another directory"])
    finally:
        first.kill()  # SIGKILL: no chance to clean up; the kernel drops the lock
        first.communicate(timeout=60)
        for c in points:  # orphaned by the SIGKILL: ours to end
            if alive(c):
                os.kill(c, signal.SIGKILL)
    check(os.path.exists(os.path.join(out, ".tpusim-sweep.lock")), "no lock file")
    proc, where = run(["sweep", kernel_sweep(tmp), "--out", out, "--no-plots"], tmp)
    check("7 points (7 ok, 0 failed)" in proc.stdout, "sweep after a killed one", where)


def test_sweep_merge_into_input(tmp):
    """`sweep merge` refuses an OUT that is one of its inputs, also through a symlink or another
    spelling of the path, and leaves the input as it was."""
    sweep = kernel_sweep(tmp)
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    run(["sweep", sweep, "--shard", "0/2", "--out", a, "-q"], tmp)
    run(["sweep", sweep, "--shard", "1/2", "--out", b, "-q"], tmp)
    with open(os.path.join(a, "results.jsonl")) as f:
        before = f.read()
    os.symlink(a, os.path.join(tmp, "link"))
    for out in (a, os.path.join(tmp, "link"), os.path.join(tmp, "b", "..", "a") + "/"):
        expect_bad_input(tmp, ["sweep", "merge", out, a, b, "--no-plots"],
                         ["merge OUT", "must not be one of the merged directories", "merge into a new directory"])
    with open(os.path.join(a, "results.jsonl")) as f:
        check(f.read() == before, "the input was changed")
    run(["sweep", "merge", os.path.join(tmp, "m"), a, b, "--no-plots", "-q"], tmp)


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def is_svg(path):
    import xml.etree.ElementTree as ET
    try:
        return ET.parse(path).getroot().tag.endswith("svg")
    except ET.ParseError:
        return False


def test_sweep_plots(tmp):
    """The plots of a sweep (a line plot and a roofline) as valid PNG and SVG files; without
    matplotlib a warning and exit 0; --no-plots draws nothing."""
    sweep = kernel_sweep(tmp)
    out = os.path.join(tmp, "out")
    proc, where = run(["sweep", sweep, "--out", out], tmp)
    for name in ("tflops", "roof"):
        png, svg = (os.path.join(out, "plots", name + ext) for ext in (".png", ".svg"))
        check(os.path.isfile(png) and is_png(png), "no valid " + png, where)
        check(os.path.isfile(svg) and is_svg(svg), "no valid " + svg, where)
        check(png in proc.stdout, "summary does not list " + png, where)
    # The script also runs on its own, to redraw.
    script = os.path.join(SRC, "scripts", "plot_sweep.py")
    redraw = subprocess.run(["/usr/bin/python3", script, out], capture_output=True, text=True, timeout=300)
    check(redraw.returncode == 0 and "wrote" in redraw.stdout, "redraw failed: " + redraw.stderr)
    # A Python whose matplotlib cannot be imported: the sweep succeeds with a warning.
    fake = os.path.join(tmp, "fake")
    os.makedirs(os.path.join(fake, "matplotlib"))
    write(fake, os.path.join("matplotlib", "__init__.py"), "raise ImportError('no matplotlib here')\n")
    env = dict(os.environ, PYTHONPATH=fake)
    proc, where = run(["sweep", sweep, "--out", os.path.join(tmp, "nompl")], tmp, env=env)
    check("warning: plots skipped: matplotlib is not installed" in proc.stderr, "no matplotlib warning", where)
    check(os.path.isfile(os.path.join(tmp, "nompl", "results.csv")), "no results without matplotlib", where)
    run(["sweep", sweep, "--out", os.path.join(tmp, "noplots"), "--no-plots", "-q"], tmp)
    check(not os.path.isdir(os.path.join(tmp, "noplots", "plots")), "--no-plots drew plots")


def test_sweep_training(tmp):
    """A tiny training sweep (bert-tiny, a few steps): the training columns, the time breakdown."""
    write(tmp, "tiny.yaml", TINY_TRAINING)
    sweep = write(tmp, "train.yaml", """hw: {src}/configs/hw/v3-8.yaml
workload: tiny.yaml
set: [workload.steps=4, workload.epochs=1]
axes:
  - path: workload.padding
    values: [longest, max_length, "multiple_of:16"]
  - path: workload.per_device_batch_size
    name: batch
    values: [2, 4]
plots:
  - {{name: breakdown, kind: stacked_bar, x: [padding, batch]}}
""".format(src=SRC))
    out = os.path.join(tmp, "out")
    proc, where = run(["sweep", sweep, "--jobs", "2", "--out", out], tmp)
    header, rows = read_csv(os.path.join(out, "results.csv"))
    check(len(rows) == 6, "rows", where)
    parts = ["breakdown_{}_s".format(k) for k in ("compile", "warmup", "host", "device", "allreduce", "eval")]
    for r in rows:
        check(r["status"] == "ok" and float(r["total_time_s"]) > 0 and int(r["compiles"]) >= 1 and
              int(r["train_steps"]) == 4 and int(r["peak_hbm_bytes"]) > 0, "row " + str(r), where)
        total = sum(float(r[p]) for p in parts)
        check(abs(total - float(r["total_time_s"])) < 1e-6 * float(r["total_time_s"]), "breakdown != total")
    check(rows[4]["padding"] == "multiple_of:16", "a quoted value keeps its text")
    check(is_png(os.path.join(out, "plots", "breakdown.png")), "no stacked bar plot", where)
    check("device_cycles" not in header, "kernel columns in a training sweep")
    # results.jsonl carries each point's report less the op profiles, which stay in points/pNNNN/report.json
    with open(os.path.join(out, "results.jsonl")) as f:
        rec = json.loads(f.readline())
    check(all("op_profile" not in p for p in rec["report"]["programs"]), "op profiles in results.jsonl", where)
    point_reports = [os.path.join(out, "points", d, "report.json") for d in sorted(os.listdir(os.path.join(out, "points")))]
    with open(point_reports[0]) as f:
        check(all(p["op_profile"] for p in json.load(f)["programs"]), "no op profile in a point's report", where)


def test_sweep_program_memo(tmp):
    """A sweep's points share a program memo: a later seed reads the programs an earlier one simulated
    (run.memoized), with the same results as a sweep whose points simulate everything; the memo is a
    temporary directory, gone after the sweep."""
    write(tmp, "tiny.yaml", TINY_TRAINING)
    sweep = write(tmp, "seeds.yaml", """hw: {src}/configs/hw/v3-8.yaml
workload: tiny.yaml
set: [workload.padding=multiple_of:16, workload.epochs=1]
axes:
  - path: workload.seed
    values: [0, 1, 2]
""".format(src=SRC))
    env = dict(os.environ, TMPDIR=tmp)
    results = {}
    for flag in ("", "--no-program-memo"):
        out = os.path.join(tmp, "out" + flag)
        proc, where = run(["sweep", sweep, "--jobs", "1", "--out", out, "--no-plots"] + ([flag] if flag else []), tmp, env=env)
        header, rows = read_csv(os.path.join(out, "results.csv"))
        check(len(rows) == 3 and all(r["status"] == "ok" for r in rows), "rows", where)
        memoized = []
        for d in sorted(os.listdir(os.path.join(out, "points"))):
            with open(os.path.join(out, "points", d, "report.json")) as f:
                memoized.append(json.load(f)["run"]["memoized"])
        if flag:
            check(memoized == [0, 0, 0], "--no-program-memo points read a memo: {}".format(memoized), where)
        else:
            check(memoized[0] == 0 and memoized[1] > 0 and memoized[2] > 0, "memoized per point: {}".format(memoized), where)
        results[flag] = [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows]
    check(results[""] == results["--no-program-memo"], "a memo changed the results")
    check(not [e for e in os.listdir(tmp) if e.startswith("tpusim-memo-")], "the memo directory was left behind")


def test_sweep_bad_input(tmp):
    base = "hw: {src}/configs/hw/v3-8.yaml\nworkload: {src}/configs/workloads/kernel_matmul_1024.yaml\n".format(src=SRC)
    cases = [
        ("axes:\n  - path: hw.chip.core.mxu.rowz\n    values: [1]\n", ["bad.yaml:4", "axes[0].path", "rowz",
                                                                        "did you mean 'rows'"]),
        ("axes:\n  - path: workload.shape.n\n    valuse: [1]\n", ["bad.yaml:5", "axes[0].valuse", "did you mean 'values'"]),
        ("axes:\n  - path: workload.shape.n\n    range: {start: 8, stop: 64, mul: 1}\n", ["axes[0].range.mul", "'1'",
                                                                                       "must be > 1"]),
        ("axes:\n  - path: workload.shape.n\n    values: [1]\nconstraints: ['m > 1']\n", ["constraints[0]", "unknown name 'm'"]),
        ("axes:\n  - path: workload.shape.n\n    values: [1]\nplots:\n  - {name: p, x: [n], y: [tflops]}\n",
         ["plots[0].y[0]", "tflops", "not an axis name or a results column"]),
        ("engine: systemcc\naxes:\n  - {path: workload.shape.n, values: [1]}\n", ["engine", "did you mean 'systemc'"]),
    ]
    for text, needles in cases:
        bad = write(tmp, "bad.yaml", base + text)
        expect_bad_input(tmp, ["sweep", bad], needles)
        expect_bad_input(tmp, ["validate", bad], needles[:2])
    good = kernel_sweep(tmp)
    expect_bad_input(tmp, ["sweep", good, "--shard", "3/3"], ["--shard", "3/3", "0 <= I < N"])
    expect_bad_input(tmp, ["sweep", good, "--set", "hw.chip.core.mxu.rows=32"], ["--set", "is an axis of the sweep"])
    expect_bad_input(tmp, ["sweep", "missing.yaml"], ["missing.yaml"])
    expect_bad_input(tmp, ["sweep"], ["sweep file is required"])
    proc, where = run(["validate", good], tmp)
    check("ok " + good in proc.stdout, "validate does not accept a sweep file", where)


def test_shipped_sweep(tmp, sweep):
    """A shipped sweep: every point's configs load (dry run), and its first point runs (shortened:
    two training steps) with every plot drawn."""
    proc, where = run(["sweep", sweep, "--dry-run"], tmp)
    check("invalid" not in proc.stdout, "a shipped sweep has invalid points", where)
    points = int(re.search(r": (\d+) points of a", proc.stdout).group(1))
    with open(sweep) as f:
        text = f.read()
    with open(os.path.join(SRC, "configs", "workloads", re.search(r"workload: \.\./workloads/(\S+)", text).group(1))) as f:
        training = "kind: training" in f.read()
    quick = ["--set", "workload.steps=2", "--set", "workload.epochs=1"] if training else []
    out = os.path.join(tmp, "out")
    proc, where = run(["sweep", sweep, "--shard", "0/{}".format(points), "--out", out, "-q"] + quick, tmp)
    _, rows = read_csv(os.path.join(out, "results.csv"))
    check(len(rows) == 1 and rows[0]["status"] == "ok", "first point: " + str(rows), where)
    merged = os.path.join(tmp, "merged")
    proc, where = run(["sweep", "merge", merged, out, "-q"], tmp)  # a shard draws no plots; merge does
    names = re.findall(r"- (?:\{\s*)?name: (\S+?)[,\s]", text.split("plots:", 1)[1])
    check(names, "no plots declared")
    for n in names:
        check(is_png(os.path.join(merged, "plots", n + ".png")), "plot {} not drawn".format(n), where)


def test_generations_named(tmp):
    """README and --help name every TPU generation whose chip file ships (configs/hw/chips/tpu_*.yaml)."""
    gens = sorted(os.path.basename(p)[len("tpu_"):-len(".yaml")]
                  for p in glob.glob(os.path.join(SRC, "configs", "hw", "chips", "tpu_*.yaml")))
    check(gens, "no chip files found")
    proc, where = run(["--help"], tmp)
    first = proc.stdout.splitlines()[0]
    with open(os.path.join(SRC, "README.md")) as f:
        readme = f.read()
    intro = readme.split("## What tpusim is", 1)[1].split("\n\n", 2)[1]
    for g in gens:
        check(re.search(r"\b{}\b".format(g), first), "--help does not name {}: {!r}".format(g, first), where)
        check(re.search(r"\b{}\b".format(g), intro), "README's 'What tpusim is' does not name {}".format(g))


REF = re.compile(r"(?<![\w/.-])((?:docs|configs|scripts|data|tests|bench|sim|compiler|models|workloads|app|config|"
                 r"sweep|traces|python)/[\w./-]*\w\.(?:md|yaml|py|sh|jsonl|json|csv|cc|h|txt|sbatch))(?![\w])")


def test_doc_references(tmp):
    """Every repository path named in the docs, configs and sources exists (no design file or other file
    the repository does not hold). Tests are skipped (they name scratch files), as are fenced code blocks
    in Markdown (example output)."""
    bad = []
    for root, dirs, files in os.walk(SRC):
        rel_root = os.path.relpath(root, SRC)
        dirs[:] = [d for d in dirs if not d.startswith((".", "build", "out")) and
                   not (rel_root == "." and d == "tests")]
        for fn in files:
            if not fn.endswith((".md", ".yaml", ".py", ".sh", ".cc", ".h", ".txt", ".cmake")):
                continue
            path = os.path.join(root, fn)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if fn.endswith(".md"):
                text = re.sub(r"```.*?```", "", text, flags=re.S)
            if re.search(r"\bDESIGN\.md\b", text):  # the design file the project was planned from stays outside
                bad.append("{}: the design file".format(os.path.relpath(path, SRC)))
            for m in REF.finditer(text):
                if re.search(r"\b[A-Z]{3,}\b", m.group(1)):  # a placeholder: configs/hw/NAME.yaml
                    continue
                if not os.path.exists(os.path.join(SRC, m.group(1))):
                    bad.append("{}: {}".format(os.path.relpath(path, SRC), m.group(1)))
    check(not bad, "references to files that do not exist:\n  " + "\n  ".join(sorted(set(bad))))


def test_plot_units(tmp):
    """Sweep plots draw byte columns in GiB and label axes and legends with the columns' meaning (the
    units and docs sweep.json carries)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("plot_sweep", os.path.join(SRC, "scripts", "plot_sweep.py"))
    ps = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ps)
    out = os.path.join(tmp, "sw")
    proc, where = run(["sweep", os.path.join(SRC, "configs", "sweeps", "precision.yaml"), "--shard", "0/6",
                       "--set", "workload.steps=2", "--out", out, "-q", "--no-plots"], tmp)
    with open(os.path.join(out, "sweep.json")) as f:
        desc = json.load(f)
    check(desc["figures"]["peak_hbm_bytes"]["unit"] == "bytes", "sweep.json lacks figure units", where)
    ps.FIGURES.update(desc["figures"])
    check(ps.axis_label(["peak_hbm_bytes"]) == "peak HBM use per device (GiB)",
          "axis label: " + ps.axis_label(["peak_hbm_bytes"]))
    check(abs(ps.value({"peak_hbm_bytes": str(3 << 30)}, "peak_hbm_bytes") - 3.0) < 1e-12, "bytes not in GiB")
    check(ps.words("breakdown_compile_s") == "XLA compilation", "legend: " + ps.words("breakdown_compile_s"))
    check(ps.axis_label(["breakdown_compile_s", "breakdown_host_s"]) == "time (s)", "stacked axis label")


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
