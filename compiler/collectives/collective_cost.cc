#include "compiler/collectives/collective_cost.h"

#include <algorithm>

#include "compiler/collectives/collectives.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/ici_timing.h"

namespace tpusim::compiler {

double CollectiveCost::bandwidth_cycles() const { return std::max({link_cycles, noc_cycles, hbm_cycles}); }

namespace {

// One piece's trip over `hops` ICI hops (0: the NoC), plus the reduction when `reduce`.
double alpha(const HwConfig& hw, const ResolvedHw& rhw, uint32_t hops, bool reduce) {
  double a = double(rhw.dma_fixed_cycles);
  a += hops == 0 ? double(rhw.noc_latency_cycles) : double(hops * rhw.ici_hop_cycles);
  if (reduce) a += 2.0 * double(rhw.dma_fixed_cycles) + double(hw.chip.core.vpu.pipeline_latency_cycles);
  return a;
}

}  // namespace

CollectiveCost collective_cost(CollectiveKind kind, CollectiveAlgorithm algorithm, uint64_t bytes, const HwConfig& hw,
                               uint32_t n) {
  CollectiveCost cost;
  if (n < 2) return cost;
  const double B = double(bytes);
  const ResolvedHw rhw = resolve_hw(hw);
  const double link = rhw.ici_link_bytes_per_cycle, noc = rhw.noc_bytes_per_cycle, hbm = rhw.hbm_core_bytes_per_cycle;
  const uint32_t c = std::max<uint32_t>(hw.chip.cores, 1);
  const bool rs = kind != CollectiveKind::kAllGather && kind != CollectiveKind::kAllToAll;
  const bool ag = kind != CollectiveKind::kReduceScatter && kind != CollectiveKind::kAllToAll;
  double hbm_bytes = 0;  // per core
  if (kind == CollectiveKind::kAllToAll) {
    // Pairwise exchange: n-1 steps of B/n; a step's messages cross the bisection: on a line of k
    // chips k/2 of them each way through the middle link; modelled as the farthest peer's hops.
    cost.steps = n - 1;
    const uint32_t chips = std::max<uint32_t>(1, n / c);
    cost.latency_cycles = cost.steps * alpha(hw, rhw, chips > 1 ? 1 : 0, false);
    cost.link_cycles = chips > 1 ? (n - 1.0) / n * B / link : 0;
    cost.noc_cycles = c > 1 ? (c - 1.0) / n * B * c / noc : 0;
    cost.hbm_cycles = 2.0 * (n - 1.0) / n * B / hbm;
    return cost;
  }
  if (algorithm != CollectiveAlgorithm::kDimensionByDimension) {
    // Ring: per phase n-1 steps; each edge carries (n-1)/(2n) B each way; on a chip the NoC
    // carries the edge between its cores both ways.
    const uint32_t phases = uint32_t(rs) + uint32_t(ag);
    cost.steps = phases * (n - 1);
    const bool multi_chip = n > c;
    if (rs) cost.latency_cycles += (n - 1) * alpha(hw, rhw, multi_chip ? 1 : 0, true);
    if (ag) cost.latency_cycles += (n - 1) * alpha(hw, rhw, multi_chip ? 1 : 0, false);
    const double edge = phases * (n - 1.0) / (2.0 * n) * B;
    cost.link_cycles = multi_chip ? edge / link : 0;
    cost.noc_cycles = c > 1 ? 2.0 * edge * (c - 1) / noc : 0;
    hbm_bytes = (rs ? 5.0 : 0.0) * (n - 1.0) / n * B + (ag ? 2.0 : 0.0) * (n - 1.0) / n * B;
    cost.hbm_cycles = hbm_bytes / hbm;
    return cost;
  }
  // Dimension by dimension: R rotations of the long dimensions, each B/R.
  const TopologyParams& t = hw.slice.topology;
  std::vector<uint32_t> L;
  for (uint32_t d = 0; d < t.dims.size(); ++d)
    if (t.dims[d] > 1) L.push_back(d);
  const uint32_t R = uint32_t(L.size());
  const uint32_t phases = uint32_t(rs) + uint32_t(ag);
  std::vector<double> dim_bytes(t.dims.size(), 0);  // per link direction
  double noc_bytes = 0;
  for (uint32_t r = 0; r < R; ++r) {
    double D = B / R;  // per core, entering the next phase
    if (c > 1) {
      noc_bytes += phases * c * (c - 1.0) / c * D;  // every core sends (c-1)/c D over the chip's NoC
      D /= c;
    }
    for (uint32_t k = 0; k < R; ++k) {
      const uint32_t d = L[(r + k) % R], m = t.dims[d];
      const double fold = (m == 2 || !ici_ring(t, d)) ? 2.0 : 1.0;
      dim_bytes[d] += phases * fold * c * (m - 1.0) / m * D / 2.0;
      D /= m;
    }
  }
  if (c > 1) {
    cost.steps += phases * (c - 1);
    if (rs) cost.latency_cycles += (c - 1) * alpha(hw, rhw, 0, true);
    if (ag) cost.latency_cycles += (c - 1) * alpha(hw, rhw, 0, false);
  }
  for (uint32_t d : L) {
    const uint32_t m = t.dims[d], hops = ici_ring(t, d) || m <= 2 ? 1 : 2;
    cost.steps += phases * (m - 1);
    if (rs) cost.latency_cycles += (m - 1) * alpha(hw, rhw, hops, true);
    if (ag) cost.latency_cycles += (m - 1) * alpha(hw, rhw, hops, false);
    cost.link_cycles = std::max(cost.link_cycles, dim_bytes[d] / link);
  }
  cost.noc_cycles = noc_bytes / noc;
  hbm_bytes = (rs ? 5.0 : 0.0) * (n - 1.0) / n * B + (ag ? 2.0 : 0.0) * (n - 1.0) / n * B;
  cost.hbm_cycles = hbm_bytes / hbm;
  return cost;
}

}  // namespace tpusim::compiler
