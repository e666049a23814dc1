// Activation recomputation (gradient checkpointing), as torch_xla's checkpoint_module /
// `xla_fsdp_grad_ckpt` and JAX's jax.checkpoint (MaxText's remat policies) apply it per layer: the
// forward pass keeps only each checkpointed module's input (and what a policy saves); the module's
// backward first reruns its forward from that input, and reads the recomputed activations instead
// of saved ones.
//
// As a graph rewrite: every backward node that reads an activation of a checkpointed module (a
// forward value computed inside it that no forward node outside the module reads) reads a clone
// instead. Clones are created right before the first backward node that needs them, so node ids
// stay topological and the recompute runs just before the module's backward. Parameters, constants
// and the module's inputs and outputs are not cloned (they are kept).
//
// Host offload (MaxText's `offload`, jax's save_and_offload_only_these_names): a saved value can
// live in host memory instead of HBM between the forward and the backward. It is copied out right
// after it is computed (models::OpKind::kHostOffload) and its HBM buffer freed after its last
// forward reader (the offload's done there); its copy back (kHostReload) is issued when the
// backward of the module before it (in backward order) begins, so that it crosses PCIe while that
// module's backward runs (XLA's latency-hiding scheduler starts host-to-device copies as early as
// memory allows; one layer ahead is the model's assumption), and every backward reader, clones
// included, reads it.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "models/graph.h"
#include "models/model.h"
#include "models/remat_policy.h"

namespace tpusim::models {

struct Recomputed {
  Graph graph;
  std::vector<int> new_id;  // old node id -> id in `graph`
  int last_forward = -1;    // the last forward node of `graph` (the offloads' copies and dones added)
  size_t recomputed_nodes = 0;
  std::vector<int> module_of;  // per node of `graph`: the module a recompute clone belongs to, else -1
  // The recomputed matmuls' flops (dots and attention kernels): hardware flops, not model flops.
  uint64_t flops = 0;
  uint64_t offloaded_bytes = 0;  // what the forward copies to host memory (and the backward back)
};

// `g`: forward nodes are ids <= last_forward, backward nodes follow. `modules`: the checkpointed
// modules' forward ranges, in forward order. `spec`: what the forward keeps of each (models/remat_policy.h).
Recomputed recompute_in_backward(const Graph& g, int last_forward, const std::vector<ModuleRange>& modules,
                                 const RematSpec& spec = {});

}  // namespace tpusim::models
