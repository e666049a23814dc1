// The step programs of a training run and the replay cache of their simulated executions.
//
// A run executes a handful of distinct graphs (train / first optimizer step / accumulation
// micro-step / eval, at each padded shape) hundreds of times. tpusim builds and compiles each
// distinct (graph kind, B, S) once, and simulates each distinct program once: later executions of
// the same program (same cache key, same starting conditions — every execution starts with empty
// queues and its inputs already in HBM, so the device time is a pure function of the program)
// replay the simulated device time. `full_sim` disables the replay (every execution is simulated);
// both give identical totals because the engines are deterministic.
#pragma once
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "compiler/data_parallel.h"
#include "compiler/memory_breakdown.h"
#include "models/model.h"
#include "sim/analysis/collective_stats.h"
#include "sim/engine/engine.h"
#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "workloads/loop/step_builder.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

// What the host knows about a step graph without lowering it: its cache key and size (the inputs
// of the compile-time model) and its static memory.
struct StepInfo {
  std::string name;                 // "train B=4 S=128", "accumulate+grad B=4 S=128"
  compiler::CacheKey key;
  uint64_t graph_nodes = 0;         // nodes the host traces
  uint64_t hlo_ops = 0;
  uint32_t kernels = 0;             // fused kernels per core
  uint64_t parameter_bytes = 0;     // per device: trainable parameters in HBM
  uint64_t optimizer_state_bytes = 0;  // per device (incl. .grad buffers of gradient accumulation)
};

struct BuiltStep {
  StepVariant variant;
  std::string name;                 // "train B=4 S=128"
  compiler::CompiledStep compiled;  // program for every core, memory plan, cache key
  compiler::MemoryBreakdown memory; // per device, at the peak
  uint64_t graph_nodes = 0;         // nodes the host traces
  uint64_t parameter_bytes = 0;     // per device: trainable parameters in HBM
  uint64_t optimizer_state_bytes = 0;  // per device (incl. .grad buffers of gradient accumulation)
  // Per core program: flops of activation recomputation (gradient checkpointing), part of
  // compiled.program.info.flops but not of the model's flops (MFU counts the model's).
  uint64_t recompute_flops = 0;
};

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
  CollectiveStats collectives;  // the profiled core's collectives, kind by kind (RunResult::collectives)
  // Where the device time went, kernel by kernel (sim/analysis/op_profile.h), of the simulated
  // execution (shared by the replays).
  std::shared_ptr<const OpProfile> op_profile;
};

class StepPrograms {
 public:
  StepPrograms(const HwConfig& hw, const TrainingWorkload& w, const std::string& engine, bool full_sim);
  ~StepPrograms();

  // The variant's graph-level facts (memoized; builds the graph, does not lower it): what a
  // process needs for its cache lookup and compile time when it does not run the program itself.
  const StepInfo& info(const StepVariant& v);
  // Builds and compiles the variant's program on first use (memoized). Throws SimError when a kernel
  // cannot be tiled, ConfigError for an impossible shape.
  BuiltStep& get(const StepVariant& v);
  // The device time of one execution: simulated, or replayed from an earlier identical execution.
  // With replay on, a program's instruction streams are freed once simulated (a BERT-base step is
  // ~10^5 instructions per core; runs with `padding: longest` have dozens of programs).
  // `trace`, if set, receives the engine's per-unit events of this execution when it is simulated
  // (a replayed execution reports none).
  // Throws ConfigError before simulating when the run's estimated peak memory exceeds the limit
  // (set_limits).
  DeviceRun execute(BuiltStep& s, TraceSink* trace = nullptr);
  // The memory limit of each simulation and the display of its progress (name, done, total).
  void set_limits(RunLimits limits) { limits_ = std::move(limits); }
  void set_progress(std::function<void(std::string_view program, uint64_t done, uint64_t total)> fn) {
    progress_ = std::move(fn);
  }

  uint64_t simulations() const { return simulations_; }
  uint64_t graph_builds() const { return graph_builds_; }  // step graphs built (once per variant)
  uint64_t replays() const { return replays_; }
  double compile_wall_s() const { return compile_wall_s_; }
  double simulate_wall_s() const { return simulate_wall_s_; }

 private:
  // The variant's graph, built once: what info() built (kept until get() takes it, one at a time),
  // else a new one.
  std::unique_ptr<StepGraph> take_graph(const StepVariant& v);
  const StepInfo& remember_info(const StepVariant& v, const StepGraph& sg);

  const HwConfig& hw_;
  const TrainingWorkload& w_;
  std::unique_ptr<const models::Model> model_;  // the workload's model (make_model)
  bool full_sim_;
  std::unique_ptr<Engine> engine_;
  RunLimits limits_;
  std::function<void(std::string_view, uint64_t, uint64_t)> progress_;
  std::map<StepVariant, StepInfo> info_;
  std::map<StepVariant, BuiltStep> built_;
  std::pair<StepVariant, std::unique_ptr<StepGraph>> spare_;  // built by info(), not yet by get()

  std::unordered_map<compiler::CacheKey, DeviceRun, compiler::CacheKeyHash> replay_;
  uint64_t simulations_ = 0, replays_ = 0, graph_builds_ = 0;
  double compile_wall_s_ = 0, simulate_wall_s_ = 0;
};

}  // namespace tpusim
