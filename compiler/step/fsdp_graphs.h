// Builds the two graphs of an FSDP training step (compiler/step/fsdp_schedule.h) from a model's forward graph
// (models/model.h): forward + backward with every gradient an output (and, with gradient
// checkpointing, each of the model's layers recomputed in the backward: models/recompute.h), and
// the optimizer update of the local parameter slices (models/sharded_optimizer.h). The wrapping
// units are ModelGraph::units unless a wrapping policy decides them.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "compiler/step/fsdp_schedule.h"
#include "compiler/step/fsdp_wrap.h"
#include "models/model.h"
#include "models/optimizers.h"
#include "models/remat_policy.h"
#include "models/sharded_optimizer.h"

namespace tpusim::compiler {

struct FsdpGraphs {
  models::Graph graph;
  models::ShardedOptimizer optimizer;
  FsdpStep step;  // points into this object: do not copy or move it
  size_t recomputed_nodes = 0;
  std::vector<int> recomputed_layer;  // per node of `graph`: the layer it recomputes, else -1
  uint64_t recompute_flops = 0;       // the recomputed dots' flops (per core): hardware, not model, flops
  uint64_t parameter_bytes = 0;        // per core: the parameter slices
  uint64_t optimizer_state_bytes = 0;  // per core: the optimizer-state slices
};

// The units' names and parameter elements, in FsdpStep::units order (for tests and reports).
std::vector<std::pair<std::string, uint64_t>> fsdp_unit_sizes(const FsdpGraphs& f);

// `n`: cores the parameters are sharded over. `grad_ckpt`: recompute each layer's forward (the
// units flagged `layer`) in its backward (torch_xla's xla_fsdp_grad_ckpt). `training` false: an
// evaluation step (the forward with its all-gathers only). `wrap`: the units of a wrapping policy
// (fsdp_wrap.h) over the model's module tree; none given: ModelGraph::units. Gradient
// checkpointing stays per layer either way.
// `remat`: with grad_ckpt, what the forward keeps of a layer (a remat policy's saved tensors, in HBM
// or host memory: models/recompute.h).
// `mesh`: unset, {fsdp: n}; fsdp (= n) x tensor: `fwd` is one tensor replica's share with its split
// weights annotated (models/model.h, StepShape::tensor), and the tensor axis's all-reduces are
// written into the step graph after the backward and the recomputation (partition.h).
std::unique_ptr<FsdpGraphs> build_fsdp_graphs(models::ModelGraph fwd, uint32_t n, bool grad_ckpt,
                                              const models::OptimizerConfig& opt, bool training = true,
                                              const FsdpWrapPolicy& wrap = {}, const models::Mesh& mesh = {},
                                              const models::RematSpec& remat = {});

}  // namespace tpusim::compiler
