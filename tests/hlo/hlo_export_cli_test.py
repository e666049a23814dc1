"""`tpusim export-hlo`: a kernel and a training workload written as HLO text that `tpusim hlo-stats`
reads back (the kernel's one dot, the step's header comment), to a file and to standard output; exit
2 with the flag named on bad input.
Usage: hlo_export_cli_test.py TPUSIM SRC_DIR"""
import json
import os
import subprocess
import sys
import tempfile

tpusim, src = sys.argv[1], sys.argv[2]
workloads = os.path.join(src, "configs", "workloads")


def run(*args):
    return subprocess.run([tpusim, *args], capture_output=True, text=True, timeout=60)


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "matmul.hlo")
    r = run("export-hlo", "--workload", os.path.join(workloads, "kernel_matmul_512.yaml"), "-o", out,
            "--set", "shape.m=256")
    check(r.returncode == 0 and r.stdout == "", "kernel export: " + r.stderr)
    s = run("hlo-stats", out, "--json")
    check(s.returncode == 0, "kernel module parses: " + s.stderr)
    j = json.loads(s.stdout)
    check(j["opcodes"] == {"dot": 1, "parameter": 2, "tuple": 1}, "kernel opcodes: {}".format(j["opcodes"]))
    with open(out) as f:
        text = f.read()
    check("f32[256,512]{1,0} dot(" in text, "the --set shape is exported")

    r = run("export-hlo", "--workload", os.path.join(workloads, "bert_base_mrpc_v3-8.yaml"),
            "--set", "model_config.layers=1", "--variant", "eval")
    check(r.returncode == 0 and r.stdout.startswith("// Exported by tpusim export-hlo"), "eval export: " + r.stderr)
    check("No collectives: the step has no gradients" in r.stdout, "header says the eval step has no collectives")
    step = os.path.join(tmp, "eval.hlo")
    with open(step, "w") as f:
        f.write(r.stdout)
    s = run("hlo-stats", step, "--json")
    check(s.returncode == 0, "eval module parses: " + s.stderr)
    check("rng" not in json.loads(s.stdout)["opcodes"], "no dropout in the eval step")

    # The training step of a v3-8: the gradient all-reduces over its 8 cores, combined and asynchronous.
    r = run("export-hlo", "--workload", os.path.join(workloads, "bert_base_mrpc_v3-8.yaml"),
            "--set", "model_config.layers=1")
    check(r.returncode == 0 and "replica_count=8" in r.stdout, "train export: replica_count=8 " + r.stderr)
    check("all-reduced over the slice's 8 cores" in r.stdout, "header says the gradients are all-reduced")
    check(r.stdout.count("all-reduce-start(") >= 2 and r.stdout.count("all-reduce-done(") == r.stdout.count("all-reduce-start("),
          "all-reduce-start/done pairs")
    step = os.path.join(tmp, "train.hlo")
    with open(step, "w") as f:
        f.write(r.stdout)
    s = run("hlo-stats", step, "--json")
    check(s.returncode == 0 and json.loads(s.stdout)["replica_count"] == 8, "train module parses: " + s.stderr)

    bad = [
        (["--variant", "test"], "--variant"),
        (["--target", "16"], "--target"),
        (["-o", os.path.join(tmp, "no", "such", "dir", "x.hlo")], "-o"),
    ]
    for extra, flag in bad:
        r = run("export-hlo", "--workload", os.path.join(workloads, "bert_base_mrpc_v3-8.yaml"),
                "--set", "model_config.layers=1", *extra)
        check(r.returncode == 2 and flag in r.stderr, "{}: exit {} {}".format(extra, r.returncode, r.stderr))
    r = run("export-hlo", "--workload", os.path.join(tmp, "missing.yaml"))
    check(r.returncode == 2 and "missing.yaml" in r.stderr, "missing workload: " + r.stderr)
    r = run("export-hlo", "--workload", os.path.join(workloads, "kernel_matmul_512.yaml"), "--variant", "eval")
    check(r.returncode == 2 and "--variant" in r.stderr, "--variant on a kernel: " + r.stderr)
print("ok")
