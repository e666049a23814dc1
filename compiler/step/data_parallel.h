// Data parallelism as a sharding of the step graph (mesh {data: n}): the same step on every core of
// the slice, parameters and optimizer state whole on every replica, each replica's gradients
// computed from its share of the batch: partial sums over the data axis
// (shard_data_parallel annotates them; models/sharding.h). The partitioner (compiler/step/partition.h)
// finds where the update reads them whole: an all-reduce each — what torch_xla's optimizer step
// (xm.optimizer_step, Accelerate's optimizer.step()) and TPUStrategy do on a slice where every
// TensorCore is a replica. data_parallel_step() writes the step as one replica's SPMD program
// (compiler/step/spmd_step.h) with those all-reduces scheduled as XLA does:
//
//   * XLA's all-reduce combiner: the gradients, in the order the backward pass produces them, are
//     combined into all-reduces of at most `allreduce_bucket_bytes` (a larger gradient is one alone);
//   * with `overlap_allreduce` (XLA's asynchronous collectives under its latency-hiding scheduler)
//     each combined all-reduce starts as soon as the backward pass has produced its gradients
//     (all-reduce-start after that kernel), runs in the background, and the optimizer update awaits
//     every one (their all-reduce-dones before it); without, all of them run after the backward pass,
//     one after another;
//   * the graph is scheduled (models::Graph::scheduled): the backward pass's kernels in the order the
//     fusion plan of the step graph runs them, the all-reduces where they start, the dones, then the
//     update's kernels.
//
// Megacore (TPU v4, chip.megacore): a replica is a chip, whose TensorCores XLA runs as one device.
// The step is still compiled per core, for half of the device's batch each (the caller builds the
// graph at that batch: workloads/loop/native_steps.cc); the cores run it SPMD like replicas, but the
// all-reduces are device all-reduces (collectives_device.cc), each core updates its half of every
// parameter, and parameters, optimizer state and gradients are stored once per chip
// (SpmdStep::device_update).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "compiler/collectives/collective_plan.h"
#include "compiler/compile_cache.h"
#include "compiler/plan/fusion.h"
#include "compiler/step/spmd_step.h"
#include "models/graph.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

struct DataParallelStep {
  const models::Graph* graph = nullptr;  // forward + backward + update of one replica
  const FusionPlan* fusions = nullptr;   // graph's fusion plan when the caller planned it already (else planned here)
  std::map<int, int> donated;    // output node -> the input parameter whose buffer it overwrites
  bool prefetch_next_batch = true;  // host->HBM transfer of the next step's inputs overlaps this step
  uint64_t allreduce_piece_bytes = 1ull << 20;
  // XLA's all-reduce combiner threshold. 30 MiB is XLA's default combine threshold
  // (xla_gpu_all_reduce_combine_threshold_bytes); the TPU backend's is not public (assumption: the same).
  uint64_t allreduce_bucket_bytes = 30ull << 20;
  CollectiveAlgorithm allreduce_algorithm = CollectiveAlgorithm::kAuto;  // kAuto: chosen per tensor
  // Asynchronous all-reduces overlapping the rest of the backward pass (above). Off: all of them
  // after the backward pass.
  bool overlap_allreduce = true;
  // The replicas' mesh: data x tensor (tensor parallelism: its all-reduces already in the graph,
  // partition.h's with_collectives; the gradients all-reduced along data). Unset (one device): {data:
  // the replicas}.
  models::Mesh mesh;
};

// The data-parallel sharding of a training step's graph: each of `grads` (the gradients the update
// reads) a partial sum over the data axis, beside any split it has (tensor parallelism). Evaluation and a gradient-accumulation micro-step that
// does not sync annotate none: nothing is all-reduced.
void shard_data_parallel(models::Graph& g, const std::vector<int>& grads);

// XLA's all-reduce combiner as the step applies it: `grads` in the order their kernels produce them
// (`producer`: each node's kernel position; ties by node id), combined into buckets of at most
// `bucket_bytes` of stored bytes (a larger gradient is a bucket alone).
std::vector<std::vector<int>> gradient_buckets(const models::Graph& g, std::vector<int> grads,
                                              const std::vector<size_t>& producer, uint64_t bucket_bytes);

// The step's XLA-style compilation cache key (graph, shapes, donation), without lowering it.
CacheKey step_cache_key(const DataParallelStep& step);

// The step as one replica's SPMD program over the first `replicas` cores of the slice in ring
// order (0: all of them; 1: one core, no all-reduce). Its CMEM share is the whole slice's (a
// 1-replica compile places what each replica does).
SpmdStep data_parallel_step(const DataParallelStep& step, const HwConfig& hw, uint32_t replicas = 0);
// The same, moving the nodes out of `graph` (the step's own graph, *step.graph, which the caller
// discards afterwards) instead of copying them.
SpmdStep data_parallel_step(const DataParallelStep& step, models::Graph&& graph, const HwConfig& hw, uint32_t replicas = 0);

}  // namespace tpusim::compiler
