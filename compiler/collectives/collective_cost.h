// Closed-form costs of the collectives (docs/collectives.md derives them), used to choose the
// algorithm per tensor and, by the fidelity tests, as the bound simulated times are checked
// against. All in core cycles; B = bytes, n = cores, c = cores per chip.
//
// Time = latency + bandwidth, where
//   latency   = steps x alpha: steps in sequence (ring: n-1 per phase; dims: sum over phases of
//               m-1), alpha = one piece's trip (transfer setup + HBM read latency + path latency
//               of the step's farthest hop) plus, in a reduce-scatter step, the reduction (two
//               DMA loads and a store in sequence: 2 x DMA fixed cost + VPU latency);
//   bandwidth = the busiest resource: max over ICI link directions of their bytes / link rate,
//               the chip's NoC bytes / NoC rate, and each core's HBM bytes / its HBM share (a
//               reduced byte costs 5 HBM bytes: the send's read, the receive's write, two loads
//               and a store; a copied byte 2).
// Ring (2 lanes, one ICI link or the NoC per edge): every core sends (n-1)/n x B per phase, half
// per direction, so each ring edge carries (n-1)/(2n) x B each way.
// Dims (per phase of m members holding D bytes per core): each core sends (m-1)/m x D, half each
// way; the c cores of a chip share its ports; a mesh dimension's folded ring (or a 2-member one)
// puts both directions on each link direction (x 2).
#pragma once
#include <cstdint>

#include "compiler/collectives/collective_plan.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

struct CollectiveCost {
  uint32_t steps = 0;
  double latency_cycles = 0;
  double link_cycles = 0, noc_cycles = 0, hbm_cycles = 0;
  double bandwidth_cycles() const;
  double total_cycles() const { return latency_cycles + bandwidth_cycles(); }
};

// `cores` cores of `hw` (all of them for dims; a ring of the first `cores` of ring_order otherwise).
CollectiveCost collective_cost(CollectiveKind kind, CollectiveAlgorithm algorithm, uint64_t bytes, const HwConfig& hw,
                               uint32_t cores);

}  // namespace tpusim::compiler
