// Plan generators of the collective algorithms (see collectives.h for the layout). Internal to
// compiler/: callers use plan_collective() / emit_collective().
#pragma once
#include <cstdint>
#include <vector>

#include "compiler/collectives/collective_plan.h"
#include "compiler/collectives/collectives.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

// One phase of ring steps: `groups` of equal size m, each listed in ring order (consecutive
// members exchange); every core index belongs to exactly one group. Each core works on the
// chunk range [start[i], start[i] + span) of the lane, cut into m super-chunks of span / m.
struct RingPhase {
  std::vector<std::vector<uint32_t>> groups;
  std::vector<uint32_t> start;  // per core index
  uint32_t span = 0;
};

// Appends the m-1 reduce-scatter steps of `phase` on `lane` in direction `dir` (+1: to the next
// member, -1: to the previous one) and returns each core's owned range start afterwards (span/m).
std::vector<uint32_t> append_ring_reduce_scatter(std::vector<PlanStep>& out, CollectivePlan& plan, const RingPhase& phase,
                                                 uint32_t lane, int dir);
// Appends the m-1 all-gather steps that undo append_ring_reduce_scatter(phase, lane, dir): each
// core starts with its owned super-chunk and ends with the whole range.
void append_ring_all_gather(std::vector<PlanStep>& out, CollectivePlan& plan, const RingPhase& phase, uint32_t lane,
                            int dir);
// Merges per-lane step lists round-robin (step t of every lane, then step t+1), so lanes progress
// together in stream order.
void interleave_lanes(CollectivePlan& plan, std::vector<std::vector<PlanStep>>& per_lane);

// The 1-D bidirectional ring over cores 0..n-1 in index order (lane 0: to index+1, lane 1: to
// index-1; each lane half of the bytes, n chunks per lane).
CollectivePlan ring_plan(CollectiveKind kind, uint32_t n, uint64_t bytes);

// Dimension by dimension (collectives_dims.cc). Applicable when `cores` are all cores of the
// slice and the slice has at least two dimensions longer than 1 (else it is the ring).
// `per_device` (a megacore all-reduce, CollectiveOptions::per_device): the chip phase's all-gather
// is left out, so each core ends with its 1/cores share reduced over the slice.
bool dims_applicable(const std::vector<CoreId>& cores, const HwConfig& hw);
CollectivePlan dims_plan(CollectiveKind kind, const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes,
                         bool per_device = false);

// Megacore all-reduces (collectives_device.cc): applicable when hw.chip.megacore and `cores` are
// whole chips (every core of each chip in it, the same core indices on every chip). The ring
// form: reduce-scatter over the cores of each chip (on-chip network), then a bidirectional ring
// all-reduce of each core's share along the chips in the order `cores` lists them (one ring per
// core index, consecutive chips one ICI hop apart in ring_order()); no on-chip all-gather.
bool device_plan_applicable(const std::vector<CoreId>& cores, const HwConfig& hw);
CollectivePlan device_ring_plan(const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes);
// The device (chip) of each core index: the position of its chip among `cores`' chips.
std::vector<uint32_t> device_of(const std::vector<CoreId>& cores);

// Pairwise exchange all-to-all (collectives_all_to_all.cc).
CollectivePlan all_to_all_plan(uint32_t n, uint64_t bytes);

}  // namespace tpusim::compiler
