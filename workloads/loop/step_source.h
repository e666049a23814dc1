// What the step loop (workloads/loop/step_loop.h) runs: the programs of a run's step variants, from
// a step source. Two sources: a model's native steps (native_steps.h: the step graph of each
// variant, sharded and compiled by the one SPMD step compiler) and a module imported from XLA HLO
// (hlo_step.h: one program, whatever the variant). The loop asks a source what the host knows of
// a variant's graph without lowering it (info: its cache key and size, for the compile-cache
// lookup and the compile-time model) and, when it runs one, for the compiled program (get).
#pragma once
#include <compare>
#include <cstdint>
#include <string>

#include "compiler/compile_cache.h"
#include "compiler/plan/memory_breakdown.h"
#include "compiler/step/spmd_step.h"
#include "workloads/loop/device_run.h"
#include "workloads/loop/graph_kind.h"

namespace tpusim {


// Gradient accumulation as PyTorch runs it (gradient_accumulation_steps > 1): backward adds into
// each parameter's .grad buffer when it exists; zero_grad() (set_to_none=True, the default since
// torch 2.0) frees the buffers after every optimizer step. So the first micro-step of a cycle
// creates the buffers (no .grad input), later micro-steps read and overwrite them, and the sync
// step adds its own gradients to them before the all-reduce and the update: up to three distinct
// train graphs per shape, each its own compilation.
struct StepVariant {
  GraphKind kind = GraphKind::kTrain;
  uint32_t batch = 0;  // B, per device (a megacore's cores compute ceil(B / cores) each)
  uint32_t seq = 0;    // S, tokens
  bool grad_buffers = false;  // kAccumulate / kTrain*: the graph reads the accumulated .grad buffers
  uint32_t target = 0;  // T, target tokens (task seq2seq; 0 otherwise): a change recompiles like S does
  auto operator<=>(const StepVariant&) const = default;
};

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
  // The examples a device computes per step (StepGraph::device_examples; 0: the variant's batch).
  uint32_t device_examples = 0;
  // Set when the step came from a sweep's program memo (program_memo.h): its device run, simulated
  // by another point with the same configuration. `compiled.program` is then empty (not lowered
  // here); the step executor returns this run instead of simulating.
  std::shared_ptr<const DeviceRun> memo_run;
};

class StepSource {
 public:
  virtual ~StepSource() = default;
  // The variant's graph-level facts (memoized): what a process needs for its cache lookup and
  // compile time when it does not run the program itself.
  virtual const StepInfo& info(const StepVariant& v) = 0;
  // The variant's compiled program (memoized). Throws SimError when a kernel cannot be tiled,
  // ConfigError for an impossible shape.
  virtual BuiltStep& get(const StepVariant& v) = 0;
  // Host wall time spent building and compiling programs, s (the run's own, not simulated, time).
  virtual double compile_wall_s() const = 0;
  // The programs' shapes are fixed (an imported module): every process runs each step, whatever
  // the batch it was given.
  virtual bool fixed_shapes() const { return false; }
};

}  // namespace tpusim
