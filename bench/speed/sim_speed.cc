// Speed of the simulator itself (docs/sources.md, "Speed of the simulator"): wall time to compile and simulate a kernel on one
// v3-8 core, with the process's peak RSS as a counter. Targets: 1024^3 f32 matmul < 50 ms and the
// encoder block (seq 512, hidden 1024, heads 16, ffn 4096) < 200 ms, including process start
// (bench/speed/process_time.sh measures that part).
//
// peak_rss_mib is getrusage(RUSAGE_SELF).ru_maxrss: the high-water mark of the whole process so
// far, so it is monotonic across benchmarks; run one with --benchmark_filter for its own figure.
#include <sys/resource.h>

#include <string>

#include <benchmark/benchmark.h>

#include "config/hw_loader.h"
#include "workloads/loop/kernel_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

const HwConfig& v3_8() {
  static const HwConfig hw = load_hw_config(TPUSIM_SOURCE_DIR "/configs/hw/v3-8.yaml");
  return hw;
}

// Built in code rather than read from configs/workloads/ so the benchmark measures exactly these
// shapes whatever the shipped files say.
WorkloadConfig kernel(const std::string& name, std::map<std::string, uint64_t> shape) {
  WorkloadConfig w;
  w.spec = KernelWorkload{};
  w.name = name;
  w.kernel().kernel = name;
  w.kernel().shape = std::move(shape);
  w.kernel().dtype = models::DType::kF32;
  return w;
}

WorkloadConfig matmul_1024() { return kernel("matmul", {{"m", 1024}, {"k", 1024}, {"n", 1024}}); }
WorkloadConfig encoder_block() {
  return kernel("encoder_block", {{"seq", 512}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096}});
}

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void BM_CompileAndRun(benchmark::State& state, WorkloadConfig (*make)(), const char* engine) {
  const HwConfig& hw = v3_8();
  const WorkloadConfig w = make();
  KernelRunOptions opts;
  opts.engine = engine;
  uint64_t cycles = 0, instructions = 0;
  for (auto _ : state) {
    KernelRunResult r = run_kernel(hw, w, opts);
    cycles = r.run.device_cycles;
    instructions = r.instructions;
    benchmark::DoNotOptimize(cycles);
  }
  state.counters["device_cycles"] = double(cycles);
  state.counters["instructions"] = double(instructions);
  state.counters["peak_rss_mib"] = peak_rss_mib();
}

void BM_Compile(benchmark::State& state, WorkloadConfig (*make)()) {
  const HwConfig& hw = v3_8();
  const compiler::KernelRequest req = kernel_request(make().kernel());
  for (auto _ : state) {
    isa::Program p = compiler::compile_kernel(req, hw);
    benchmark::DoNotOptimize(p.info.flops);
  }
  state.counters["peak_rss_mib"] = peak_rss_mib();
}

BENCHMARK_CAPTURE(BM_CompileAndRun, matmul_1024_f32_systemc, matmul_1024, "systemc")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileAndRun, encoder_block_512x1024_systemc, encoder_block, "systemc")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileAndRun, matmul_1024_f32_analytical, matmul_1024, "analytical")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileAndRun, encoder_block_512x1024_analytical, encoder_block, "analytical")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, matmul_1024_f32, matmul_1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, encoder_block_512x1024, encoder_block)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim

BENCHMARK_MAIN();
