// Peak-HBM planning of an FSDP step (compiler/fsdp.h), over its schedule of kernels and collectives.
//
//   persistent (whole step):  the parameter slices and optimizer-state slices, (P + S) / n
//   gathered parameters:      a unit's n*shard bytes from its all-gather to its last use in the
//                             phase (forward, then again in the backward)
//   gradients:                full gradients from their kernel to the unit's reduce-scatter; the
//                             reduce-scattered slice (G / n in total) from there to its update
//   activations:              as plan_memory: from the producing kernel to the last reader
//
// So the per-core peak is, in closed form (docs/training.md, "FSDP"),
//   (P + S)/n + activations the backward reads + one encoder layer's gathered parameters
//   (+ the backward's transients: activation gradients in flight, a unit's full gradients),
// where with gradient checkpointing the saved activations are only the layers' inputs plus one
// layer's recomputed activations. tests/compiler/fsdp_test.cc checks the planner against it.
#pragma once
#include "compiler/fsdp.h"
#include "compiler/memory_plan.h"

namespace tpusim::compiler {

MemoryPlan plan_fsdp_memory(const FsdpStep& step, const FusionPlan& plan, const FusionPlan& optimizer_plan,
                            const FsdpSchedule& schedule);

}  // namespace tpusim::compiler
