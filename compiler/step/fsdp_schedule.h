// Fully sharded data parallel (FSDP) training steps, as torch_xla's XlaFullyShardedDataParallel
// runs them: every core holds 1/n of each wrapped unit's (flattened) parameters, gradients and
// optimizer state. Per unit and step:
//   * all-gather the unit's parameters before its first forward use (freed after its last one),
//   * all-gather them again before its first backward use (freed after its last one),
//   * reduce-scatter the unit's gradients once its backward has produced them all,
// and the optimizer updates only the local slices. So per step and core the collectives move
// 2 x sum_u n*shard_u parameter bytes through all-gathers and sum_u n*shard_u gradient bytes
// through reduce-scatters (shard_u = the stored bytes of ceil(P_u / n) elements), against one
// all-reduce of every gradient for data parallelism. With gradient checkpointing (models/recompute.h)
// the backward of each encoder layer first reruns its forward, inside the backward all-gather's window.
//
// With `overlap` (XLA's asynchronous collectives under its latency-hiding scheduler) the
// collectives run on the cores' background queues, one after another: each unit's all-gather is
// issued one gather early (the next unit's parameters arrive while this unit computes: prefetch),
// and a reduce-scatter runs while the backward pass goes on; a kernel waits only for the gathers
// of the parameters it reads, the optimizer for the last collective. Without it the collectives
// are serialized with the kernels (XLA runs a core's kernels one at a time), so their time adds
// to the step.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/plan/fusion.h"
#include "compiler/plan/memory_plan.h"
#include "compiler/step/spmd_step.h"
#include "models/graph.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

struct FsdpUnit {
  std::string name;
  std::vector<int> params, grads;  // nodes of FsdpStep::graph (grads[i] of params[i])
  int shard = -1, grad_shard = -1;  // nodes of FsdpStep::optimizer_graph
  uint64_t gathered_bytes = 0;      // n x stored bytes of the shard: what an all-gather yields
  uint64_t grad_bytes = 0;          // n x stored bytes of the gradient shard: a reduce-scatter's input
  // The root unit of a wrapping policy (compiler/step/fsdp_wrap.h): not resharded after the forward
  // pass, so one all-gather serves forward and backward.
  bool whole_step = false;
};

struct FsdpStep {
  const models::Graph* graph = nullptr;  // forward + backward; every gradient is an output
  int last_forward = -1;                 // forward nodes are ids <= last_forward
  std::vector<FsdpUnit> units;           // in forward order
  const models::Graph* optimizer_graph = nullptr;  // the update of the local slices
  std::map<int, int> donated;            // optimizer_graph: output -> the parameter it overwrites
  uint32_t cores = 1;                    // n: the slices were cut for this many cores
  // The replicas' mesh: {fsdp: cores}, or fsdp x tensor (the tensor-parallel all-reduces already in
  // `graph`; the units' gathers and reduce-scatters along fsdp). Unset: {fsdp: cores}.
  models::Mesh mesh;
  bool prefetch_next_batch = true;
  uint64_t piece_bytes = 1ull << 20;     // collectives' pipelining granularity
  bool overlap = true;                   // collectives in the background, gathers prefetched (above)
  uint64_t wrap_key = 0;                 // a wrapping policy's units (fsdp_wrap.h), in the cache key; 0 = the default units
};

// The order a core runs a step in: the forward/backward kernels with the units' collectives
// between them, then the optimizer kernels.
struct FsdpSlot {
  enum Kind { kKernel, kOptimizerKernel, kAllGather, kReduceScatter } kind = kKernel;
  int index = 0;  // kernel index in its fusion plan, or unit index
};
struct FsdpSchedule {
  std::vector<FsdpSlot> slots;
  // Per unit, slot indices: its forward/backward all-gathers, the last slot reading the gathered
  // parameters in each phase, and its reduce-scatter.
  std::vector<int> gather_fwd, last_fwd, gather_bwd, last_bwd, reduce_scatter;
  // Per slot: the all-gather slots a kernel waits for (overlap: the gathers of the parameters it
  // is the first in its phase to read; without overlap every kernel waits for everything before).
  std::vector<std::vector<int>> waits;
  // Per unit: the slot up to which its full gradient lives (its reduce-scatter; with overlap, the
  // next background collective or the first optimizer kernel, which wait for the reduce-scatter).
  std::vector<int> grad_free;
};

// The kernels of an FSDP graph in trace (node id) order: plan_fusions() with its kernels sorted by
// root id, a topological order since node ids are. What torch_xla's optimization barrier around a
// checkpointed layer enforces: a layer's recompute runs at its backward, not as soon as its input
// exists (plan_fusions' depth-first order would hoist it into the forward pass).
FusionPlan plan_fsdp_fusions(const models::Graph& g);

// The step's compilation cache key (both graphs, donation, core count), without lowering it.
CacheKey fsdp_step_cache_key(const FsdpStep& step);

FsdpSchedule schedule_fsdp_step(const FsdpStep& step, const FusionPlan& plan, const FusionPlan& optimizer_plan);

}  // namespace tpusim::compiler
