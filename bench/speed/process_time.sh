#!/usr/bin/env bash
# Whole-process speed of `tpusim run`: process start, config loading, compile, simulate, exit.
#   bench/speed/process_time.sh [RUNS] [TPUSIM]     (defaults: 20, build/tpusim)
# Prints, per case, the mean and min wall time over RUNS runs and the max RSS (/usr/bin/time %M).
# Targets (docs/sources.md, "Speed of the simulator"): 1024^3 f32 matmul < 50 ms, encoder block (512x1024) < 200 ms.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs="${1:-20}"
tpusim="${2:-build/tpusim}"
[[ -x "$tpusim" ]] || { echo "process_time.sh: $tpusim not built (scripts/build.sh)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "process_time.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

measure() {  # label target_ms args...
  local label="$1" target="$2"; shift 2
  local total_ns=0 min_ns=0 max_rss=0 rss t0 t1 ns
  local tmp; tmp="$(mktemp)"
  "$tpusim" "$@" --quiet  # warm the page cache; fails loudly if the command is wrong
  for ((i = 0; i < runs; i++)); do
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$tmp" "$tpusim" "$@" --quiet
    t1=$(date +%s%N)
    ns=$((t1 - t0)); total_ns=$((total_ns + ns))
    ((min_ns == 0 || ns < min_ns)) && min_ns=$ns
    rss=$(tail -n 1 "$tmp"); ((rss > max_rss)) && max_rss=$rss
  done
  rm -f "$tmp"
  awk -v l="$label" -v n="$runs" -v t="$total_ns" -v m="$min_ns" -v r="$max_rss" -v g="$target" 'BEGIN {
    mean = t / n / 1e6
    printf "%-34s %3d runs  mean %7.1f ms  min %7.1f ms  max RSS %6.1f MiB  target < %d ms  %s\n",
           l, n, mean, m / 1e6, r / 1024, g, (mean < g ? "ok" : "SLOW") }'
}

measure "matmul 1024^3 f32 (systemc)" 50 run --workload configs/workloads/kernel_matmul_1024.yaml
measure "encoder block 512x1024 (systemc)" 200 run --workload configs/workloads/kernel_encoder_block_512x1024.yaml
measure "matmul 1024^3 f32 (analytical)" 50 run --workload configs/workloads/kernel_matmul_1024.yaml --engine analytical
