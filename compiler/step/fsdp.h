// FSDP as a sharding of the step (torch_xla's XlaFullyShardedDataParallel, flatten_parameters): every
// core holds 1/n of each wrapped unit's flat parameter, gradients and optimizer state. fsdp_step()
// writes the step (the forward and backward of compiler/step/fsdp_graphs.h, then the update of the
// local slices) as one replica's SPMD program (compiler/step/spmd_step.h), in the order of the FSDP
// schedule (compiler/step/fsdp_schedule.h: schedule_fsdp_step):
//
//   * before a unit's first use in the forward, and again in the backward (once for a whole-step
//     unit), a flat all-gather of its shard whose parts are the unit's parameters
//     (models::CollectiveAttrs::flat: one transfer of n x the shard; the parameters are views of
//     the one gathered buffer, freed after their last reader of the phase);
//   * once the backward has produced a unit's gradients, a flat reduce-scatter of them into the
//     unit's gradient shard, which the update reads;
//   * with `overlap` (XLA's latency-hiding scheduler) the collectives are asynchronous, one after
//     another on the background queues: each all-gather issued one gather ahead and awaited (its
//     all-gather-done) before the first kernel that reads it; each reduce-scatter awaited where the
//     next collective starts or the update begins (its gradients live until then). Without, they
//     run between the kernels.
#pragma once
#include "compiler/step/fsdp_graphs.h"
#include "compiler/step/spmd_step.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

// The step for `f.step.cores` cores of `hw`'s ring (the first ones of ring_order(hw)). Throws
// std::invalid_argument when the slices were cut for more cores than the slice has.
SpmdStep fsdp_step(const FsdpGraphs& f, const HwConfig& hw);

}  // namespace tpusim::compiler
