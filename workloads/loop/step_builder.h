// The one step builder: the graph of a training step variant (train, first optimizer step,
// accumulation micro-step, eval; at a batch and padded length) for the workload's model
// (models/model.h) and parallel strategy: forward from the model, backward by autodiff, the
// optimizer update; for data parallelism what compiler/step/data_parallel.h needs to know of it, for
// `sharding: fsdp` the FSDP step's graphs (compiler/step/fsdp_graphs.h) instead.
#pragma once
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>

#include "compiler/step/data_parallel.h"
#include "compiler/step/fsdp_graphs.h"
#include "models/model.h"
#include "sim/hw/hw_config.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/step_source.h"

namespace tpusim {

struct StepGraph {
  models::ModelGraph fwd;              // data parallel: the whole step graph (fsdp: moved into `fsdp`)
  compiler::DataParallelStep dp;       // data parallel: gradients, donation; dp.graph = &fwd.graph
  std::optional<compiler::FusionPlan> fusions;  // data parallel: fwd.graph's, planned once (NativeSteps)
  std::unique_ptr<compiler::FsdpGraphs> fsdp;  // sharding: fsdp
  uint64_t recompute_flops = 0;  // data parallel with remat_policy: the recomputed matmuls' flops
  // The examples a device computes per step: the variant's batch, a batch shard's (a tensor x
  // sequence group's devices run all their examples); a megacore's cores take ceil(/cores) each.
  uint32_t device_examples = 0;
};

// A step variant's batch at `per_device` examples per device: a batch shard's examples over the
// workload's mesh on `hw` (shard_examples; ConfigError at `key` for a fraction that does not make
// whole examples).
uint32_t variant_batch(const TrainingWorkload& w, const HwConfig& hw, double per_device,
                       const std::string& key = "per_device_batch_size");

// eval_precision: bf16 on an f32 run: the eval graph computes in bf16 (its own program).
bool bf16_eval(const TrainingWorkload& w, const StepVariant& v);

// Builds the variant's step graph. Throws ConfigError for a shape the model cannot take.
std::unique_ptr<StepGraph> build_step_graph(const models::Model& model, const TrainingWorkload& w, const HwConfig& hw,
                                            const StepVariant& v);

}  // namespace tpusim
