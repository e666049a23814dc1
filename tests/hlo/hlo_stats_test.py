"""`tpusim hlo-stats`: exit 0 with the opcode histogram on every module of tests/hlo/data (text and
--json), exit 2 with file, line and column on bad HLO and on a missing file.
Usage: hlo_stats_test.py TPUSIM SRC_DIR"""
import json
import os
import subprocess
import sys
import tempfile

tpusim, src = sys.argv[1], sys.argv[2]
data = os.path.join(src, "tests", "hlo", "data")


def run(*args):
    return subprocess.run([tpusim, "hlo-stats", *args], capture_output=True, text=True, timeout=60)


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


for name in sorted(os.listdir(data)):
    path = os.path.join(data, name)
    r = run(path)
    check(r.returncode == 0 and "opcodes" in r.stdout, "{}: {}".format(name, r.stderr))
    j = json.loads(run(path, "--json").stdout)
    check(sum(j["opcodes"].values()) == j["instructions"], name + ": histogram sums to the instruction count")
    check(any(c["entry"] for c in j["computations"]), name + ": an entry computation")

j = json.loads(run(os.path.join(data, "jax_style.hlo"), "--json").stdout)
check(j["num_partitions"] == 8 and j["opcodes"]["dot"] == 2 and j["entry"] == "main.50", "jax_style figures: " + str(j))

with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "bad.hlo")
    with open(bad, "w") as f:
        f.write("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] add(a, c)\n}\n")
    r = run(bad)
    check(r.returncode == 2, "bad module: exit {} (expected 2)".format(r.returncode))
    check(bad + ":4: column 25, instruction 'b': value 'c' is not defined" in r.stderr, "bad module message: " + r.stderr)
    r = run(os.path.join(tmp, "missing.hlo"))
    check(r.returncode == 2 and "missing.hlo" in r.stderr, "missing file: exit {} {}".format(r.returncode, r.stderr))
print("ok")
