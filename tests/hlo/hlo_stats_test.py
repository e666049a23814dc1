"""`tpusim hlo-stats`: exit 0 with the opcode histogram and the op statistics on every module of
tests/hlo/data (text and --json), --simulate with a device time and kernels, exit 2 with file, line
and column on bad HLO and on a missing file.
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
    check(j["hlo"]["instructions"] == j["opcodes"], name + ": hlo.instructions is the histogram")
    check(all(u["line"] > 0 and u["reason"] for u in j["hlo"]["unmodelled"]), name + ": unmodelled with line and reason")

j = json.loads(run(os.path.join(data, "jax_style.hlo"), "--json").stdout)
check(j["num_partitions"] == 8 and j["opcodes"]["dot"] == 2 and j["entry"] == "main.50", "jax_style figures: " + str(j))

# jax_style.hlo: dot.40 is [8,16]x[16,32] (2*8*32*16), bdot.41 is 2 x [8,16]x[16,8] (2*2*8*8*16).
h = j["hlo"]
check(h["dot_flops"] == 2 * 8 * 32 * 16 + 2 * 2 * 8 * 8 * 16, "jax_style dot_flops: " + str(h["dot_flops"]))
check(h["output_bytes"] == 8 * 32 * 4 + 4, "jax_style output_bytes: " + str(h["output_bytes"]))
# The while's trip count (10) is read from its bounds: imported ten times, not listed; its collectives are
# imported (8 partitions: replicas 0..7), not stood in for.
check({u["opcode"] for u in h["unmodelled"]} == {"conditional"}, "jax_style unmodelled: " + str(h["unmodelled"]))

r = run(os.path.join(data, "import_dot_reduce.hlo"), "--json", "--simulate", "--hw", "v4-8")
check(r.returncode == 0, "--simulate: " + r.stderr)
s = json.loads(r.stdout)["simulation"]
check(s["device_time_s"] > 0 and s["top_kernels"] and "v4-8" in s["hw"], "--simulate figures: " + str(s))
r = run(os.path.join(data, "import_dot_reduce.hlo"), "--simulate")
check(r.returncode == 0 and "device time" in r.stdout and "top kernels" in r.stdout, "--simulate text: " + r.stdout)

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
