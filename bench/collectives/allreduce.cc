// All-reduce across a pod slice: the compiler's bidirectional ring (compiler/collectives.h) over
// every core, simulated by both engines. Prints, per case, the simulated time, the closed-form
// bandwidth bound 2(n-1)/n x bytes / (2 directions x link bandwidth), the simulator's wall time and
// its peak RSS (each case runs in a child process: SystemC elaborates one slice per process, and the
// RSS is then the case's own). Mesh vs torus: the same slice with and without wraparound (a mesh's ring closes
// over a multi-hop path that shares links, a torus's over its wrap links).
//   bench_allreduce [MiB]   (default 440 MiB, BERT-base's fp32 gradients)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compiler/collectives.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

using namespace tpusim;

namespace {

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;
}

isa::Program all_reduce_program(const HwConfig& hw, uint64_t bytes) {
  const std::vector<compiler::CoreId> ring = compiler::ring_order(hw);
  const uint32_t n = uint32_t(ring.size());
  isa::Program p;
  p.name = "all-reduce";
  p.cores.resize(n);
  std::vector<std::unique_ptr<compiler::ProgramBuilder>> own;
  std::vector<compiler::ProgramBuilder*> b;
  for (uint32_t i = 0; i < n; ++i) {
    p.cores[i].chip = ring[i].chip;
    p.cores[i].core = ring[i].core;
    own.push_back(std::make_unique<compiler::ProgramBuilder>(p.cores[i], hw.chip.core.vmem.size_bytes()));
    b.push_back(own.back().get());
  }
  uint32_t tags = 0;
  compiler::emit_all_reduce(b, ring, bytes, std::vector<std::vector<uint32_t>>(n), {}, &tags);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 440) << 20;
  struct Case {
    const char* file;
    bool torus;
  };
  const Case cases[] = {{"v3-8", false}, {"v3-32", false}, {"v3-32", true}, {"v3-128", false}, {"v3-128", true}};
  std::printf("%-8s %-6s %6s %12s %12s %8s %10s %10s %9s\n", "slice", "links", "cores", "systemc_ms", "analyt_ms",
              "bound_ms", "sc_wall_s", "an_wall_s", "rss_MiB");
  std::fflush(stdout);  // the children inherit stdio buffers
  for (const Case& c : cases) {
    if (pid_t pid = fork(); pid != 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::printf("%-8s %s: failed\n", c.file, c.torus ? "torus" : "mesh");
      continue;
    }
    HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + c.file + ".yaml");
    for (size_t d = 0; d < hw.slice.topology.wraparound.size(); ++d) hw.slice.topology.wraparound[d] = c.torus;
    const isa::Program p = all_reduce_program(hw, bytes);
    const uint32_t n = uint32_t(p.cores.size());
    double ms[2], wall[2];
    const char* engines[] = {"systemc", "analytical"};
    for (int e = 0; e < 2; ++e) {
      auto engine = make_engine(engines[e], hw);
      const auto t0 = std::chrono::steady_clock::now();
      const RunResult r = engine->run(p, nullptr);
      wall[e] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ms[e] = r.device_time_s * 1e3;
    }
    // Each core sends 2(n-1)/n of the bytes, half each way around the ring, over one link per
    // direction (the ring's slowest hop is an ICI link).
    const double link = hw.chip.ici.bandwidth_gbyte_per_s_per_direction * 1e9;
    const double bound_ms = 2.0 * (n - 1) / n * double(bytes) / (2.0 * link) * 1e3;
    std::printf("%-8s %-6s %6u %12.2f %12.2f %8.2f %10.2f %10.2f %9.0f\n", c.file, c.torus ? "torus" : "mesh", n, ms[0],
                ms[1], bound_ms, wall[0], wall[1], peak_rss_mib());
    std::fflush(stdout);
    std::_Exit(0);
  }
}
