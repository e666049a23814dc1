// What one execution of a step program did on the device: its time, its collectives' cost and its
// op profile (sim/analysis/), as the step executor (step_executor.h) simulated or replayed it, or as
// a sweep's program memo (program_memo.h) kept it from another run.
#pragma once
#include <cstdint>
#include <memory>

#include "sim/analysis/collective_stats.h"
#include "sim/analysis/op_profile.h"

namespace tpusim {

struct DeviceRun {
  double device_s = 0;         // s: program launch to the last core's completion
  uint64_t device_cycles = 0;  // core cycles
  // s: the gradient all-reduce's exposed time: the part of its run during which the profiled core
  // (the last to finish) runs no work of its own (sim/analysis/collective_stats.h). 0 without one.
  double allreduce_s = 0;
  // s: the exposed time of every kind of collective (all-reduce, all-gather, reduce-scatter, ...):
  // the communication on the step's critical path, for data parallel and FSDP alike.
  double collective_s = 0;
  bool replayed = false;
  uint32_t cores = 0, simulated_cores = 0;  // RunResult::cores.size(), RunResult::simulated_cores
  CollectiveStats collectives;  // the profiled core's collectives, kind by kind (RunResult::collectives)
  // Where the device time went, kernel by kernel (sim/analysis/op_profile.h), of the simulated
  // execution (shared by the replays).
  std::shared_ptr<const OpProfile> op_profile;
};

}  // namespace tpusim
