// All-reduce across a pod slice: the compiler's collectives (compiler/collectives/collectives.h), the 1-D
// bidirectional ring and dimension by dimension, over every core, simulated by both engines (the
// 32x32 pod by the analytical engine only). Prints, per case, the simulated time, the closed-form
// cost (compiler/collectives/collective_cost.h: its bandwidth term and the total with latency), the simulator's wall time and
// its peak RSS (each case runs in a child process: SystemC elaborates one slice per process, and the
// RSS is then the case's own). Mesh vs torus: the same slice with and without wraparound (a mesh's ring closes
// over a multi-hop path that shares links, a torus's over its wrap links).
//   bench_allreduce [MiB] [pod MiB]   (default 440 MiB, BERT-base's fp32 gradients; pod: 1300 MB)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compiler/collectives/collective_cost.h"
#include "compiler/collectives/collectives.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

using namespace tpusim;

namespace {

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;
}

isa::Program all_reduce_program(const HwConfig& hw, uint64_t bytes, compiler::CollectiveAlgorithm algo) {
  compiler::CollectiveOptions opt;
  opt.algorithm = algo;
  opt.piece_bytes = 2ull << 20;  // 4 staging pieces of 2 MiB fit VMEM; fewer instructions on the pod
  return compiler::collective_program(compiler::CollectiveKind::kAllReduce, hw, bytes, opt);
}

}  // namespace

// Measured (2-core machine, Release, 440 MiB = 461 MB; pod 1300 MB; pieces of 2 MiB), ms of
// simulated time; bw / cost: compiler/collectives/collective_cost.h (HBM-bound here: a reduced byte costs 5
// HBM bytes):
//   slice   links algo  systemc analytical  bw    cost   sc wall s  an wall s  RSS MiB   (before: one channel)
//   v3-8    mesh  ring    9.25     8.45      6.98   7.00     0.25       0.00        12    (11.27 / 10.25)
//   v3-8    mesh  dims   13.89     8.99      6.98   6.99     0.19       0.01        12    (15.41 / 9.74)
//   v3-32   mesh  ring    8.59     9.01      7.73   7.83     1.18       0.08        24    (11.82 / 11.33)
//   v3-32   mesh  dims   16.76     9.52      7.73   7.76     1.12       0.06        23    (21.42 / 11.08)
//   v3-32   torus ring    8.59     9.01      7.73   7.83     1.15       0.08        24    (11.82 / 11.33)
//   v3-32   torus dims   12.93     8.83      7.73   7.75     1.09       0.06        23    (17.70 / 11.15)
//   v3-128  mesh  ring   10.68     9.94      7.91   8.33     5.29       0.94        71    (11.64 / 11.16)
//   v3-128  mesh  dims   16.90     9.17      7.91   7.99     5.29       0.17        70    (22.81 / 11.54)
//   v3-128  torus ring   10.68     9.94      7.91   8.33     2.65       0.44        71    (11.64 / 11.16)
//   v3-128  torus dims   11.54     8.86      7.91   7.96     2.54       0.17        70    (18.16 / 11.52)
//   v3-2048 torus dims     -      25.21     22.46  22.66        -       6.73      1759    (- / 32.94)
// (pod wall/RSS after the analytical engine's early stop and shared replica streams; before: 22.99 s,
// 2234 MiB.)
// Transfer channels (sim/xfer, chip.core.xfer.channels = 5 on v3) let a core's lanes run at once:
// the ring is 1.10-1.32x the cost in SystemC (was 1.4-1.6x). Dims stays 1.45-2.2x in SystemC: its
// 4 lanes per core contend for links, the NoC and the core's HBM, and block each other at the
// head of the in-order queues. Wall times measured on a loaded 2-core machine.
// The 2048-core ring (8188 steps per core) is left out of the default cases for its wall time:
// measured once, it simulates to 33.99 ms (cost 29.23 ms, so dims is the faster there too) in 43 s
// (15 s of it compiling) with 2.7 GiB peak RSS (11 GiB before ReplicaStreams dropped each replica's
// checked recording).
int main(int argc, char** argv) {
  using compiler::CollectiveAlgorithm;
  const uint64_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 440) << 20;
  const uint64_t pod_bytes = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1300) * 1000000ull;
  struct Case {
    const char* file;
    bool torus;
    CollectiveAlgorithm algo;
    bool systemc;
  };
  const CollectiveAlgorithm R = CollectiveAlgorithm::kRing, D = CollectiveAlgorithm::kDimensionByDimension;
  const Case cases[] = {{"v3-8", false, R, true},    {"v3-8", false, D, true},    {"v3-32", false, R, true},
                        {"v3-32", false, D, true},   {"v3-32", true, R, true},    {"v3-32", true, D, true},
                        {"v3-128", false, R, true},  {"v3-128", false, D, true},  {"v3-128", true, R, true},
                        {"v3-128", true, D, true},   {"v3-2048", true, D, false}};
  std::printf("%-8s %-6s %-5s %6s %7s %11s %11s %9s %9s %9s %9s %8s\n", "slice", "links", "algo", "cores", "MB",
              "systemc_ms", "analyt_ms", "bw_ms", "cost_ms", "sc_wall_s", "an_wall_s", "rss_MiB");
  std::fflush(stdout);  // the children inherit stdio buffers
  for (const Case& c : cases) {
    const bool pod = std::string(c.file) == "v3-2048";
    if (pid_t pid = fork(); pid != 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::printf("%-8s %s: failed\n", c.file, c.torus ? "torus" : "mesh");
      continue;
    }
    HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + c.file + ".yaml");
    for (size_t d = 0; d < hw.slice.topology.wraparound.size(); ++d) hw.slice.topology.wraparound[d] = c.torus;
    const uint64_t b = pod ? pod_bytes : bytes;
    const isa::Program p = all_reduce_program(hw, b, c.algo);
    const uint32_t n = uint32_t(p.cores.size());
    double ms[2] = {0, 0}, wall[2] = {0, 0};
    const char* engines[] = {"systemc", "analytical"};
    for (int e = c.systemc ? 0 : 1; e < 2; ++e) {
      auto engine = make_engine(engines[e], hw);
      const auto t0 = std::chrono::steady_clock::now();
      const RunResult r = engine->run(p, nullptr);
      wall[e] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ms[e] = r.device_time_s * 1e3;
    }
    const auto cost = compiler::collective_cost(compiler::CollectiveKind::kAllReduce, c.algo, b, hw, n);
    const double cycle_ms = 1e-3 / hw.chip.core.clock_mhz;
    std::printf("%-8s %-6s %-5s %6u %7.0f %11.2f %11.2f %9.2f %9.2f %9.2f %9.2f %8.0f\n", c.file,
                c.torus ? "torus" : "mesh", compiler::algorithm_name(c.algo), n, double(b) / 1e6, ms[0], ms[1],
                cost.bandwidth_cycles() * cycle_ms, cost.total_cycles() * cycle_ms, wall[0], wall[1], peak_rss_mib());
    std::fflush(stdout);
    std::_Exit(0);
  }
}
