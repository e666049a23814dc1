#include "sim/engine/run_estimate.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "base/config_error.h"

namespace tpusim {
namespace {

// Per engine: bytes and seconds per core-instruction (a core times an instruction of its stream).
// Measured on the default workload (BERT-base MRPC, 3 epochs: 3 programs simulated, the train step
// ~1.4e5-1.6e5 instructions per core) with /usr/bin/time's peak RSS less the RSS before the first
// simulation (the "in use" of the refusal message: 37 MiB on v3-32, 53 MiB on v3-128, 228 MiB on a
// 1024-core half pod (a 16x32 torus), 571 MiB on v3-2048), over the largest program's
// core-instructions. Wall time: SystemC, all three programs over their core-instructions (~2.2x
// the largest), on a 2-core machine shared with other jobs (upper bounds); analytical, the largest
// program's simulation (plan build included) over its core-instructions. Release build:
//   analytical  v3-32     4.28e6 core-instructions     72 MiB,  0.17 s  8.2 B, 40 ns
//               v3-128    17.6e6                      126 MiB,  0.84 s  4.3 B, 48 ns
//               1024      157e6                      1235 MiB,   15 s   6.7 B, 94 ns
//               v3-2048   331e6                      3293 MiB,   49 s   8.6 B, 148 ns
//   (analytical times: the largest program alone, on an idle machine, 2026-11-27)
//   systemc     v3-32     4.28e6                      193 MiB,  1.6 s   38 B
//               v3-128    17.6e6                      638 MiB,   10 s   35 B, 260 ns
//               1024      157e6                      5471 MiB,  272 s   35 B, 790 ns
// The analytical engine holds its completion times (sim/engine/completion_store.h: 8 B per
// instruction of a chunk in flight, 4 B per distinct finished chunk, shared between replicas), its
// transfer tables (peers, matches, arrivals: ~26 B per send or receive, ~1 in 20 instructions of a
// data-parallel step) and its units' calendars; the SystemC engine a 16-byte scoreboard slot per
// core-instruction, its queues' copies and the op-profile and collective recorders of every core.
// Time per core-instruction grows with the cores (each round over the cores touches every core's
// state, which stops fitting in the caches): a + b x cores fits the measurements above.
// Instructions inside a stored tile loop (isa::Repeat: the expansion beyond the stored instructions)
// cost the analytical engine far less: the loop's iterations finish at the same offsets, so their
// completion chunks freeze to offset arrays already kept (completion_store.h), leaving 32 B of chunk
// record per 1,024 instructions and the core's in-flight state. Measured (peak RSS less the RSS
// before the simulation, 2026-11-30) over the core-instructions of LLM steps whose expansion is 2.4
// to 8 times what is stored: GPT-3 175B tensor 8 on v5p-128 (32 cores simulated, 1.97e9, 2.6e8
// stored) 1.38 GB, 0.70 B each; Llama-3.1-70B tensor 4 on v6e-256 (32 cores, 1.15e9, 4.7e8 stored)
// 0.37 GB, 0.33 B each. 9 B per stored and 1 B per looped instruction bound both (per stored
// instruction alone they are 5.3 B and 0.8 B at most), as 9 B bounds the BERT runs above, which
// store every instruction (BERT-base on v3-32 that day: 4.28e6, 27 MB, 6.3 B).
struct EngineCost {
  double bytes_per_core_instruction;
  double bytes_per_looped_core_instruction;
  double seconds_per_core_instruction;            // a
  double seconds_per_core_instruction_per_core;   // b
};
constexpr EngineCost kAnalytical{9.0, 1.0, 4.2e-8, 5.2e-11};
constexpr EngineCost kSystemc{36.0, 36.0, 1.9e-7, 6.0e-10};  // every instruction its scoreboard slot
// Planning every core's sends and receives (ProgramPlan: peers, matches, the replica classes), simulated
// or not, with one core simulated for its replicas. Time: ~70-80 ns a transfer on 2026-11-29 (the
// default workload on v3-2048, 30.4e6 transfers per program, 2.1 s each; v5litepod-256, 1.78e6,
// 0.14 s); since the matching sorts per stream, not per core (that night): a 70B-class FSDP step
// on v6e-256, 17 s for its two programs of 2.37e8 transfers (36 ns a transfer, the simulation of
// its one core included): 50 ns, a margin. Bytes: the peak RSS less the RSS before the first
// simulation, over the transfers of the largest program (the plan's match tables and the
// matching's scratch): that night, 93 MiB for the v3-2048 run (3.2 B a transfer) and 1.71 GiB for
// the 70B-class one (7.3 B, its core's instructions included); 12 bytes, a margin over both.
constexpr double kSecondsPerTransfer = 5.0e-8;
constexpr double kBytesPerTransfer = 12.0;
// With the plan already built (see estimate_run), what the run itself adds per transfer: measured
// 2026-11-30 as the peak RSS less the RSS after the plan, the default workload on v3-2048 (one core
// simulated for 2048, 3.0e7 transfers): 88 MiB, 3.0 B a transfer; 4 B, a margin (a 70B-class FSDP
// step on v6e-256, 2.1e8 transfers: estimate 8.4 GiB, measured 7.3).
constexpr double kBytesPerPlannedTransfer = 4.0;
// A trace keeps about one event per instruction of the traced cores until it is written
// (measured: TRACE_NOTE).
constexpr double kTraceBytesPerCoreInstruction = 100.0;

}  // namespace

RunEstimate estimate_run(const isa::Program& program, std::string_view engine, bool trace, uint64_t base_bytes,
                         const std::vector<uint32_t>* simulated) {
  RunEstimate e;
  e.program_cores = program.cores.size();
  auto count = [&](size_t c) {
    const isa::CoreProgram& s = program.stream(c);
    e.core_instructions += s.stream_size();
    e.stored_instructions += s.instrs.size();
  };
  if (simulated) {
    e.cores = simulated->size();
    for (uint32_t c : *simulated) count(c);
  } else {
    e.cores = program.cores.size();
    for (size_t c = 0; c < program.cores.size(); ++c) count(c);
  }
  // Every core's sends and receives are planned, simulated or not: a core sharing a stream has one
  // peer per transfer; a core with a stream of its own has its own.
  for (const isa::CoreProgram& c : program.cores) {
    if (c.stream_of >= 0) {
      e.transfers += c.peers.size();
      continue;
    }
    for (const isa::Instr& i : c.instrs) e.transfers += i.op == isa::Op::kSend || i.op == isa::Op::kRecv;
  }
  const EngineCost& cost = engine == "systemc" ? kSystemc : kAnalytical;
  const double looped = double(e.core_instructions - e.stored_instructions);
  // The analytical engine plans every core's transfers when it picks the cores it simulates
  // (simulated_cores() builds its ProgramPlan and keeps it for the run): given those cores, the
  // plan is in base_bytes already (counted twice before 2026-11-30: 1.6 GiB of a 70B-class step),
  // and only the run's own per-transfer state is to come.
  const bool planned = simulated != nullptr && engine == "analytical";
  const double per_transfer = planned ? kBytesPerPlannedTransfer : kBytesPerTransfer;
  e.base_bytes = base_bytes;
  e.run_bytes = uint64_t(cost.bytes_per_core_instruction * double(e.stored_instructions) +
                         cost.bytes_per_looped_core_instruction * looped +
                         (trace ? kTraceBytesPerCoreInstruction * double(e.core_instructions) : 0.0) +
                         per_transfer * double(e.transfers));
  e.seconds = (cost.seconds_per_core_instruction + cost.seconds_per_core_instruction_per_core * double(e.cores)) *
                  double(e.core_instructions) +
              kSecondsPerTransfer * double(e.transfers);
  return e;
}

void check_run_limits(const RunEstimate& e, const RunLimits& limits, std::string_view program_name,
                      std::string_view engine, bool trace) {
  const bool memory = limits.bytes != 0 && e.peak_bytes() > limits.bytes;
  const bool time = limits.seconds > 0 && e.seconds > limits.seconds;
  if (!memory && !time) return;
  // Per simulation: fewer steps would not lower it (each step is simulated, or replayed, alone).
  std::string knobs = "use fewer cores (a smaller slice) or fewer instructions per core (a smaller batch or shorter sequences per device)";
  if (engine != "analytical") knobs += ", the analytical engine (--engine analytical)";
  if (trace) knobs += ", run without --trace";
  const std::string cores = e.cores == e.program_cores
                                ? fmt::format("{} cores", e.cores)
                                : fmt::format("{} cores simulated for its {} (symmetric replicas)", e.cores, e.program_cores);
  const std::string what = fmt::format("program '{}': {}, {:.3g} instructions over the simulated cores, on the {} engine{}",
                                       program_name, cores, double(e.core_instructions), engine,
                                       trace ? " with a trace" : "");
  ConfigErrorInfo i;
  if (memory) {
    i.yaml_path = "--max-memory";
    i.value = format_bytes(limits.bytes);
    i.rule = fmt::format("({}) is too low for {} need an estimated {} at the peak ({} in use + {} for the run; it "
                         "would take about {:.0f} s)",
                         limits.origin, what, format_bytes(e.peak_bytes()), format_bytes(e.base_bytes),
                         format_bytes(e.run_bytes), e.seconds);
    i.suggestion = knobs + ", or raise --max-memory";
  } else {
    // The time is an estimate from a 2-core development machine under load (upper bounds, see the
    // constants above): a faster machine finishes sooner, and --max-time says how long is acceptable.
    i.yaml_path = "--max-time";
    i.value = fmt::format("{:.0f} s", limits.seconds);
    i.rule = fmt::format("({}) is too short for {}, which would take an estimated {:.0f} s ({:.1f} min) to simulate and need {} at "
                         "the peak",
                         limits.time_origin, what, e.seconds, e.seconds / 60, format_bytes(e.peak_bytes()));
    i.suggestion = knobs + ", or allow more time (e.g. --max-time 30m, or --max-time none)";
  }
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
