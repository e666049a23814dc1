#include "models/sharded_optimizer.h"

#include <stdexcept>

namespace tpusim::models {

int64_t shard_elements(uint64_t elements, uint32_t n) {
  if (n == 0) throw std::invalid_argument("shard_elements: no cores");
  return int64_t((elements + n - 1) / n);
}

ShardedOptimizer build_sharded_optimizer(const std::vector<std::string>& unit_names,
                                         const std::vector<uint64_t>& unit_elements, uint32_t n, DType dtype,
                                         const OptimizerConfig& cfg, bool update) {
  if (unit_names.size() != unit_elements.size()) throw std::invalid_argument("build_sharded_optimizer: one name per unit");
  ShardedOptimizer s;
  Gradients grads;
  for (size_t u = 0; u < unit_names.size(); ++u) {
    const Dims shape = {shard_elements(unit_elements[u], n)};
    const int p = s.graph.parameter(unit_names[u] + ".flat_param", shape, dtype, ParamRole::kTrainable);
    s.shards.push_back(p);
    if (!update) continue;
    const int g = s.graph.parameter(unit_names[u] + ".flat_param.grad", shape, dtype, ParamRole::kInput);
    s.grad_shards.push_back(g);
    grads.params.push_back(p);
    grads.grads.push_back(g);
  }
  if (update) s.optimizer = append_optimizer(s.graph, grads, cfg);  // marks the updated slices as outputs
  return s;
}

}  // namespace tpusim::models
