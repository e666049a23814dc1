// Speed of simulating a whole training run (docs/sources.md, "Speed of the simulator"): the shipped 3-epoch BERT-base MRPC
// fine-tune on a v3-8 (configs/workloads/bert_base_mrpc_v3-8.yaml) through the training driver,
// with identical executions replayed (the default). Target: under 10 s of wall time.
// peak_rss_mib is the process high-water mark; run one benchmark with --benchmark_filter for its own.
#include <sys/resource.h>

#include <benchmark/benchmark.h>

#include "config/hw_loader.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

void BM_TrainingRun(benchmark::State& state, const char* engine) {
  const HwConfig hw = load_hw_config(TPUSIM_SOURCE_DIR "/configs/hw/v3-8.yaml");
  const WorkloadConfig w = load_workload_config(TPUSIM_SOURCE_DIR "/configs/workloads/bert_base_mrpc_v3-8.yaml");
  TrainingRunOptions opts;
  opts.engine = engine;
  for (auto _ : state) {
    TrainingRunResult r = run_training(hw, w, opts);
    benchmark::DoNotOptimize(r.steps.data());
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_mib"] = double(ru.ru_maxrss) / 1024.0;
}

BENCHMARK_CAPTURE(BM_TrainingRun, mrpc_v3_8_analytical, "analytical")->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_TrainingRun, mrpc_v3_8_systemc, "systemc")->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace tpusim

BENCHMARK_MAIN();
