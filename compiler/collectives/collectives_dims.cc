// Dimension by dimension: the cores of a chip first combine over the on-chip network (a ring of
// the chip's cores), then each core runs a bidirectional ring along the first ICI dimension with
// the cores of the same index in its line, then along the next dimension on the 1/m-sized result,
// and so on; the all-gather retraces the phases in reverse. With D dimensions longer than 1 the
// tensor is split into D parts that rotate the dimension order (XY and YX on a 2-D slice, XYZ,
// YZX, ZXY on a 3-D one), each in both ring directions (2D lanes): every dimension carries the
// bulk phase of one part, so all ICI ports of a chip work at once instead of only the two of a
// 1-D ring.
//
// Rings along a line: on a torus dimension the ring is the line closed by its wrap link (every
// step one hop). On a mesh dimension without wraparound the ring folds back: positions visited
// 0, 2, 4, ..., then the odd ones downwards (..., 5, 3, 1), so every ring edge is one or two
// hops and every link direction of the line carries one edge of each ring direction: the two
// lanes of a dimension share its links (half the bandwidth of a torus dimension), at two hops'
// latency per step.
//
// Chunk ids of a lane are mixed-radix numbers, most significant digit the phase that runs first
// (core, then the dimensions in the lane's order), so every super-chunk of every phase is a
// contiguous range of ids.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "compiler/collectives/collective_algorithms.h"
#include "sim/ici/ici_timing.h"

namespace tpusim::compiler {

namespace {

std::vector<uint32_t> long_dims(const HwConfig& hw) {
  std::vector<uint32_t> out;
  const auto& d = hw.slice.topology.dims;
  for (uint32_t i = 0; i < d.size(); ++i)
    if (d[i] > 1) out.push_back(i);
  return out;
}

// Ring position of coordinate x on a line of m chips (see the top of the file).
uint32_t ring_position(const HwConfig& hw, uint32_t dim, uint32_t x) {
  const uint32_t m = hw.slice.topology.dims[dim];
  if (ici_ring(hw.slice.topology, dim)) return x;
  if (x % 2 == 0) return x / 2;
  const uint32_t evens = (m + 1) / 2, top_odd = m % 2 ? m - 2 : m - 1;
  return evens + (top_odd - x) / 2;
}

}  // namespace

bool dims_applicable(const std::vector<CoreId>& cores, const HwConfig& hw) {
  if (long_dims(hw).size() < 2) return false;
  const uint32_t c = hw.chip.cores, chips = hw.slice.chips();
  if (cores.size() != size_t(c) * chips) return false;
  std::vector<bool> seen(cores.size(), false);
  for (const CoreId& id : cores) {
    if (id.chip >= chips || id.core >= c || seen[size_t(id.chip) * c + id.core]) return false;
    seen[size_t(id.chip) * c + id.core] = true;
  }
  return true;
}

CollectivePlan dims_plan(CollectiveKind kind, const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes,
                         bool per_device) {
  if (!dims_applicable(cores, hw)) throw std::invalid_argument("dims_plan: needs every core of a 2-D or 3-D slice");
  const TopologyParams& t = hw.slice.topology;
  const uint32_t n = uint32_t(cores.size()), c = hw.chip.cores;
  const std::vector<uint32_t> L = long_dims(hw);
  const uint32_t R = uint32_t(L.size());
  CollectivePlan plan;
  plan.kind = kind;
  plan.algorithm = CollectiveAlgorithm::kDimensionByDimension;
  plan.cores = n;
  plan.lanes = 2 * R;
  plan.chunks = n;
  plan.chunk_bytes = std::max<uint64_t>(1, (bytes + uint64_t(plan.lanes) * n - 1) / (uint64_t(plan.lanes) * n));
  plan.owner.assign(plan.lanes, std::vector<uint32_t>(n, 0));

  // Groups of a phase: `dim` = -1 for the cores of a chip, else an ICI dimension.
  auto groups_of = [&](int dim) {
    std::map<uint64_t, std::vector<std::pair<uint32_t, uint32_t>>> by_key;  // key -> (position, core index)
    for (uint32_t i = 0; i < n; ++i) {
      ChipCoords xy = chip_coords(t, cores[i].chip);
      uint32_t pos;
      uint64_t key;
      if (dim < 0) {
        pos = cores[i].core;
        key = cores[i].chip;
      } else {
        pos = ring_position(hw, uint32_t(dim), xy[dim]);
        xy[dim] = 0;
        key = uint64_t(chip_at(t, xy)) * c + cores[i].core;
      }
      by_key[key].push_back({pos, i});
    }
    std::vector<std::vector<uint32_t>> groups;
    for (auto& [k, members] : by_key) {
      std::sort(members.begin(), members.end());
      groups.emplace_back();
      for (auto& m : members) groups.back().push_back(m.second);
    }
    return groups;
  };
  std::vector<std::vector<std::vector<uint32_t>>> dim_groups(t.dims.size());
  for (uint32_t d : L) dim_groups[d] = groups_of(int(d));
  const auto chip_groups = groups_of(-1);

  std::vector<std::vector<PlanStep>> lanes(plan.lanes);
  for (uint32_t r = 0; r < R; ++r) {
    for (int dirbit = 0; dirbit < 2; ++dirbit) {
      const uint32_t lane = 2 * r + dirbit;
      const int dir = dirbit == 0 ? +1 : -1;
      std::vector<RingPhase> phases;
      RingPhase ph;
      ph.start.assign(n, 0);
      ph.span = n;
      if (c > 1) {
        ph.groups = chip_groups;
        phases.push_back(ph);
        ph.start = append_ring_reduce_scatter(lanes[lane], plan, phases.back(), lane, dir);
        ph.span /= c;
      }
      for (uint32_t k = 0; k < R; ++k) {
        const uint32_t d = L[(r + k) % R];
        ph.groups = dim_groups[d];
        phases.push_back(ph);
        ph.start = append_ring_reduce_scatter(lanes[lane], plan, phases.back(), lane, dir);
        ph.span /= t.dims[d];
      }
      for (uint32_t i = 0; i < n; ++i) plan.owner[lane][ph.start[i]] = i;
      if (kind == CollectiveKind::kAllGather) lanes[lane].clear();
      if (kind == CollectiveKind::kReduceScatter) continue;
      // A megacore all-reduce stops before the chip phase's all-gather: the chip's cores hold the
      // reduced shares in their shared HBM.
      const size_t skip = per_device && c > 1 ? 1 : 0;
      for (size_t k = phases.size(); k-- > skip;) append_ring_all_gather(lanes[lane], plan, phases[k], lane, dir);
    }
  }
  interleave_lanes(plan, lanes);
  if (per_device && c > 1) plan.device = device_of(cores);
  return plan;
}

}  // namespace tpusim::compiler
