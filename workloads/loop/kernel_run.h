// The kernel driver: one kernel, compiled for one core, run once on an engine.
//   WorkloadConfig (kind: kernel) + HwConfig -> compiler::compile_kernel -> Engine::run -> KernelRunResult
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "compiler/compile.h"
#include "sim/base/trace.h"
#include "sim/engine/engine.h"
#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/training_run.h"

namespace tpusim {

struct KernelRunOptions {
  std::string engine = "systemc";  // see engine_names()
  TraceSink* trace = nullptr;      // optional observer
  // Called when a stage starts ("compile", "simulate"); for progress display, may be empty.
  std::function<void(std::string_view stage)> on_stage;
  // Called during the simulation with the instructions done of the total (a large kernel on the
  // SystemC engine runs for seconds); may be empty.
  std::function<void(const TrainingProgress&)> on_progress;
  // A simulation estimated to exceed it is refused (ConfigError) before it runs (sim/engine/run_estimate.h).
  RunLimits limits;
};

struct KernelRunResult {
  std::string engine;
  std::string program_name;
  isa::ProgramInfo info;            // flops, HBM bytes, fusions (compiler accounting)
  uint64_t instructions = 0;        // over all core streams of the program
  uint32_t cores_used = 0;          // core streams in the program
  compiler::IdealCycles ideal;      // lower bounds on one core (core cycles)
  RunResult run;                    // device cycles, per-core end cycles, per-block stats
  // Host wall time of this process (seconds); the only non-deterministic figures.
  double compile_wall_s = 0;
  double simulate_wall_s = 0;
};

// Throws ConfigError (bad kernel/shape/engine, or a workload that is not `kind: kernel`) and
// SimError (the program does not fit the simulated hardware).
KernelRunResult run_kernel(const HwConfig& hw, const WorkloadConfig& workload, const KernelRunOptions& opts = {});

// The compiler request for a kernel workload (exposed for benchmarks and tests).
compiler::KernelRequest kernel_request(const KernelWorkload& k);

// A kernel workload's shape against `hw` without lowering it (tpusim validate, and run before
// compiling): a tensor past 2^40 elements or larger than a core's HBM is a ConfigError at the shape
// key with the largest value, with its file and line. Other kinds: nothing to check.
void check_kernel_shape(const HwConfig& hw, const WorkloadConfig& w);

}  // namespace tpusim
