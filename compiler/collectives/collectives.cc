// The collectives' entry points: choose an algorithm, build its plan, emit it.
#include "compiler/collectives/collectives.h"

#include <stdexcept>

#include "compiler/collectives/collective_algorithms.h"
#include "compiler/collectives/collective_cost.h"

namespace tpusim::compiler {

// Per tensor, the algorithm with the smaller closed-form time (collective_cost.h):
//   T = steps x alpha + max(link bytes / link rate, NoC bytes / NoC rate, HBM bytes / HBM rate).
// The ring has 2(n-1) steps for an all-reduce, dims 2(c-1 + sum_d (m_d - 1)) (e.g. 2x(1+31+31)
// = 126 instead of 4094 on a 32x32 pod), and dims spreads the bulk over all dimensions' links;
// on a mesh its folded rings halve a dimension's bandwidth. So small tensors on many cores
// (latency-bound) and large ones on tori go to dims, while a small slice (few steps either way)
// or a 1-D group keeps the ring. All-to-all has a single algorithm (pairwise exchange).
CollectiveAlgorithm choose_algorithm(CollectiveKind kind, uint64_t bytes, const HwConfig& hw, uint32_t cores) {
  if (kind == CollectiveKind::kAllToAll) return CollectiveAlgorithm::kRing;
  uint32_t long_dims = 0;
  for (uint32_t d : hw.slice.topology.dims) long_dims += d > 1;
  if (long_dims < 2 || cores != hw.slice.chips() * hw.chip.cores) return CollectiveAlgorithm::kRing;
  const double ring = collective_cost(kind, CollectiveAlgorithm::kRing, bytes, hw, cores).total_cycles();
  const CollectiveCost d = collective_cost(kind, CollectiveAlgorithm::kDimensionByDimension, bytes, hw, cores);
  // The closed form assumes dims' concurrent lanes (two per dimension, the chip's cores sharing its
  // links) never get in each other's way; in the SystemC model they contend for links, the NoC and
  // HBM and block each other at the heads of the in-order queues. kDimsLaneContention is the
  // smallest such overhead measured (docs/collectives.md, 440 MiB: dims' simulated time over its
  // cost relative to the ring's is 1.13x on the v3-128 torus, 1.5-2.0x on v3-8 and v3-32), applied
  // to dims' bandwidth term until the cost model derives it. So dims is chosen where it wins even
  // then: where the ring's 2(n-1) steps of latency dominate (large slices, small tensors), not for a
  // few percent of bandwidth.
  constexpr double kDimsLaneContention = 1.15;
  const double dims = d.latency_cycles + kDimsLaneContention * d.bandwidth_cycles();
  return dims < ring ? CollectiveAlgorithm::kDimensionByDimension : CollectiveAlgorithm::kRing;
}

CollectivePlan plan_collective(CollectiveKind kind, const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes,
                               CollectiveAlgorithm algorithm, bool per_device) {
  const uint32_t n = uint32_t(cores.size());
  if (kind == CollectiveKind::kAllToAll) return all_to_all_plan(n, bytes);
  if (algorithm == CollectiveAlgorithm::kAuto) algorithm = choose_algorithm(kind, bytes, hw, n);
  const bool device = per_device && kind == CollectiveKind::kAllReduce && device_plan_applicable(cores, hw);
  if (algorithm == CollectiveAlgorithm::kDimensionByDimension && dims_applicable(cores, hw))
    return dims_plan(kind, cores, hw, bytes, device);
  if (device) return device_ring_plan(cores, hw, bytes);
  return ring_plan(kind, n, bytes);
}

CollectiveResult emit_collective(CollectiveKind kind, std::vector<ProgramBuilder*>& builders,
                                 const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes,
                                 const std::vector<std::vector<uint32_t>>& after, const CollectiveOptions& opt) {
  if (opt.slices > 1) return emit_multislice_collective(kind, builders, cores, hw, bytes, after, opt);
  const CollectivePlan plan = plan_collective(kind, cores, hw, bytes, opt.algorithm, opt.per_device);
  return emit_plan(plan, builders, cores, after, opt.piece_bytes, opt.tag_base, opt.background);
}

std::vector<uint32_t> emit_all_reduce(std::vector<ProgramBuilder*>& builders, const std::vector<CoreId>& ring,
                                      uint64_t bytes, const std::vector<std::vector<uint32_t>>& after,
                                      const AllReduceOptions& opt, uint32_t* tags_used) {
  const uint32_t n = uint32_t(ring.size());
  if (builders.size() != n || after.size() != n) throw std::invalid_argument("emit_all_reduce: one builder per ring member");
  const CollectivePlan plan = ring_plan(CollectiveKind::kAllReduce, n, bytes);
  CollectiveResult r = emit_plan(plan, builders, ring, after, opt.piece_bytes, opt.tag_base);
  if (tags_used) *tags_used = r.tags_used;
  return r.done;
}

}  // namespace tpusim::compiler
