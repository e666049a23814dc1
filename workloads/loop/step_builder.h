// The one step builder: the graph of a training step variant (train, first optimizer step,
// accumulation micro-step, eval; at a batch and padded length) for the workload's model
// (models/model.h) and parallel strategy: forward from the model, backward by autodiff, the
// optimizer update; for data parallelism what compiler/data_parallel.h needs to know of it, for
// `sharding: fsdp` the FSDP step's graphs (compiler/fsdp_graphs.h) instead.
#pragma once
#include <compare>
#include <cstdint>
#include <memory>

#include "compiler/data_parallel.h"
#include "compiler/fsdp_graphs.h"
#include "models/model.h"
#include "sim/hw/hw_config.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

enum class GraphKind {
  kTrain,            // forward + backward + all-reduce + optimizer update
  kTrainFirstStep,   // the first optimizer step: optimizer state created inside the graph
  kAccumulate,       // non-sync micro-step: forward + backward into the .grad buffers, no all-reduce
  kEval,             // forward only, dropout off
};
const char* graph_kind_name(GraphKind k);  // "train", "train_first_step", "accumulate", "eval"

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

struct StepGraph {
  models::ModelGraph fwd;              // data parallel: the whole step graph (fsdp: moved into `fsdp`)
  compiler::DataParallelStep dp;       // data parallel: gradients, donation; dp.graph = &fwd.graph
  std::unique_ptr<compiler::FsdpGraphs> fsdp;  // sharding: fsdp
};

// eval_precision: bf16 on an f32 run: the eval graph computes in bf16 (its own program).
bool bf16_eval(const TrainingWorkload& w, const StepVariant& v);

// Builds the variant's step graph. Throws ConfigError for a shape the model cannot take.
std::unique_ptr<StepGraph> build_step_graph(const models::Model& model, const TrainingWorkload& w, const HwConfig& hw,
                                            const StepVariant& v);

}  // namespace tpusim
