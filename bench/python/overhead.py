#!/usr/bin/env python3
"""The Python API's overhead against the CLI (docs/python.md, "Overhead against the CLI"): mean wall
time per run of N runs of a workload through `tpusim.run()` in this interpreter (without and with
out=) and through N `tpusim run --out DIR --quiet` processes.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/overhead.py [N]    # from the repository root
"""
import os
import subprocess
import sys
import tempfile
import time

import tpusim

BIN = os.environ.get("TPUSIM_BIN") or tpusim._core.default_tpusim_binary
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
CASES = [
    ("default: BERT-base MRPC training on v3-8, analytical", {}),
    ("kernel_matmul_1024, SystemC", {"workload": "configs/workloads/kernel_matmul_1024.yaml"}),
    ("kernel_matmul_512, analytical", {"workload": "configs/workloads/kernel_matmul_512.yaml", "engine": "analytical"}),
]


def per_run(fn):
    t = time.perf_counter()
    for _ in range(N):
        fn()
    return (time.perf_counter() - t) / N * 1e3


def cli(kw):
    args = [BIN, "run", "--quiet"]
    if "workload" in kw:
        args += ["--workload", kw["workload"]]
    if "engine" in kw:
        args += ["--engine", kw["engine"]]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(args + ["--out", d], check=True)


def api_out(kw):
    with tempfile.TemporaryDirectory() as d:
        tpusim.run(out=d, **kw)


for name, kw in CASES:
    tpusim.run(**kw)  # warm the page cache and the module
    print("%-55s CLI %6.1f ms   API %6.1f ms   API+out %6.1f ms" %
          (name, per_run(lambda: cli(kw)), per_run(lambda: tpusim.run(**kw)), per_run(lambda: api_out(kw))))
t = time.perf_counter()
subprocess.run([sys.executable, "-c", "import tpusim"], check=True)
print("import tpusim in a fresh interpreter (with its start-up): %.0f ms" % ((time.perf_counter() - t) * 1e3))
