#!/usr/bin/env bash
# Sweep-speed benchmark: a 100-point sweep of BERT-base fine-tuning on v3-8 (bench/sweep/bert_base_100.yaml:
# 5 batch sizes x 4 paddings x 5 seeds, each a full 3-epoch run) with --jobs 2, plots off, so that
# the figure is the points' throughput. Prints points per minute, wall time, and the CPU time and
# peak RSS of the largest point.
#   bench/sweep/run.sh [BUILD_DIR] [JOBS]      (default: build, 2)
# It is a benchmark, not a test: run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build="${1:-build}"
jobs="${2:-2}"
out="out/bench-sweep"
mkdir -p "$(dirname "$out")"
start=$(date +%s.%N)
/usr/bin/time -f "%U %S %M" -o "$out.time" "$build/tpusim" sweep bench/sweep/bert_base_100.yaml \
  --jobs "$jobs" --out "$out" --no-plots --quiet || true
end=$(date +%s.%N)
/usr/bin/python3 - "$out" "$start" "$end" "$jobs" <<'PY'
import csv, os, sys
out, start, end, jobs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
ok = sum(r["status"] == "ok" for r in rows)
wall = end - start
user, sys_s, rss_kb = open(out + ".time").read().split()
per_point = [float(r["wall_time_s"]) for r in rows]
print("points          {} ({} ok)".format(len(rows), ok))
print("jobs            {}".format(jobs))
print("wall time       {:.1f} s".format(wall))
print("throughput      {:.1f} points/min".format(len(rows) / wall * 60))
print("per point       {:.2f} s mean, {:.2f} s max (wall, while {} ran at once)".format(
    sum(per_point) / len(per_point), max(per_point), jobs))
print("CPU             {:.0f} s user + {:.0f} s system over all points".format(float(user), float(sys_s)))
print("peak RSS        {:.0f} MiB (the largest point)".format(int(rss_kb) / 1024))
PY
