// FSDP wrapping policies: which modules of the model are FSDP units, as torch_xla's auto-wrap
// policies decide it (torch_xla/distributed/fsdp/wrap.py, what Trainer's fsdp_config selects):
//   * transformer_auto_wrap_policy (`fsdp_wrap_layer_classes`): every module of a listed class;
//   * size_based_auto_wrap_policy (`fsdp_min_num_params`): bottom-up, a module whose parameters not
//     already in a wrapped descendant reach N (recursing only into modules of >= N parameters;
//     ModuleLists are never wrapped);
// with the model's remaining parameters in the root unit, which torch_xla (after fairscale) does not
// reshard after the forward pass: gathered once for the whole step. The module tree is read off the
// state_dict names of the graph's parameters, each prefix's class as the model declares it
// (models/model.h ModuleTree); a tied weight is one parameter, in the module that holds it first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::models {
class Graph;
class ModuleTree;
}

namespace tpusim::compiler {

struct FsdpWrapPolicy {
  uint64_t min_num_params = 0;             // size based; 0 = off
  std::vector<std::string> layer_classes;  // transformer based; empty = off
  bool custom() const { return min_num_params > 0 || !layer_classes.empty(); }
};

struct FsdpWrapUnit {
  std::string name;         // module path (a state_dict prefix), "root" for the root unit
  std::vector<int> params;  // trainable parameter nodes, in graph order
  bool whole_step = false;  // the root unit: one gather for forward and backward
};

// The units of a custom policy over the graph's trainable parameters `params`, in the order of
// their first parameter (the root unit last if it holds any); `modules` names each module's class.
// Throws std::invalid_argument for a policy that is not custom.
std::vector<FsdpWrapUnit> fsdp_wrap_units(const models::Graph& g, const std::vector<int>& params,
                                          const FsdpWrapPolicy& policy, const models::ModuleTree& modules);

}  // namespace tpusim::compiler
