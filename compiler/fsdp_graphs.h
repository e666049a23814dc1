// Builds the two graphs of an FSDP training step (compiler/fsdp.h) from a BERT forward graph:
// forward + backward with every gradient an output (and, with gradient checkpointing, each
// encoder layer recomputed in the backward: models/recompute.h), and the optimizer update of the
// local parameter slices (models/sharded_optimizer.h). The wrapping units are BertGraph::units.
#pragma once
#include <cstdint>
#include <memory>

#include "compiler/fsdp.h"
#include "compiler/fsdp_wrap.h"
#include "models/bert.h"
#include "models/sharded_optimizer.h"

namespace tpusim::compiler {

struct FsdpGraphs {
  models::Graph graph;
  models::ShardedOptimizer optimizer;
  FsdpStep step;  // points into this object: do not copy or move it
  size_t recomputed_nodes = 0;
  std::vector<int> recomputed_layer;  // per node of `graph`: the encoder layer it recomputes, else -1
  uint64_t parameter_bytes = 0;        // per core: the parameter slices
  uint64_t optimizer_state_bytes = 0;  // per core: the optimizer-state slices
};

// The units' names and parameter elements, in FsdpStep::units order (for tests and reports).
std::vector<std::pair<std::string, uint64_t>> fsdp_unit_sizes(const FsdpGraphs& f);

// `n`: cores the parameters are sharded over. `grad_ckpt`: recompute each encoder layer's forward
// in its backward (torch_xla's xla_fsdp_grad_ckpt). `training` false: an evaluation step (the
// forward with its all-gathers only). `wrap`: the units of a wrapping policy (fsdp_wrap.h); none
// given: BertGraph::units (the embeddings, each encoder layer, the heads). Gradient checkpointing
// stays per encoder layer either way.
std::unique_ptr<FsdpGraphs> build_fsdp_graphs(models::BertGraph fwd, uint32_t n, bool grad_ckpt,
                                              const models::OptimizerConfig& opt, bool training = true,
                                              const FsdpWrapPolicy& wrap = {});

}  // namespace tpusim::compiler
