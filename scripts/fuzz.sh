#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "fuzz": clang, ASan + UBSan, build-fuzz/) and runs each for a
# bounded time; fails if any target crashes (docs/fuzzing.md).
#   scripts/fuzz.sh                        # every target for 60 s
#   scripts/fuzz.sh 600 constraint         # one target for 10 minutes
#   FUZZ_BUILD=0 scripts/fuzz.sh 60        # without (re)building
# Per target: the corpus grows in build-fuzz/corpus/NAME (seeded from the shipped configs, see
# tests/fuzz/CMakeLists.txt), a crashing input is written to build-fuzz/crashes/NAME/ and the run's
# log to build-fuzz/logs/NAME.log. Prints executions, exec/s and coverage (cov: edges, ft: features)
# per target.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(config_loader constraint kernel_compile hlo_parser)
build=build-fuzz

if [[ "${FUZZ_BUILD:-1}" != 0 ]]; then
  start=$(date +%s)
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz
  echo "fuzz.sh: fuzz targets built in $(($(date +%s) - start)) s"
fi

seeds() {  # the seed inputs of a target, as files
  case "$1" in
    config_loader) find configs/hw configs/workloads configs/sweeps -name '*.yaml' ;;
    constraint) find tests/fuzz/constraint_corpus -type f ;;
    kernel_compile) ls configs/workloads/kernel_*.yaml ;;
    hlo_parser) find tests/hlo/data configs/hlo tests/fuzz/hlo_corpus -type f ;;
  esac
}

failed=()
printf '%-16s %12s %10s %8s %8s  %s\n' target executions exec/s cov ft result
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/${t}_fuzzer"
  [[ -x "$bin" ]] || { echo "fuzz.sh: no $bin (unknown target or not built)" >&2; exit 2; }
  corpus="$build/corpus/$t" crashes="$build/crashes/$t" log="$build/logs/$t.log"
  mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
  rm -f "$crashes"/*  # findings of an earlier run: reproduce them from the log or keep a copy
  # Seeds copied under their path's name: a later run keeps what the corpus has learnt.
  while read -r f; do cp "$f" "$corpus/seed_$(echo "$f" | tr / _)"; done < <(seeds "$t")
  dict=()
  case "$t" in
    config_loader | kernel_compile) dict=("-dict=$build/tests/fuzz/config.dict") ;;
    hlo_parser) dict=("-dict=tests/fuzz/hlo.dict") ;;
  esac
  # -timeout: one input running longer is a hang (a bug); -rss_limit_mb: so is memory past 2 GiB.
  rc=0
  "$bin" "$corpus" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
    -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  rate=$(sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p' <<<"$last")
  result=ok
  if ((rc != 0)) || compgen -G "$crashes/*" >/dev/null; then
    result="FAILED (exit $rc; $(ls "$crashes" | head -3 | tr '\n' ' ')see $log)"
    failed+=("$t")
  fi
  printf '%-16s %12s %10s %8s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result"
done
if ((${#failed[@]})); then
  echo "fuzz.sh: crashes in: ${failed[*]} (reproduce: $build/tests/fuzz/NAME_fuzzer $build/crashes/NAME/FILE)" >&2
  exit 1
fi
