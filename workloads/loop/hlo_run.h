// The HLO driver: a `kind: hlo` workload's module (workloads/loop/hlo_module.h) parsed, imported
// into the compiler's graph (compiler/hlo/hlo_import.h), lowered once for the first `replicas` cores
// of the slice in ring order, every core running the same program on its own data
// (compiler/graph_spmd.h), simulated once and run for `steps` steps under the framework
// personality's host model (workloads/loop/framework.h, host_costs.h):
//
//   step 0   the host traces the step and XLA compiles it (compile_time_s of the graph's ops and
//            kernels), then the program is loaded and the parameters uploaded (its first execution);
//   step n   torch_xla re-traces every step (lazy tensors), jax and tf_keras dispatch the cached
//            executable; tracing overlaps the previous step's execution and runs at most one step
//            ahead, as in the training loop (training_run.cc), so a steady step takes
//            max(host, device).
//
// Every step runs the same program, so the device time of step 0's simulation is replayed.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_spmd.h"
#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/training_run.h"
#include "workloads/loop/training_trace.h"

namespace tpusim {

struct HloRunOptions {
  std::string engine = "analytical";
  TraceSink* trace = nullptr;  // --trace: host, step and engine events as a training run's (training_trace.h)
  TrainingTraceOptions trace_steps;
  std::function<void(std::string_view stage)> on_stage;  // progress display, may be empty
  // Called during the simulation with the step and the instructions done (a large module on many
  // replicas simulates for seconds); may be empty.
  std::function<void(const TrainingProgress&)> on_progress;
  RunLimits limits;  // --max-memory: the simulation's estimate is checked against it (run_estimate.h)
};

struct HloRunResult {
  std::string engine;
  std::string module_name, module_file;
  int64_t module_replica_count = 1, module_num_partitions = 1;
  uint32_t replicas = 0;   // cores running the module
  uint32_t processes = 0;  // framework clients driving them (framework.h)
  std::string clients;     // "8 processes (one per device)", ...
  hlo::HloStats stats;     // of the module the cores run: one partition's when partitioned
  hlo::SpmdReport spmd;    // the SPMD partitioning (docs/hlo.md, "SPMD partitioning")
  hlo::HloStats module_stats;  // of the module as written (its whole computation), when partitioned
  std::vector<StepRecord> steps;
  ProgramRecord program;   // the step program (every step runs it): op profile, compile and device time
  TimeBreakdown breakdown;
  double total_time_s = 0, steady_step_time_s = 0, compile_time_s = 0, warmup_time_s = 0, upload_time_s = 0;
  uint64_t upload_bytes = 0;  // parameters over the busiest chip's PCIe link at the first execution
  double device_time_s = 0;   // one step's simulated device time
  double mxu_utilization = 0; // a device's program flops over device time at its bf16 MXU peak
  // Host wall time of tpusim itself (the only non-deterministic figures).
  double parse_wall_s = 0, compile_wall_s = 0, simulate_wall_s = 0;
};

// The replicas of `h` (its own, or the module's replica_count x num_partitions), checked against the
// slice's cores: ConfigError at `replicas` (or `module`, for the module's own count) when larger.
uint32_t hlo_replicas(const HwConfig& hw, const HloWorkload& h, int64_t replica_count, int64_t num_partitions);

// Throws ConfigError (no module, a malformed one, too many replicas, an unknown engine) and SimError
// (the program does not fit the simulated hardware).
HloRunResult run_hlo(const HwConfig& hw, const WorkloadConfig& w, const HloRunOptions& opts = {});

}  // namespace tpusim
