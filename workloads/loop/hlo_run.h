// The HLO driver: a `kind: hlo` workload's module (workloads/loop/hlo_module.h) parsed, partitioned
// when it is a pre-partitioning SPMD module, imported into the compiler's graph
// (compiler/hlo/hlo_import.h) and compiled once by the SPMD step compiler (compiler/step/spmd_step.h)
// for the first `replicas` cores of the slice in ring order, every core running the same program on
// its own data: a step source of one program (ImportedStep). The one step loop (step_loop.h) runs it
// for `steps` steps under the framework personality (framework.h), as a training run's steps:
//
//   step 0   every client traces the step and XLA compiles it (compile_time_s of the graph's ops and
//            kernels), then the program is loaded and the parameters uploaded (its first execution);
//   step n   torch_xla re-traces every step (lazy tensors), jax and tf_keras dispatch the cached
//            executable; tracing overlaps the previous step's execution and runs at most one step
//            ahead, so a steady step takes max(host, device).
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
#include "workloads/loop/hlo_step.h"
#include "workloads/loop/run_records.h"
#include "workloads/loop/step_loop.h"

namespace tpusim {

struct HloRunOptions : LoopOptions {};

// A run of an imported module: the step loop's records (LoopResult: steps, the one program, the
// time breakdown) and what the module is.
struct HloRunResult : LoopResult {
  std::string module_name, module_file;
  int64_t module_replica_count = 1, module_num_partitions = 1;
  uint32_t cores = 0;      // cores running the module (the module's replicas x partitions, or `replicas`)
  hlo::HloStats stats;     // of the module the cores run: one partition's when partitioned
  hlo::SpmdReport spmd;    // the SPMD partitioning (docs/hlo.md, "SPMD partitioning")
  hlo::HloStats module_stats;  // of the module as written (its whole computation), when partitioned
  double device_time_s = 0;   // one step's simulated device time
  double parse_wall_s = 0;    // host wall time of tpusim's parse and import (compile and simulate: LoopResult's)
};

// The replicas of `h` (its own, or the module's replica_count x num_partitions), checked against the
// slice's cores: ConfigError at `replicas` (or `module`, for the module's own count) when larger.
uint32_t hlo_replicas(const HwConfig& hw, const HloWorkload& h, int64_t replica_count, int64_t num_partitions);

// `steps` steps of an imported module's program (hlo_step.h) on its cores through the step loop,
// under `framework`; `advice`: what to change when the program does not fit in HBM.
// Fills `r` (LoopResult).
void run_imported_steps(const HwConfig& hw, ImportedStep& source, uint32_t cores, FrameworkKind framework,
                        uint64_t steps, const std::string& advice, const LoopOptions& o, LoopResult& r);

// Throws ConfigError (no module, a malformed one, too many replicas, an unknown engine) and SimError
// (the program does not fit the simulated hardware).
HloRunResult run_hlo(const HwConfig& hw, const WorkloadConfig& w, const HloRunOptions& opts = {});

}  // namespace tpusim
