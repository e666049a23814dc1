// The optimizer update of fully sharded data parallelism (torch_xla XlaFullyShardedDataParallel,
// flatten_parameters=True): each wrapped unit's parameters are flattened into one flat parameter,
// padded to a multiple of the n cores, and each core keeps only its 1/n slice of it, of its
// gradient (the output of the reduce-scatter) and of its optimizer state. The update is the usual
// optimizer chain (models/optimizers.h) on those slices.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.h"
#include "models/optimizers.h"

namespace tpusim::models {

struct ShardedOptimizer {
  Graph graph;
  std::vector<int> shards;       // per unit: the local slice of its flat parameter (kTrainable)
  std::vector<int> grad_shards;  // per unit: the local slice of its reduced gradient (kInput)
  OptimizerGraph optimizer;      // updates in unit order; donated shards and state
};

// Elements of one core's slice of a flat parameter of `elements` over `n` cores: ceil(elements/n).
int64_t shard_elements(uint64_t elements, uint32_t n);

// `unit_elements[u]`: parameter elements of unit u (named unit_names[u]); `dtype`: the stored
// parameters' (and gradients') dtype. `update` false: only the slices (an evaluation step), no
// gradient slices and no optimizer.
ShardedOptimizer build_sharded_optimizer(const std::vector<std::string>& unit_names,
                                         const std::vector<uint64_t>& unit_elements, uint32_t n, DType dtype,
                                         const OptimizerConfig& cfg, bool update = true);

}  // namespace tpusim::models
