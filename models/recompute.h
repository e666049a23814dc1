// Activation recomputation (gradient checkpointing), as torch_xla's checkpoint_module /
// `xla_fsdp_grad_ckpt` applies it per encoder layer: the forward pass keeps only each checkpointed
// module's input; the module's backward first reruns its forward from that input, and reads the
// recomputed activations instead of saved ones.
//
// As a graph rewrite: every backward node that reads an activation of a checkpointed module (a
// forward value computed inside it that no forward node outside the module reads) reads a clone
// instead. Clones are created right before the first backward node that needs them, so node ids
// stay topological and the recompute runs just before the module's backward. Parameters, constants
// and the module's inputs and outputs are not cloned (they are kept).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "models/model.h"
#include "models/graph.h"

namespace tpusim::models {

struct Recomputed {
  Graph graph;
  std::vector<int> new_id;  // old node id -> id in `graph`
  size_t recomputed_nodes = 0;
  std::vector<int> module_of;  // per node of `graph`: the module a recompute clone belongs to, else -1
  // The recomputed matmuls' flops (dots and attention kernels): hardware flops, not model flops.
  uint64_t flops = 0;
};

// `g`: forward nodes are ids <= last_forward, backward nodes follow. `modules`: the checkpointed
// modules' forward ranges. `keep` (optional): the values of a module the forward keeps anyway (a
// remat policy's saved tensors, models/remat_policy.h): read from the forward, not recomputed.
Recomputed recompute_in_backward(const Graph& g, int last_forward, const std::vector<ModuleRange>& modules,
                                 const std::function<bool(const Node&)>& keep = {});

}  // namespace tpusim::models
