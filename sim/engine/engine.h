// Engines execute a Program on a hardware config. Two implementations, chosen by name:
//   "systemc"    — the SystemC model: blocks as modules, HBM channels with queues (contention emerges)
//   "analytical" — the same timing formulas as a list schedule without contention (microseconds)
// An unknown name is a ConfigError listing the known names.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/analysis/collective_stats.h"
#include "sim/analysis/op_profile.h"
#include "sim/base/progress_ticker.h"
#include "sim/base/trace.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim {

struct CoreRunResult {
  uint32_t chip = 0;
  uint32_t core = 0;
  uint64_t end_cycle = 0;  // core cycles from program start (including launch) to its last completion
};

struct RunResult {
  uint64_t device_cycles = 0;  // max over cores of end_cycle (core clock cycles)
  double device_time_s = 0;
  std::vector<CoreRunResult> cores;
  // Cores the engine simulated: fewer than `cores` where one stood for its class of symmetric
  // replicas (analytical engine: sim/engine/replica_classes.h); the figures are every core's.
  uint32_t simulated_cores = 0;
  // Per-block stats tree, keyed by hierarchical name: {"slice.chip0.core0.mxu0": {...StatGroup dump}}
  nlohmann::json stats = nlohmann::json::object();
  // Where the time of the core that finished last (the first such in core order) went, kernel
  // by kernel (sim/analysis/op_profile.h); no entries when its stream has no kernel table.
  OpProfile op_profile;
  // What the collectives cost that same core, kind by kind (sim/analysis/collective_stats.h: busy and
  // exposed time, instructions, bytes sent); filled whether or not the op profile is.
  CollectiveStats collectives;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // May be called repeatedly with different programs on the same hardware (the training driver
  // runs many programs); each run starts at cycle 0 of its own and returns its own stats.
  // Throws SimError when the program cannot run on the hardware (e.g. VMEM overflow).
  virtual RunResult run(const isa::Program& program, TraceSink* trace) = 0;
  // Whether run() fills RunResult::op_profile (default on; a caller that does not read it saves
  // its cost, a pass over the profiled core's stream).
  void set_op_profile(bool on) { op_profile_ = on; }
  bool op_profile() const { return op_profile_; }
  // The cores of `program` that run() will simulate (program.cores indices; for the run estimate,
  // sim/engine/run_estimate.h): every core, unless the engine simulates one per class of symmetric
  // replicas. The analytical engine keeps the plan it builds for a run() of the same, unchanged
  // program that follows.
  virtual std::vector<uint32_t> simulated_cores(const isa::Program& program, bool trace);
  // Whether the analytical engine simulates one core per class of symmetric replicas and gives the
  // others its figures (default on; exact: sim/engine/replica_classes.h); off, it simulates every
  // core. The SystemC engine always simulates every core.
  void set_replicas(bool on) { replicas_ = on; }
  bool replicas() const { return replicas_; }
  // Called during run() with instructions completed of the run's total (sim/base/progress_ticker.h).
  void set_progress(RunProgress fn) { progress_ = std::move(fn); }

 protected:
  const RunProgress& progress() const { return progress_; }

 private:
  bool op_profile_ = true;
  bool replicas_ = true;
  RunProgress progress_;
};

// Builds the engine named `name` for hardware `hw`. Throws ConfigError for an unknown name.
std::unique_ptr<Engine> make_engine(std::string_view name, const HwConfig& hw);
std::vector<std::string> engine_names();

}  // namespace tpusim
