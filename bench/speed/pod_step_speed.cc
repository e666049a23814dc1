// Speed of the simulator on a pod-slice training step (the pod-slice issue: "one BERT-large step on
// a v3-32 simulates in seconds; peak RSS stays bounded"): the MLPerf BERT-large pre-training step
// of configs/workloads/mlperf_bert_large_v3-32.yaml — masked LM with 76 predictions, batch 14 per
// core, sequence 512, bf16, LAMB — data-parallel over the 32 TensorCores of configs/hw/v3-32.yaml.
// Each case runs in a child process, so that its peak RSS (getrusage ru_maxrss) is its own:
//   compile           the step for all 32 replicas (replicas share core 0's stream, program.h)
//   simulate ENGINE   compile, then one run of the step on the engine
// Prints instructions per core, simulated step time, wall seconds and peak RSS.
//   bench_pod_step_speed [hw.yaml]   (default configs/hw/v3-32.yaml)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/step/data_parallel.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "models/optimizers.h"
#include "sim/engine/engine.h"

using namespace tpusim;

namespace {

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_case(const HwConfig& hw, const char* engine_name) {
  models::BertGraphOptions o;
  o.head = models::Head::kMaskedLm;
  o.batch = 14;
  o.seq = 512;
  o.max_predictions_per_seq = 76;
  o.dtype = models::DType::kBF16;
  models::OptimizerConfig opt;
  opt.kind = models::OptimizerKind::kLamb;
  models::BertTrainingStep s = models::build_training_step(models::find_preset("bert-large-uncased"), o, opt);
  compiler::DataParallelStep dp;
  dp.graph = &s.model.graph;
  compiler::shard_data_parallel(s.model.graph, s.grads.grads);
  for (auto [in, out] : s.optimizer.donated) dp.donated[out] = in;

  auto t0 = std::chrono::steady_clock::now();
  const compiler::CompiledStep c = compiler::compile_spmd_step(compiler::data_parallel_step(dp, hw), hw, "bert-large");
  const double compile_s = seconds_since(t0);
  double sim_s = 0, step_ms = 0;
  if (engine_name) {
    auto engine = make_engine(engine_name, hw);
    t0 = std::chrono::steady_clock::now();
    const RunResult r = engine->run(c.program, nullptr);
    sim_s = seconds_since(t0);
    step_ms = r.device_time_s * 1e3;
  }
  std::printf("%-20s %6zu %14zu %10.3f %10.2f %12.2f %9.0f\n", engine_name ? engine_name : "compile only",
              c.program.cores.size(), c.program.cores[0].instrs.size(), compile_s, sim_s, step_ms, peak_rss_mib());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-32.yaml";
  const HwConfig hw = load_hw_config(file);
  std::printf("BERT-large MLPerf step (B=14/core, S=512, bf16, LAMB) on %s\n", hw.name.c_str());
  std::printf("%-20s %6s %14s %10s %10s %12s %9s\n", "case", "cores", "instrs/core", "compile_s", "sim_s", "step_ms",
              "rss_MiB");
  std::fflush(stdout);  // the children inherit stdio buffers
  const char* cases[] = {nullptr, "analytical", "systemc"};
  for (const char* engine : cases) {
    if (pid_t pid = fork(); pid != 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::printf("%s: failed\n", engine ? engine : "compile");
      continue;
    }
    run_case(hw, engine);
    std::fflush(stdout);
    std::_Exit(0);
  }
}
