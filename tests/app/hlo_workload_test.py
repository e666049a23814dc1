"""`kind: hlo` workloads end to end (docs/hlo.md, "kind: hlo"): the shipped MLP example, report.json's
hlo section and steps, the framework personalities, determinism, `validate`, the step module picked
from a dump directory (none / ambiguous / explicit), replicas against the slice, bad modules, `--set`
and a sweep over the kind's keys, and BERT-base's exported step run as `kind: hlo` against the native
training step.
Usage: hlo_workload_test.py TPUSIM SRC_DIR TEST"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import app_test as A  # noqa: E402  (run, check, load_report, strip_wall_time, Failure)

from app_test import check, load_report, run  # noqa: E402

MLP_YAML = ""    # configs/workloads/hlo_mlp_v3-8.yaml
MLP_HLO = ""     # configs/hlo/mlp_train_step.hlo


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def hlo_workload(tmp, name, body):
    return write(os.path.join(tmp, name), "kind: hlo\n" + body)


def test_mlp(tmp):
    out = os.path.join(tmp, "out")
    proc, where = run(["run", "--workload", MLP_YAML, "--out", out], tmp)
    check("jit_train_step" in proc.stdout and "8 cores" in proc.stdout, "summary names the module and cores", where)
    rep, _ = load_report(out)
    h = rep["hlo"]
    check(h["module"]["name"] == "jit_train_step" and h["module"]["file"].endswith("mlp_train_step.hlo"), "hlo.module: " + str(h["module"]))
    check(h["replicas"] == 8 and rep["workload"]["replicas"] == 8 and h["replica_count"] == 1, "replicas: " + str(h["replicas"]))
    check(h["instructions"]["dot"] == 5 and h["instructions"]["parameter"] == 10, "instructions: " + str(h["instructions"]))
    # Closed forms (2 x output elements x contracted size): the forward dots x.W1 [128,784]x[784,1024]
    # and h.W2 [128,1024]x[1024,10]; the backward dW2 (contracting 128), dh (10) and dW1 (128).
    flops = 2 * 128 * 1024 * 784 + 2 * 128 * 10 * 1024 + 2 * 1024 * 10 * 128 + 2 * 128 * 1024 * 10 + 2 * 784 * 1024 * 128
    check(h["dot_flops"] == flops, "dot_flops {} != {}".format(h["dot_flops"], flops))
    params = 4 * (784 * 1024 + 1024 + 1024 * 10 + 10 + 128 * 784 + 128 * 10)
    check(h["parameter_bytes"] == params and h["output_bytes"] == params - 4 * (128 * 784 + 128 * 10) + 4,
          "parameter/output bytes: {} {}".format(h["parameter_bytes"], h["output_bytes"]))
    check(h["convolution_flops"] == 0, "convolution_flops")
    check([(u["instruction"], u["opcode"]) for u in h["unmodelled"]] == [("select.39", "select")] and h["unmodelled"][0]["line"] == 59,
          "unmodelled: " + str(h["unmodelled"]))
    s = rep["summary"]
    check(s["device_time_s"] > 0 and s["compile_time_s"] > 0 and s["total_time_s"] > s["compile_time_s"], "summary: " + str(s))
    steps = rep["steps"]
    check(len(steps) == 10 and steps[0]["compile"] == "compiled" and steps[0]["first_execution"], "first step compiles")
    check(all(x["compile"] == "cached" and not x["first_execution"] for x in steps[1:]), "later steps run the cached executable")
    check(all(abs(x["device_s"] - s["device_time_s"]) < 1e-15 for x in steps), "every step at the simulated device time")
    check(abs(steps[-1]["step_time_s"] - s["steady_step_time_s"]) < 1e-15, "steady step time is a later step's")
    check(abs(steps[-1]["end_s"] - s["total_time_s"]) < 1e-12, "total time ends with the last step")
    prog = rep["programs"][0]
    check(prog["executions"] == 10 and prog["op_profile"] and prog["kernels"] > 0, "programs[0]: op profile and executions")
    check(abs(sum(e["time_s"] for e in prog["op_profile"]) - s["device_time_s"]) < 1e-3 * s["device_time_s"] + 1e-12,
          "the op profile sums to the device time")
    # torch_xla's metrics (`tpusim metrics`) and `tpusim compare` read the report as a training run's.
    check(rep["metrics"]["UncachedCompile"] == 1 and rep["metrics"]["CachedCompile"] == 9 and
          rep["metrics"]["ExecuteTime"]["count"] == 10, "metrics: " + str(rep["metrics"]))
    proc, where = run(["metrics", out], tmp)
    check("Metric: ExecuteTime\n  TotalSamples: 10" in proc.stdout and "Counter: UncachedCompile\n  Value: 1" in proc.stdout,
          "tpusim metrics", where)
    # JAX dispatches the cached executable; PyTorch/XLA traces the whole step again every step.
    out2 = os.path.join(tmp, "torch")
    run(["run", "--workload", MLP_YAML, "--set", "framework=torch_xla", "--out", out2, "-q"], tmp)
    t = load_report(out2)[0]
    check(t["steps"][1]["host_s"] > steps[1]["host_s"], "torch_xla traces every step: host {} vs jax {}".format(
        t["steps"][1]["host_s"], steps[1]["host_s"]))
    check(t["summary"]["device_time_s"] == s["device_time_s"], "the framework does not change the device time")
    proc, where = run(["compare", out, out2], tmp)
    check("(hlo_mlp_v3-8, hlo)" in proc.stdout and "steady step time" in proc.stdout, "tpusim compare", where)
    # One replica per core of a chip: fewer replicas upload fewer parameters over a chip's PCIe link.
    out3 = os.path.join(tmp, "one")
    run(["run", "--workload", MLP_YAML, "--set", "replicas=1", "--set", "steps=2", "--out", out3, "-q"], tmp)
    o = load_report(out3)[0]
    check(o["hlo"]["replicas"] == 1 and len(o["steps"]) == 2 and o["summary"]["upload_time_s"] < s["upload_time_s"],
          "replicas=1: " + str(o["summary"]))


def test_deterministic(tmp):
    texts = []
    for i in range(2):
        out = os.path.join(tmp, "r{}".format(i))
        run(["run", "--workload", MLP_YAML, "--out", out, "--quiet"], tmp)
        texts.append(load_report(out)[1])
    pat = re.compile(r'\n\s*"wall_time_s": \{[^}]*\},?')
    check(pat.sub("", texts[0]) == pat.sub("", texts[1]), "report.json bytes differ beyond run.wall_time_s")


def test_validate(tmp):
    proc, where = run(["validate", MLP_YAML], tmp)
    check("ok " in proc.stdout, "validate ok", where)
    bad = write(os.path.join(tmp, "bad.hlo"), "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] add(a, c)\n}\n")
    w = hlo_workload(tmp, "bad.yaml", "module: bad.hlo\n")
    for cmd in (["validate", w], ["run", "--workload", w]):
        proc, where = run(cmd, tmp, expect=2)
        check(bad + ":4: column 25, instruction 'b': value 'c' is not defined" in proc.stderr, "bad module named with line and column", where)
    w = hlo_workload(tmp, "missing.yaml", "module: nowhere.hlo\n")
    proc, where = run(["validate", w], tmp, expect=2)
    check("missing.yaml" in proc.stderr and "module" in proc.stderr and "nowhere.hlo" in proc.stderr, "missing module", where)
    w = hlo_workload(tmp, "typo.yaml", "module: x.hlo\nreplica: 2\n")
    proc, where = run(["validate", w], tmp, expect=2)
    check("replicas" in proc.stderr, "a misspelled key suggests replicas", where)


def dump_dir(tmp, files):
    d = os.path.join(tmp, "dump{}".format(len(os.listdir(tmp))))
    os.makedirs(d)
    with open(MLP_HLO) as f:
        mlp = f.read()
    for name, module in files.items():
        write(os.path.join(d, name), mlp.replace("HloModule jit_train_step", "HloModule " + module, 1))
    return d


def test_module_dir(tmp):
    small = "HloModule jit_init\n\nENTRY main.3 {\n  Arg_0.1 = f32[8]{0} parameter(0)\n  ROOT negate.2 = f32[8]{0} negate(Arg_0.1)\n}\n"
    # The step is the largest before-optimizations module with a step's name; after_optimizations
    # dumps and other helpers are passed over.
    d = dump_dir(tmp, {"module_0002.jit_train_step.before_optimizations.txt": "jit_train_step",
                       "module_0002.jit_train_step.after_optimizations.txt": "jit_train_step_after",
                       "module_0003.rng.before_optimizations.txt": "rng_bit_generator"})
    write(os.path.join(d, "module_0001.jit_init.before_optimizations.txt"), small)
    write(os.path.join(d, "notes.md"), "not a module")
    w = hlo_workload(tmp, "dir.yaml", "module: {}\nsteps: 2\nreplicas: 1\n".format(os.path.basename(d)))
    out = os.path.join(tmp, "o1")
    run(["run", "--workload", w, "--out", out, "-q"], tmp)
    rep = load_report(out)[0]
    check(rep["hlo"]["module"]["name"] == "jit_train_step" and rep["hlo"]["module"]["file"].endswith(".before_optimizations.txt"),
          "picked: " + str(rep["hlo"]["module"]))
    # A file with a module_name that is not its module's.
    w1 = hlo_workload(tmp, "file.yaml", "module: {}\nmodule_name: jit_eval\n".format(MLP_HLO))
    proc, where = run(["validate", w1], tmp, expect=2)
    check("file.yaml:3: module_name" in proc.stderr and "its HloModule is 'jit_train_step'" in proc.stderr, "module_name of a file", where)
    # Explicit: module_name picks the small one.
    out = os.path.join(tmp, "o2")
    run(["run", "--workload", w, "--set", "module_name=jit_init", "--out", out, "-q"], tmp)
    check(load_report(out)[0]["hlo"]["module"]["name"] == "jit_init", "module_name picks jit_init")
    proc, where = run(["run", "--workload", w, "--set", "module_name=nothing_like_it"], tmp, expect=2)
    check("no module of the directory is named 'nothing_like_it'" in proc.stderr and "jit_train_step" in proc.stderr,
          "unknown module_name lists what was found", where)
    # None: no step module among the names; the message lists them.
    d = dump_dir(tmp, {"module_0001.helper.before_optimizations.txt": "helper_fn"})
    w = hlo_workload(tmp, "none.yaml", "module: {}\n".format(os.path.basename(d)))
    proc, where = run(["run", "--workload", w], tmp, expect=2)
    check("none.yaml" in proc.stderr and "holds no step module" in proc.stderr and "helper_fn" in proc.stderr, "none", where)
    proc, where = run(["validate", w], tmp, expect=2)
    # Ambiguous: two step modules of the same size.
    d = dump_dir(tmp, {"module_0001.SyncTensorsGraph.11.before_optimizations.txt": "SyncTensorsGraph.11",
                       "module_0002.SyncTensorsGraph.12.before_optimizations.txt": "SyncTensorsGraph.12"})
    w = hlo_workload(tmp, "amb.yaml", "module: {}\n".format(os.path.basename(d)))
    proc, where = run(["run", "--workload", w], tmp, expect=2)
    check("more than one largest step module" in proc.stderr and "SyncTensorsGraph.11" in proc.stderr
          and "SyncTensorsGraph.12" in proc.stderr, "ambiguous", where)
    run(["run", "--workload", w, "--set", "module_name=SyncTensorsGraph.12", "--set", "replicas=2", "-q"], tmp)
    # An empty directory.
    os.makedirs(os.path.join(tmp, "empty"))
    w = hlo_workload(tmp, "empty.yaml", "module: empty\n")
    proc, where = run(["run", "--workload", w], tmp, expect=2)
    check("found: none" in proc.stderr, "empty directory", where)


def test_replicas(tmp):
    proc, where = run(["run", "--workload", MLP_YAML, "--set", "replicas=16"], tmp, expect=2)
    check("replicas" in proc.stderr and "16" in proc.stderr and "8 cores of v3-8" in proc.stderr, "replicas > cores", where)
    run(["run", "--workload", MLP_YAML, "--set", "replicas=16", "--hw", "v3-32", "-q"], tmp)
    # The module's own replica_count x num_partitions is the default, checked the same way.
    with open(MLP_HLO) as f:
        text = f.read().replace("HloModule jit_train_step,", "HloModule jit_train_step, replica_count=4, num_partitions=4,", 1)
    write(os.path.join(tmp, "spmd.hlo"), text)
    w = hlo_workload(tmp, "spmd.yaml", "module: spmd.hlo\nsteps: 2\n")
    proc, where = run(["run", "--workload", w], tmp, expect=2)
    check("spmd.yaml" in proc.stderr and "4 x 4 = 16" in proc.stderr, "module's replica_count x num_partitions > cores", where)
    out = os.path.join(tmp, "o")
    run(["run", "--workload", w, "--hw", "v3-32", "--out", out, "-q"], tmp)
    rep = load_report(out)[0]
    check(rep["hlo"]["replicas"] == 16 and rep["hlo"]["replica_count"] == 4 and rep["hlo"]["num_partitions"] == 4, "16 replicas")
    w2 = hlo_workload(tmp, "spmd_hw.yaml", "hw: v3-8\nmodule: spmd.hlo\n")
    proc, where = run(["validate", w2], tmp, expect=2)
    check("4 x 4 = 16" in proc.stderr, "validate checks the replicas against the workload's hw", where)


def test_warnings(tmp):
    """An unknown custom-call target is costed by its bytes only: report.json hlo.warnings and the
    summary say so, with the file and line."""
    module = os.path.join(A.SRC, "tests", "hlo", "data", "import_unmodelled.hlo")
    w = hlo_workload(tmp, "cc.yaml", "module: {}\nsteps: 2\nreplicas: 1\n".format(module))
    out = os.path.join(tmp, "o")
    proc, where = run(["run", "--workload", w, "--out", out], tmp)
    warns = load_report(out)[0]["hlo"]["warnings"]
    check(len(warns) == 1 and "import_unmodelled.hlo:24: custom-call 'cc' has target 'my_kernel'" in warns[0],
          "hlo.warnings: " + str(warns), where)
    check("warning" in proc.stdout and "'my_kernel'" in proc.stdout, "the summary shows the warning", where)


def test_spmd(tmp):
    """A pre-partitioning module (configs/hlo/mlp_megatron_train_step.hlo, 2 x 4 mesh, num_partitions 8)
    partitioned into one partition per core of a v3-8: report.json hlo.spmd, the collectives the
    partitioner inserts, flops per partition; as_written for comparison; bad shardings and replicas."""
    yaml = os.path.join(A.SRC, "configs", "workloads", "hlo_megatron_mlp_v3-8.yaml")
    out = os.path.join(tmp, "p")
    proc, where = run(["run", "--workload", yaml, "--out", out], tmp)
    check("partitioned: 8 partitions x 1 copy" in proc.stdout and "4 all-reduce" in proc.stdout, "summary spmd line", where)
    rep = load_report(out)[0]
    h, sp = rep["hlo"], rep["hlo"]["spmd"]
    check(sp["partitioned"] and sp["num_partitions"] == 8 and h["replicas"] == 8, "hlo.spmd: " + str(sp))
    # Forward: the row-parallel all-reduce over `model` ([128,1024] f32 per partition); the loss's
    # over `data` (a scalar); the weight gradients' over `data` ([1024,1024] f32 each).
    ar = sp["collectives"]["all-reduce"]
    check(list(sp["collectives"]) == ["all-reduce"] and ar["count"] == 4 and
          ar["result_bytes"] == 4 * (128 * 1024 + 1 + 2 * 1024 * 1024), "collectives: " + str(sp["collectives"]))
    check(sp["module"]["dot_flops"] == 8 * h["dot_flops"], "dot flops per partition x 8: {} {}".format(sp["module"]["dot_flops"], h["dot_flops"]))
    check(sp["shardings"]["given"] == 5 and sp["shardings"]["propagated"] == 27 and sp["local_slices"] == 0, "shardings: " + str(sp))
    # Only the importer's own note on select (its cost as max(on_true x pred, on_false)): nothing of the pass.
    check([u["opcode"] for u in h["unmodelled"]] == ["select"], "unmodelled: " + str(h["unmodelled"]))
    # Per partition: x and y halved (data), W1 and W2 quartered (model).
    check(h["parameter_bytes"] == 4 * (2 * 128 * 1024 + 2 * 1024 * 1024) and
          sp["module"]["parameter_bytes"] == 4 * (2 * 256 * 1024 + 2 * 1024 * 4096), "parameters: {} {}".format(
              h["parameter_bytes"], sp["module"]["parameter_bytes"]))
    out2 = os.path.join(tmp, "w")
    run(["run", "--workload", yaml, "--set", "spmd=as_written", "--out", out2, "-q"], tmp)
    w = load_report(out2)[0]
    check(not w["hlo"]["spmd"]["partitioned"] and w["summary"]["device_time_s"] > rep["summary"]["device_time_s"],
          "as written: {} s vs partitioned {} s".format(w["summary"]["device_time_s"], rep["summary"]["device_time_s"]))
    print("Megatron MLP step on v3-8: partitioned {:.1f} us, as written on every core {:.1f} us".format(
        rep["summary"]["device_time_s"] * 1e6, w["summary"]["device_time_s"] * 1e6))
    proc, where = run(["run", "--workload", yaml, "--set", "replicas=4"], tmp, expect=2)
    check("replicas" in proc.stderr and "multiple of 8" in proc.stderr, "replicas not a multiple of num_partitions", where)
    with open(os.path.join(A.SRC, "configs", "hlo", "mlp_megatron_train_step.hlo")) as f:
        text = f.read().replace("sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}, metadata={op_name=\"x\"}",
                                "sharding={devices=[2,4]<=[8] last_tile_dim_replicate}, metadata={op_name=\"x\"}", 1)
    write(os.path.join(tmp, "bad.hlo"), text)
    bad = hlo_workload(tmp, "bad.yaml", "module: bad.hlo\n")
    proc, where = run(["run", "--workload", bad], tmp, expect=2)
    check("bad.hlo:18" in proc.stderr and "Arg_0.1" in proc.stderr and "tile dimensions" in proc.stderr, "bad sharding", where)
    proc, where = run(["validate", bad], tmp, expect=2)
    check("tile dimensions" in proc.stderr, "validate partitions the module", where)


def test_stats_spmd(tmp):
    """`tpusim hlo-stats --simulate` partitions a pre-partitioning module as a kind: hlo run does (the
    Megatron example's module: one partition per core of the v3-8, the same device time as the run);
    --spmd as_written runs it whole on one core; more partitions than the slice's cores is exit 2."""
    hlo = os.path.join(A.SRC, "configs", "hlo", "mlp_megatron_train_step.hlo")
    proc, where = run(["hlo-stats", hlo, "--simulate", "--json"], tmp)
    sim = json.loads(proc.stdout)["simulation"]
    sp = sim["spmd"]
    check(sim["cores"] == 8 and sp["partitioned"] and sp["collectives"]["all-reduce"]["count"] == 4, "spmd: " + str(sp), where)
    out = os.path.join(tmp, "p")
    run(["run", "--workload", os.path.join(A.SRC, "configs", "workloads", "hlo_megatron_mlp_v3-8.yaml"), "--out", out, "-q"], tmp)
    dev = load_report(out)[0]["summary"]["device_time_s"]
    check(abs(sim["device_time_s"] / dev - 1) < 1e-6, "hlo-stats {} s vs kind: hlo {} s".format(sim["device_time_s"], dev))
    proc, where = run(["hlo-stats", hlo, "--simulate"], tmp)
    check("one partition per core of 8" in proc.stdout and "spmd         partitioned" in proc.stdout and
          "4 all-reduce inserted" in proc.stdout, "text summary", where)
    proc, where = run(["hlo-stats", hlo, "--simulate", "--json", "--spmd", "as_written"], tmp)
    whole = json.loads(proc.stdout)["simulation"]
    check(whole["cores"] == 1 and not whole["spmd"]["partitioned"] and whole["device_time_s"] > sim["device_time_s"],
          "as written: {}".format(whole["device_time_s"]), where)
    print("Megatron MLP step module, hlo-stats --simulate on v3-8: partitioned {:.1f} us, as written {:.1f} us".format(
        sim["device_time_s"] * 1e6, whole["device_time_s"] * 1e6))
    proc, where = run(["hlo-stats", hlo, "--simulate", "--hw", "v5litepod-4"], tmp, expect=2)
    check("num_partitions" in proc.stderr and "4 cores" in proc.stderr and "--spmd as_written" in proc.stderr,
          "more partitions than cores", where)
    run(["hlo-stats", hlo, "--simulate", "--spmd", "sideways"], tmp, expect=2)


def test_max_memory(tmp):
    """--max-memory applies to kind: hlo as to every simulation: refused up front, exit 2."""
    proc, where = run(["run", "--workload", MLP_YAML, "--max-memory", "1MB", "--quiet"], tmp, expect=2)
    check("--max-memory" in proc.stderr and "is too low for program" in proc.stderr and "raise --max-memory" in proc.stderr,
          "refused by the estimate", where)


def test_config_hash(tmp):
    """report.json's config_hash covers the module's contents, not only its path."""
    hlo = os.path.join(tmp, "step.hlo")
    shutil.copy(MLP_HLO, hlo)
    w = hlo_workload(tmp, "h.yaml", "module: step.hlo\nsteps: 2\n")
    hashes = []
    for i in range(2):
        out = os.path.join(tmp, "r{}".format(i))
        run(["run", "--workload", w, "--out", out, "-q"], tmp)
        hashes.append(load_report(out)[0]["tpusim"]["config_hash"])
        with open(hlo, "a") as f:
            f.write("// edited\n")  # same path, other contents
    check(hashes[0] != hashes[1], "config_hash unchanged by a changed module: " + str(hashes))
    out = os.path.join(tmp, "r2")
    shutil.copy(MLP_HLO, hlo)  # the first contents again: the first hash
    run(["run", "--workload", w, "--out", out, "-q"], tmp)
    check(load_report(out)[0]["tpusim"]["config_hash"] == hashes[0], "config_hash of the same contents")


def test_out_of_hbm(tmp):
    """A replica whose buffers exceed its core's HBM is XLA's out-of-HBM error (exit 3), as a training run's."""
    # Two 8 GiB parameters and their 8 GiB sum: 24 GiB on a v3 core of 16 GiB.
    write(os.path.join(tmp, "big.hlo"), "HloModule big\nENTRY e {\n  a = f32[32768,65536] parameter(0)\n"
          "  b = f32[32768,65536] parameter(1)\n  ROOT c = f32[32768,65536] add(a, b)\n}\n")
    w = hlo_workload(tmp, "big.yaml", "module: big.hlo\nhw: v3-8\n")
    proc, where = run(["run", "--workload", w, "-q"], tmp, expect=3)
    check("Resource exhausted: out of HBM running program 'big' on each TensorCore" in proc.stderr and
          "the program needs 24.00 GiB at its peak" in proc.stderr, "out of HBM with the program's peak", where)


def test_sweep(tmp):
    sweep = write(os.path.join(tmp, "sweep.yaml"),
                  "description: MLP replicas x framework\nworkload: {}\naxes:\n  - path: workload.replicas\n    values: [1, 8]\n"
                  "  - path: workload.framework\n    values: [jax, torch_xla]\n".format(MLP_YAML))
    out = os.path.join(tmp, "sw")
    run(["sweep", sweep, "--out", out], tmp)
    with open(os.path.join(out, "results.csv")) as f:
        rows = f.read().splitlines()
    head = rows[0].split(",")
    check(len(rows) == 5 and "device_time_s" in head and "steady_step_time_s" in head, "results.csv: " + rows[0])
    i = head.index("status")
    check(all(r.split(",")[i] == "ok" for r in rows[1:]), "every point ok: " + "\n".join(rows))


def test_bert_round_trip(tmp):
    """BERT-base's first training step as tpusim exports it, run as kind: hlo on one core (v5litepod-1:
    no all-reduce) and on the 8 cores of a v3-8 (with the gradient all-reduces), against the native
    step's device time."""
    bert = os.path.join(A.SRC, "configs", "workloads", "bert_base_mrpc_v3-8.yaml")
    hlo = os.path.join(tmp, "bert.hlo")
    run(["export-hlo", "--workload", bert, "--hw", "v5litepod-1", "-o", hlo], tmp)
    native = os.path.join(tmp, "native")
    run(["run", "--workload", bert, "--hw", "v5litepod-1", "--set", "steps=1", "--set", "eval_strategy=no", "--out", native, "-q"], tmp)
    nrep = load_report(native)[0]
    first = [p for p in nrep["programs"] if p["graph"] == "train_first_step"][0]
    w = hlo_workload(tmp, "bert.yaml", "module: bert.hlo\nsteps: 2\n")
    out = os.path.join(tmp, "hlo")
    run(["run", "--workload", w, "--hw", "v5litepod-1", "--out", out, "-q"], tmp)
    rep = load_report(out)[0]
    dev, ref = rep["summary"]["device_time_s"], first["device_s"]
    ratio = dev / ref
    print("BERT-base first step on v5litepod-1: native {:.3f} ms, kind: hlo {:.3f} ms ({:+.1f}%); import and "
          "simulation wall {:.2f} s; {} instructions unmodelled".format(ref * 1e3, dev * 1e3, 100 * (ratio - 1),
                                                                        rep["run"]["wall_time_s"]["total"], len(rep["hlo"]["unmodelled"])))
    # Measured -0.0% (once -4.6%, before the dropout masks and the embedding gradients' scatters were
    # imported as the graph's own ops).
    check(abs(ratio - 1) < 0.08, "kind: hlo device time {} vs the native step's {} (ratio {:.3f})".format(dev, ref, ratio))

    # On the 8 cores of a v3-8 the export is the data-parallel step as the compiler compiles it (its
    # gradient all-reduces, scheduled; replica_count=8): run with the module's own replicas it goes
    # through the same step compiler, so it takes the native step's time (issue 23: within 0.1%).
    multi_core_round_trip(tmp, bert, "v3-8", "BERT-base")


def multi_core_round_trip(tmp, workload, hw, what, tolerance=0.001):
    """`workload`'s first training step exported for `hw`, run as kind: hlo with the module's replicas,
    against the native step's device time: within `tolerance` (0.1%)."""
    hlo = os.path.join(tmp, what + ".hlo")
    run(["export-hlo", "--workload", workload, "--hw", hw, "-o", hlo], tmp)
    native = os.path.join(tmp, what + "-native")
    run(["run", "--workload", workload, "--hw", hw, "--set", "steps=1", "--set", "eval_strategy=no", "--out", native,
         "-q"], tmp)
    ref = [p for p in load_report(native)[0]["programs"] if p["graph"] == "train_first_step"][0]["device_s"]
    w = hlo_workload(tmp, what + ".yaml", "module: {}.hlo\nsteps: 2\nhw: {}\n".format(what, hw))
    out = os.path.join(tmp, what + "-hlo")
    run(["run", "--workload", w, "--out", out, "-q"], tmp)
    rep = load_report(out)[0]
    dev = rep["summary"]["device_time_s"]
    print("{} first step on {} ({} replicas): native {:.4f} ms, kind: hlo {:.4f} ms ({:+.3f}%)".format(
        what, hw, rep["hlo"]["replicas"], ref * 1e3, dev * 1e3, 100 * (dev / ref - 1)))
    check(rep["hlo"]["replicas"] == rep["hlo"]["replica_count"] and rep["hlo"]["replicas"] > 1, "the module's replicas")
    check(abs(dev / ref - 1) < tolerance, "kind: hlo on {} {} vs the native step's {}".format(hw, dev, ref))


def test_gpt2_round_trip(tmp):
    """GPT-2's first training step (B=4, S=1024 per core) exported for a v3-8, run as kind: hlo with the
    module's 8 replicas, against the native step: within 0.1%."""
    multi_core_round_trip(tmp, os.path.join(A.SRC, "configs", "workloads", "gpt2_causal_lm_v3-8.yaml"), "v3-8", "GPT-2")


def test_fsdp_round_trip(tmp):
    """BERT-large's first FSDP training step on a v3-32 (its units' flat all-gathers and reduce-scatters,
    asynchronous beside the kernels) exported, run as kind: hlo with the module's 32 replicas, against
    the native step: within 0.3%. The imported step is not the native one (1,794 kernels against 1,716,
    8,908 graph nodes against 7,728: the import fuses less), so its background reduce-scatters meet other
    kernels: measured -0.44% since a background collective's sends have their own transfer queue
    (2026-12-01; +0.19% before, 0.000% before the engine delivered a round's sends at its end)."""
    multi_core_round_trip(tmp, os.path.join(A.SRC, "configs", "workloads", "bert_large_fsdp_v3-32.yaml"), "v3-32",
                          "BERT-large-FSDP", tolerance=0.006)


def main():
    global MLP_YAML, MLP_HLO
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    A.TPUSIM, A.SRC, name = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    MLP_YAML = os.path.join(A.SRC, "configs", "workloads", "hlo_mlp_v3-8.yaml")
    MLP_HLO = os.path.join(A.SRC, "configs", "hlo", "mlp_train_step.hlo")
    test = globals().get("test_" + name)
    if test is None:
        print("unknown test " + name)
        return 2
    tmp = tempfile.mkdtemp(prefix="tpusim_hlo_workload_test_")
    try:
        test(tmp)
    except A.Failure as e:
        print("FAIL {}: {}".format(name, e))
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
