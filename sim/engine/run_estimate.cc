#include "sim/engine/run_estimate.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "config/config_error.h"

namespace tpusim {
namespace {

// Per engine: bytes and seconds per core-instruction (a core times an instruction of its stream).
// Measured on the default workload (BERT-base MRPC, 3 epochs: 3 programs simulated, the train step
// ~1.4e5-1.6e5 instructions per core) with /usr/bin/time's peak RSS less the RSS before the first
// simulation (~50 MB on small slices, 452 MB on v3-2048), over the largest program's
// core-instructions; wall time over all three programs' core-instructions. Release build, a 2-core
// machine shared with other jobs (times are upper bounds):
//   analytical  v3-128   17.9e6 core-instructions   237 MB,  2.3 s   10.4 B, 52 ns
//               v3-2048  335e6                     4871 MB,  200 s   13.2 B, 250 ns (cache misses)
//   systemc     v3-32    4.35e6                     198 MB,  1.5 s   36 B
//               v3-128   17.9e6                     652 MB,  7.9 s   33 B, 180 ns
// The analytical engine holds a completion time per core-instruction (8 B), its transfer tables
// (peers, matches, arrivals: ~26 B per send or receive, ~1 in 20 instructions of a data-parallel
// step) and its units' calendars; the SystemC engine a 16-byte scoreboard slot per
// core-instruction, its queues' copies and the op-profile and collective recorders of every core.
struct EngineCost {
  double bytes_per_core_instruction;
  double seconds_per_core_instruction;
};
constexpr EngineCost kAnalytical{14.0, 2.5e-7};
constexpr EngineCost kSystemc{34.0, 4.0e-7};
// A trace keeps about one event per instruction of the traced cores until it is written
// (measured: TRACE_NOTE).
constexpr double kTraceBytesPerCoreInstruction = 100.0;

}  // namespace

RunEstimate estimate_run(const isa::Program& program, std::string_view engine, bool trace, uint64_t base_bytes) {
  RunEstimate e;
  e.cores = program.cores.size();
  for (size_t c = 0; c < program.cores.size(); ++c) e.core_instructions += program.stream(c).instrs.size();
  const EngineCost& cost = engine == "systemc" ? kSystemc : kAnalytical;
  double per = cost.bytes_per_core_instruction + (trace ? kTraceBytesPerCoreInstruction : 0.0);
  e.base_bytes = base_bytes;
  e.run_bytes = uint64_t(per * double(e.core_instructions));
  e.seconds = cost.seconds_per_core_instruction * double(e.core_instructions);
  return e;
}

void check_memory_limit(const RunEstimate& e, const MemoryLimit& limit, std::string_view program_name,
                        std::string_view engine, bool trace) {
  if (limit.bytes == 0 || e.peak_bytes() <= limit.bytes) return;
  std::string knobs = "use fewer cores (a smaller slice) or fewer steps";
  if (engine != "analytical") knobs += ", the analytical engine (--engine analytical)";
  if (trace) knobs += ", run without --trace";
  knobs += ", or raise --max-memory";
  ConfigErrorInfo i;
  i.yaml_path = "--max-memory";
  i.value = format_bytes(limit.bytes);
  i.rule = fmt::format(
      "({}) is too low for program '{}': {} cores, {:.3g} instructions over all cores, on the {} engine{} need an "
      "estimated {} at the peak ({} in use + {} for the run; it would take about {:.0f} s)",
      limit.origin, program_name, e.cores, double(e.core_instructions), engine, trace ? " with a trace" : "",
      format_bytes(e.peak_bytes()), format_bytes(e.base_bytes), format_bytes(e.run_bytes), e.seconds);
  i.suggestion = knobs;
  throw ConfigError(i);
}

uint64_t current_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? uint64_t(resident) * uint64_t(sysconf(_SC_PAGESIZE)) : 0;
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

std::string format_bytes(uint64_t bytes) {
  const double b = double(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.0f} MiB", b / (1024.0 * 1024));
  return fmt::format("{} bytes", bytes);
}

}  // namespace tpusim
