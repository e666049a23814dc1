// Speed of the simulator on a whole training step (docs/sources.md, "Speed of the simulator"): one data-parallel BERT-base
// (cased) step on a v3-8 — 8 replicas, per-core batch 4, seq 128, AdamW — compiled by
// compiler::compile_data_parallel_step and simulated by each engine. Target (the issue): compile +
// full SystemC simulation of the step under 0.5 s.
//
// Counters: instructions per core, device cycles, and peak_rss_mib = getrusage ru_maxrss, the
// process's high-water mark so far (monotonic across benchmarks: run one with
// --benchmark_filter=BM_Step/simulate_systemc for its own figure).
#include <sys/resource.h>

#include <cstdlib>
#include <memory>

#include <benchmark/benchmark.h>

#include "compiler/step/data_parallel.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "sim/engine/engine.h"

namespace tpusim {
namespace {

// TPUSIM_BENCH_HW overrides the hardware file (e.g. to compare builds against one config).
const HwConfig& v3_8() {
  static const HwConfig hw = [] {
    const char* path = std::getenv("TPUSIM_BENCH_HW");
    return load_hw_config(path ? path : TPUSIM_SOURCE_DIR "/configs/hw/v3-8.yaml");
  }();
  return hw;
}

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

struct BertBaseStep {
  models::BertTrainingStep s;
  compiler::DataParallelStep dp;
};

const BertBaseStep& bert_base_step() {
  static const std::unique_ptr<BertBaseStep> st = [] {
    models::BertGraphOptions o;
    o.batch = 4;
    o.seq = 128;
    auto p = std::make_unique<BertBaseStep>();
    p->s = models::build_training_step(models::find_preset("bert-base-cased"), o, {});
    p->dp.graph = &p->s.model.graph;
    compiler::shard_data_parallel(p->s.model.graph, p->s.grads.grads);
    for (auto [in, out] : p->s.optimizer.donated) p->dp.donated[out] = in;
    return p;
  }();
  return *st;
}

const compiler::CompiledStep& compiled_step() {
  static const compiler::CompiledStep c = compiler::compile_spmd_step(compiler::data_parallel_step(bert_base_step().dp, v3_8()), v3_8(), "bert-base");
  return c;
}

void BM_StepCompile(benchmark::State& state) {
  const BertBaseStep& st = bert_base_step();
  size_t per_core = 0;
  for (auto _ : state) {
    compiler::CompiledStep c = compiler::compile_spmd_step(compiler::data_parallel_step(st.dp, v3_8()), v3_8(), "bert-base");
    per_core = c.program.cores[0].instrs.size();
    benchmark::DoNotOptimize(per_core);
  }
  state.counters["instructions_per_core"] = double(per_core);
  state.counters["peak_rss_mib"] = peak_rss_mib();
}

void BM_StepSimulate(benchmark::State& state, const char* engine_name) {
  const compiler::CompiledStep& c = compiled_step();
  std::unique_ptr<Engine> engine = make_engine(engine_name, v3_8());
  uint64_t cycles = 0;
  for (auto _ : state) {
    RunResult r = engine->run(c.program, nullptr);
    cycles = r.device_cycles;
    benchmark::DoNotOptimize(cycles);
  }
  state.counters["device_cycles"] = double(cycles);
  state.counters["instructions_per_core"] = double(c.program.cores[0].instrs.size());
  state.counters["peak_rss_mib"] = peak_rss_mib();
}

BENCHMARK(BM_StepCompile)->Name("BM_Step/compile")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StepSimulate, systemc, "systemc")->Name("BM_Step/simulate_systemc")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StepSimulate, analytical, "analytical")
    ->Name("BM_Step/simulate_analytical")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim

BENCHMARK_MAIN();
