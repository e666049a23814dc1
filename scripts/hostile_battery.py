#!/usr/bin/env python3
"""Runs the hostile-input reproducers of issue 15 against a built tpusim and prints a Markdown table:
case, exit code, the first line of the message, peak RSS and wall time. Every case must end with
exit 0, 2 or 3 and a message naming what was wrong; the regression tests (tests/app/app_test.py,
tests/config/*, tests/sweep/*) assert each of them, this script shows them side by side.

  /usr/bin/python3 scripts/hostile_battery.py [build/tpusim]
"""
import os
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPUSIM = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "build", "tpusim"))
K = os.path.join(SRC, "configs", "workloads", "kernel_matmul_512.yaml")


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run(args, rss_file, timeout=600):
    """Exit code, first message line, peak RSS (MiB, GNU time) and wall seconds of one tpusim command."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o", rss_file, TPUSIM] + args, capture_output=True,
                           text=True, timeout=timeout, cwd=SRC)
        code, text = p.returncode, (p.stderr.strip() or p.stdout.strip())
    except subprocess.TimeoutExpired:
        code, text = "timeout", ""
    wall = time.monotonic() - t0
    try:
        with open(rss_file) as f:
            peak = "%d" % (int(f.read().split()[-1]) // 1024)
    except (OSError, ValueError, IndexError):
        peak = "?"
    line = text.splitlines()[0] if text else ""
    return code, line, peak, wall


def main():
    d = tempfile.mkdtemp(prefix="tpusim-battery-")
    deep = "a:\n" + "".join("  " * (i + 1) + "b:\n" for i in range(500))
    laughs = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        "%s: &%s [%s]\n" % (c, c, ",".join(["*" + p] * 9)) for p, c in zip("abcdefgh", "bcdefghi"))
    parens = "(" * 10000 + "1" + ")" * 10000
    sweep_parens = write(d, "parens.yaml", "name: parens\nhw: v3-8\nworkload: %s\naxes:\n  - {path: workload.shape.m, values: [128]}\n"
                         "constraints: ['%s']\n" % (K, parens))
    sweep_escape = write(d, "escape.yaml", "name: ../../../x\nhw: v3-8\nworkload: %s\naxes:\n  - {path: workload.shape.m, values: [128]}\n" % K)
    cases = [
        ("1a self-referencing alias as a workload", ["run", "--workload", write(d, "alias.yaml", "a: &a [*a]\n")]),
        ("1a self-referencing alias in --set", ["run", "--set", "slice.topology.dims=&a [*a]"]),
        ("1b 10,000 nested parentheses (sweep --dry-run)", ["sweep", sweep_parens, "--dry-run"]),
        ("1b 10,000 nested parentheses (validate)", ["validate", sweep_parens]),
        ("1c shape.m = 2^63-1 (run)", ["run", "--workload", K, "--set", "shape.m=9223372036854775807"]),
        ("1c shape.m = 2^64-1 (run)", ["run", "--workload", K, "--set", "shape.m=18446744073709551615"]),
        ("1c shape.m = 2^63-1 (validate)", ["validate", write(d, "m63.yaml", open(K).read().replace("m: 512", "m: 9223372036854775807"))]),
        ("2 shape.m = 2^40 (was a hang)", ["run", "--workload", K, "--set", "shape.m=1099511627776"]),
        ("3 billion laughs (380 bytes)", ["validate", write(d, "laughs.yaml", laughs)]),
        ("3 kernel shapes 2^20 per dimension", ["run", "--workload", K, "--set", "shape.m=1048576", "--set", "shape.k=1048576", "--set", "shape.n=1048576"]),
        ("3 epochs: 1048576", ["run", "--set", "workload.epochs=1048576", "--out", os.path.join(d, "e1")]),
        ("3 epochs: 10000 (report size)", ["run", "--set", "workload.epochs=10000", "-q", "--out", os.path.join(d, "e2")]),
        ("3 largest in-range model_config", ["run", "--out", os.path.join(d, "e3")] + sum(
            (["--set", "workload." + x] for x in ["model=custom", "model_config.layers=1024", "model_config.hidden=65536",
                                                  "model_config.heads=1024", "model_config.intermediate=262144",
                                                  "model_config.vocab=4194304", "model_config.max_position=65536"]), [])),
        ("4 kernel on chip 99", ["run", "--workload", K, "--set", "workload.chip=99"]),
        ("4 kernel on core 5", ["run", "--workload", write(d, "core5.yaml", open(K).read() + "core: 5\n")]),
        ("4 max_length above max_position", ["run", "--set", "workload.max_length=1024", "--set", "workload.model_config.max_position=512"]),
        ("4 unknown dataset", ["run", "--workload", write(d, "ds.yaml", "kind: training\nmodel: bert-base-cased\nper_device_batch_size: 4\n"
                                                          "dataset:\n  train: glue_nope/train/bert-base-cased\n")]),
        ("4 compile_cache dir that is a file", ["run", "--set", "compile_cache.persistent_dir=" + write(d, "afile", "")]),
        ("4 YAML nested 500 deep", ["validate", write(d, "deep.yaml", deep)]),
        ("4 --hw DIR", ["run", "--hw", os.path.join(SRC, "configs", "hw")]),
        ("4 --workload /dev/zero", ["run", "--workload", "/dev/zero"]),
        ("4 include: of a directory", ["run", "--hw", write(d, "inc.yaml", "chip:\n  include: %s\n" % os.path.join(SRC, "configs", "hw", "chips"))]),
        ("5 second YAML document", ["validate", write(d, "two.yaml", open(K).read() + "---\nkind: kernel\n")]),
        ("5 clock_mhz: 1e-300", ["run", "--workload", K, "--set", "hw.chip.core.clock_mhz=1e-300"]),
        ("5 tiny clock (time formatter overflow)", ["run", "--set", "hw.chip.core.clock_mhz=1", "-q", "--out", os.path.join(d, "e4")]),
        ("5 --out ''", ["run", "--out", ""]),
        ("5 sweep name ../../../x", ["sweep", sweep_escape, "--dry-run"]),
        ("5 --trace-lanes '['", ["run", "--workload", K, "--trace", "--trace-lanes", "[", "--out", os.path.join(d, "e5")]),
        ("5 --jobs 0", ["sweep", os.path.join(SRC, "configs", "sweeps", "mxu.yaml"), "--dry-run", "--jobs", "0"]),
        ("7 full pod v3-2048, analytical", ["run", "--hw", "configs/hw/v3-2048.yaml", "-q", "--out", os.path.join(d, "pod")]),
        ("7 full pod v3-2048, SystemC", ["run", "--hw", "configs/hw/v3-2048.yaml", "--engine", "systemc", "-q", "--out", os.path.join(d, "pod2")]),
    ]
    only = os.environ.get("BATTERY_ONLY")
    print("| case | exit | message (first line) | peak RSS MiB | wall s |")
    print("|---|---|---|---|---|")
    for name, args in cases:
        if only and only not in name:
            continue
        code, line, peak, wall = run(args, os.path.join(d, "rss"))
        line = line.replace(d, "$TMP").replace(SRC + "/", "").replace("|", "\\|")
        if len(line) > 220:
            line = line[:217] + "..."
        print("| %s | %s | %s | %s | %.1f |" % (name, code, line, peak, wall), flush=True)


if __name__ == "__main__":
    main()
