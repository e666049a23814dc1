#!/usr/bin/env python3
"""The simulator's cost at scale: the runs of issue 24's targets table, each a whole `tpusim run`
process, with its wall time, peak RSS (the process high-water mark) and its wall time as a ratio
to the default run's (BERT-base MRPC on v3-8, 3 epochs) measured just before it, so that figures
taken on machines of different speed, or on one under load, compare.

    /usr/bin/python3 bench/speed/scale_targets.py [--tpusim build/tpusim] [--only SUBSTRING] [--list]

A run the simulator refuses up front (its estimate over --max-time or --max-memory; here at most
30 min and 20 GiB) is listed with the refusal's estimate instead of a time. It is a benchmark, not
a test: run it on an otherwise idle machine; the whole table takes 10-20 minutes.
The in-process kernel run and the 100-point sweep of the table have their own benchmarks:
bench/python/overhead.py and bench/sweep/run.sh.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA3 = os.path.join(ROOT, "configs", "workloads", "llama3_8b_v6e-8.yaml")
MLPERF = os.path.join(ROOT, "configs", "workloads", "mlperf_bert_large_v3-32.yaml")
LIMITS = ["--max-time", "30m", "--max-memory", "20GiB"]

# (name, the target, arguments after `tpusim run`)
CASES = [
    ("llama3-8b 24x1024/chip fsdp v6e-8, 3 steps", "<= 5 s, <= 1 GB",
     ["--workload", LLAMA3, "--set", "per_device_batch_size=24", "--set", "steps=3"]),
    ("llama3-8b 24x1024/chip fsdp v6e-256, 3 steps", "<= 30 s, <= 4 GB",
     ["--workload", LLAMA3, "--hw", "v6e-256", "--set", "per_device_batch_size=24", "--set", "steps=3"]),
    ("70b-class (80 x 8192) fsdp v6e-256, 3 steps", "<= 60 s",
     ["--workload", LLAMA3, "--hw", "v6e-256", "--set", "model=meta-llama/Llama-2-7b-hf",
      "--set", "model_config.layers=80", "--set", "model_config.hidden=8192", "--set", "model_config.heads=64",
      "--set", "model_config.intermediate=28672", "--set", "per_device_batch_size=1", "--set", "steps=3"]),
    ("default workload on v3-2048", "<= 20 s, <= 1 GB", ["--hw", "v3-2048"]),
    ("mlperf bert-large v3-32, the shipped run", "<= 0.5 s a step", ["--workload", MLPERF]),
]


def run(tpusim, args):
    """(wall s, peak RSS MiB, None) or (None, None, the refusal's or failure's text)."""
    with tempfile.TemporaryDirectory() as d:
        timing = os.path.join(d, "time")
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", timing, tpusim, "run", "--quiet", "--out", d] + LIMITS + args,
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            m = re.search(r"for program '[^']*': (.*?); use", p.stderr)
            return None, None, ("refused: " + m.group(1)) if m else ("exit %d: %s" % (p.returncode, p.stderr.strip()[:200]))
        rss_kib = int(open(timing).read().split()[-1])
        return wall, rss_kib / 1024, None


def default_wall(tpusim):
    return statistics.median(run(tpusim, [])[0] for _ in range(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    cases = [c for c in CASES if a.only in c[0]]
    if a.list:
        for name, target, _ in cases:
            print("%-48s target %s" % (name, target))
        return 0
    print("%-48s %10s %10s %12s %10s  %s" % ("run", "wall s", "RSS MiB", "default s", "ratio", "target"))
    for name, target, args in cases:
        ref = default_wall(a.tpusim)
        wall, rss, why = run(a.tpusim, args)
        if why:
            print("%-48s %s  (default run %.3f s)  target %s" % (name, why, ref, target))
        else:
            print("%-48s %10.2f %10.0f %12.3f %10.1f  %s" % (name, wall, rss, ref, wall / ref, target))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
