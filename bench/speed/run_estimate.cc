// The up-front estimate of a simulation (sim/engine/run_estimate.h) against what the simulation
// then takes: one data-parallel BERT-base MRPC train step (B=4 per core, S=128, AdamW, fp32, as the
// default workload) on each slice, with each engine, each case in a child process so that its peak
// RSS (getrusage ru_maxrss) is its own. Prints the estimated and measured peak RSS and wall time.
//   bench_run_estimate [hw.yaml ...]   (default configs/hw/v3-8, v3-32, v3-128)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/step/data_parallel.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "models/optimizers.h"
#include "sim/engine/engine.h"
#include "sim/engine/run_estimate.h"

using namespace tpusim;

namespace {

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

void run_case(const HwConfig& hw, const char* engine_name) {
  models::BertGraphOptions o;
  o.head = models::Head::kSequenceClassification;
  o.batch = 4;
  o.seq = 128;
  models::OptimizerConfig opt;
  models::BertTrainingStep s = models::build_training_step(models::find_preset("bert-base-uncased"), o, opt);
  compiler::DataParallelStep dp;
  dp.graph = &s.model.graph;
  compiler::shard_data_parallel(s.model.graph, s.grads.grads);
  for (auto [in, out] : s.optimizer.donated) dp.donated[out] = in;
  const compiler::CompiledStep c = compiler::compile_spmd_step(compiler::data_parallel_step(dp, hw), hw, "bert-base");
  auto engine = make_engine(engine_name, hw);
  const auto t0 = std::chrono::steady_clock::now();  // the plan (simulated_cores) is simulation time
  const std::vector<uint32_t> simulated = engine->simulated_cores(c.program, false);
  const RunEstimate e = estimate_run(c.program, engine->name(), false, current_rss_bytes(), &simulated);
  engine->run(c.program, nullptr);
  const double sim_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double est_mib = double(e.peak_bytes()) / (1024.0 * 1024.0), rss = peak_rss_mib();
  std::printf("%-10s %-11s %6llu %12.3g %10.0f %10.0f %7.2f %9.2f %9.2f\n", hw.name.c_str(), engine_name,
              (unsigned long long)e.cores, double(e.core_instructions), est_mib, rss, est_mib / rss, e.seconds, sim_s);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) files.push_back(argv[i]);
  if (files.empty())
    for (const char* n : {"v3-8", "v3-32", "v3-128"}) files.push_back(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + n + ".yaml");
  std::printf("BERT-base MRPC train step (B=4/core, S=128): estimated against measured peak RSS and wall time\n");
  std::printf("%-10s %-11s %6s %12s %10s %10s %7s %9s %9s\n", "hw", "engine", "sim", "core-instrs", "est_MiB",
              "rss_MiB", "ratio", "est_s", "sim_s");
  std::fflush(stdout);  // the children inherit stdio buffers
  for (const std::string& f : files) {
    const HwConfig hw = load_hw_config(f);
    for (const char* engine : {"analytical", "systemc"}) {
      if (pid_t pid = fork(); pid != 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::printf("%s %s: failed\n", hw.name.c_str(), engine);
        continue;
      }
      run_case(hw, engine);
      std::fflush(stdout);
      std::_Exit(0);
    }
  }
}
