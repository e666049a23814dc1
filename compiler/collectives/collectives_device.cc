// Megacore all-reduces (TPU v4, chip.megacore): the gradients of one device are the sum of its
// cores' partial gradients (each core computed half of the device's batch), and the device needs
// the sum once, in the chip's shared HBM. So the all-reduce is hierarchical and stops short of the
// on-chip all-gather (docs/collectives.md, "Megacore"):
//   1. reduce-scatter over the cores of each chip (the on-chip network): core j of a chip holds
//      its 1/c share of the chip's sum;
//   2. all-reduce of that share with the cores of index j on every other chip: a bidirectional
//      ring along the chips (one ring per core index; both rings cross the same ICI links, each
//      with 1/c of the bytes, so a chip's links carry what one participant per chip would send);
//   3. nothing: core j updates the parameters of its share (compiler/step/data_parallel.cc), and the
//      next step's kernels on both cores read the parameters from the shared HBM.
// The dimension-by-dimension form is dims_plan(per_device = true): the same chip phase first,
// then the ICI dimensions, and no chip-phase all-gather.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "compiler/collectives/collective_algorithms.h"

namespace tpusim::compiler {

std::vector<uint32_t> device_of(const std::vector<CoreId>& cores) {
  std::map<uint32_t, uint32_t> index;  // chip -> position among the chips, in order of appearance
  std::vector<uint32_t> out;
  out.reserve(cores.size());
  for (const CoreId& c : cores) out.push_back(index.emplace(c.chip, uint32_t(index.size())).first->second);
  return out;
}

bool device_plan_applicable(const std::vector<CoreId>& cores, const HwConfig& hw) {
  const uint32_t c = hw.chip.cores;
  if (!hw.chip.megacore || c < 2 || cores.empty() || cores.size() % c != 0) return false;
  std::map<uint32_t, std::vector<bool>> seen;  // chip -> its core indices present
  for (const CoreId& id : cores) {
    if (id.core >= c) return false;
    std::vector<bool>& s = seen[id.chip];
    s.resize(c, false);
    if (s[id.core]) return false;
    s[id.core] = true;
  }
  return seen.size() * c == cores.size();
}

CollectivePlan device_ring_plan(const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes) {
  if (!device_plan_applicable(cores, hw)) throw std::invalid_argument("device_ring_plan: needs whole chips of a megacore slice");
  const uint32_t n = uint32_t(cores.size()), c = hw.chip.cores;
  CollectivePlan plan;
  plan.kind = CollectiveKind::kAllReduce;
  plan.algorithm = CollectiveAlgorithm::kRing;
  plan.cores = n;
  plan.lanes = 2;
  plan.chunks = n;
  plan.chunk_bytes = std::max<uint64_t>(1, (bytes + 2ull * n - 1) / (2ull * n));  // bytes / 2n, rounded up
  plan.owner.assign(plan.lanes, std::vector<uint32_t>(n, 0));
  plan.device = device_of(cores);

  // Phase 1: the cores of each chip, by core index. Phase 2: for each core index, its cores on
  // every chip in the order `cores` lists the chips.
  std::vector<std::vector<uint32_t>> chip_groups, index_groups(c);
  std::map<uint32_t, size_t> group_of_chip;
  for (uint32_t i = 0; i < n; ++i) {
    auto [it, added] = group_of_chip.emplace(cores[i].chip, chip_groups.size());
    if (added) chip_groups.emplace_back(c, 0);
    chip_groups[it->second][cores[i].core] = i;
  }
  for (const auto& g : chip_groups)
    for (uint32_t j = 0; j < c; ++j) index_groups[j].push_back(g[j]);

  std::vector<std::vector<PlanStep>> lanes(plan.lanes);
  for (uint32_t lane = 0; lane < plan.lanes; ++lane) {
    const int dir = lane == 0 ? +1 : -1;
    RingPhase chip;
    chip.groups = chip_groups;
    chip.start.assign(n, 0);
    chip.span = n;
    RingPhase across;
    across.groups = index_groups;
    across.start = append_ring_reduce_scatter(lanes[lane], plan, chip, lane, dir);
    across.span = n / c;
    const std::vector<uint32_t> owned = append_ring_reduce_scatter(lanes[lane], plan, across, lane, dir);
    for (uint32_t i = 0; i < n; ++i) plan.owner[lane][owned[i]] = i;
    append_ring_all_gather(lanes[lane], plan, across, lane, dir);
  }
  interleave_lanes(plan, lanes);
  return plan;
}

}  // namespace tpusim::compiler
