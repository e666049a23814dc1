// Automatic rematerialization: what XLA's HLO rematerialization pass does when a scheduled
// program's buffers exceed the device's memory. Instead of failing, the compiler recomputes values
// that are live across the peak: a value produced early (a forward activation) and read again late
// (by the backward pass) gets a clone of its kernel just before that late reader; the original's
// buffer then dies after its last early reader, the clone's lives only from the late reader on.
//
// Rules (after XLA's pass: a greedy walk over the memory peaks, one value at a time):
//  * While the plan's peak exceeds the limit, at the peak kernel p: every value live across p (its
//    kernel before p, a reader after it, none at p) whose kernel can be recomputed is a candidate.
//    Recomputable: a compute kernel (element-wise, reduction, matmul) with one output that is not a
//    program output, reading only parameters, inputs and other kernels' results (no collective's
//    or host copy's, none itself recomputed); its readers after p compute kernels.
//  * Its saving at p: its bytes, less those of its kernel's operands that are dead at p (the clone
//    keeps them alive until it runs).
//  * Cheapest first: the candidate with the least recomputation time per byte saved (the kernel's
//    roofline: its matmul flops at the MXUs' peak or its HBM bytes at the HBM peak, whichever is
//    longer), ties to the larger saving, then graph order. XLA's pass ranks its candidates by the
//    inverse of the memory they free (RematerializationCost in hlo_rematerialization.cc); weighing
//    the recomputation's time as well makes a cheap element-wise value (a dropout's output) go
//    before a matmul's of the same size.
//  * Each value once; the clone and the operands it keeps alive are not candidates again.
//  * It stops when the peak fits or no candidate at the peak saves anything: the program is then
//    out of memory, as XLA reports it after trying.
// The rewritten graph is scheduled (models::Graph::scheduled): the kernels in the old order, each
// clone (its root kept a kernel of its own, models::Node::materialize) right before its late reader.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "compiler/plan/fusion.h"
#include "compiler/plan/memory_plan.h"
#include "models/graph.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim::compiler {

// What the pass did to a program (all zero: nothing).
struct Rematerialization {
  uint32_t values = 0;            // values recomputed (a clone kernel each)
  uint64_t bytes = 0;             // their buffers' bytes (per device)
  uint64_t flops = 0;             // the clones' matmul flops (per core): hardware, not model, flops
  uint64_t peak_bytes_before = 0; // the program's peak before the pass (per device)
};

struct RematRewrite {
  models::Graph graph;        // the program with its clones, scheduled
  std::vector<int> new_id;    // node of the old graph -> its id in `graph`
  Rematerialization stats;    // this rewrite's (peak_bytes_before: the plan it was given)
  uint64_t planned_peak_bytes = 0;  // the pass's estimate of the new peak (per device)
};

// `mp`: the memory plan of `g` under `plan` (per device, buffer copies counted). `limit`: the
// device's bytes. `fixed`: nodes whose kernels must not be recomputed (a megacore's split update).
// nullopt when no candidate saves anything at the first peak.
std::optional<RematRewrite> rematerialize(const models::Graph& g, const FusionPlan& plan, const MemoryPlan& mp,
                                          uint64_t limit, const ResolvedHw& r, const std::set<int>& fixed = {});

}  // namespace tpusim::compiler
