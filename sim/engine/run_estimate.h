// What a simulation will cost before it starts: peak memory and wall time of one engine run, from
// what is known once the program is compiled (instructions of every core's stream, cores, trace
// on/off), and the refusal of a run whose estimate exceeds the memory or time limit (`--max-memory`,
// `--max-time`).
//
// The engines' state is per simulated core and per instruction of the stream it runs (the
// analytical engine simulates one core per class of symmetric replicas: Engine::simulated_cores;
// the SystemC engine every core), plus the plan of every core's sends and receives, so a run costs
// about
//   peak = memory in use before the run + bytes_per_core_instruction x sum over simulated cores of
//          the instructions of its stream as stored + bytes per looped instruction x the rest (a
//          stored tile loop's expansion) (+ the trace's per-instruction events when tracing)
//          + bytes per transfer x sends and receives over every core
//   time = (a + b x simulated cores) x the same sum (per core-instruction, slower the more cores)
//          + seconds per transfer x the transfers.
// The constants are measured (run_estimate.cc: the runs and their RSS); bench/speed/
// bench_run_estimate prints estimate against measurement.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/isa/program.h"

namespace tpusim {

struct RunEstimate {
  uint64_t core_instructions = 0;  // over the simulated cores: the instructions of the stream each runs
  uint64_t stored_instructions = 0;  // of those, the ones stored (the rest: tile loops' expansion)
  uint64_t cores = 0;              // cores simulated
  uint64_t program_cores = 0;      // cores of the program (more when one stands for its replicas)
  uint64_t transfers = 0;          // sends and receives over every core (planned for all cores)
  uint64_t base_bytes = 0;         // memory in use before the run (resident set)
  uint64_t run_bytes = 0;          // what the run adds at its peak
  double seconds = 0;              // wall time of the run
  uint64_t peak_bytes() const { return base_bytes + run_bytes; }
};

// The estimate of running `program` on engine `engine` ("analytical" or "systemc"), with or
// without a trace, `base_bytes` being in use already (current_rss_bytes()), simulating the cores
// `simulated` (Engine::simulated_cores; every core when null). Given `simulated`, the analytical
// engine's plan of the transfers is built and in base_bytes.
RunEstimate estimate_run(const isa::Program& program, std::string_view engine, bool trace, uint64_t base_bytes,
                         const std::vector<uint32_t>* simulated = nullptr);

// The limits of one simulation: the bytes it may reach and the wall time it may take, each with
// where it came from (for the message: "--max-memory 500MB", "the default, half of the machine's
// 23.4 GiB", "--max-time 30m", "the default, 5 min per simulation").
struct RunLimits {
  uint64_t bytes = 0;  // 0: no memory limit
  std::string origin;
  double seconds = 0;  // 0: no time limit
  std::string time_origin;
};

// Throws ConfigError (exit 2) when `e` exceeds a limit (memory first): the estimate, the limit, and
// the knobs that lower it (fewer cores, fewer instructions per core, the analytical engine, --trace off, a higher
// limit).
void check_run_limits(const RunEstimate& e, const RunLimits& limits, std::string_view program_name,
                      std::string_view engine, bool trace);

// The process's resident set now (/proc/self/statm), and the machine's physical memory (sysconf).
uint64_t current_rss_bytes();
uint64_t physical_memory_bytes();

// "3.21 GiB", "500 MiB": sizes in messages.
std::string format_bytes(uint64_t bytes);

}  // namespace tpusim
