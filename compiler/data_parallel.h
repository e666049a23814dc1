// Data-parallel (SPMD) training steps: the same step program on every core of the slice, with the
// gradients all-reduced between the backward pass and the optimizer update — what
// torch_xla's optimizer step (xm.optimizer_step / Accelerate's optimizer.step()) and TPUStrategy do
// on a v2/v3 slice where every TensorCore is a replica.
//
// Megacore (TPU v4, chip.megacore): a replica is a chip, whose TensorCores XLA runs as one device.
// The step is still compiled per core, for half of the device's batch each (the caller builds the
// graph at that batch: workloads/loop/step_cache.cc); the cores run it SPMD like replicas, but
//   * the gradient all-reduce is the device all-reduce (collectives_device.cc): the two cores'
//     gradients are reduce-scattered over the on-chip network, then each core all-reduces its
//     half across the chips (the cores of the same index on every chip form a ring); no on-chip
//     all-gather, as the chip's cores share its HBM;
//   * each core updates its half of every parameter (and its optimizer state): the optimizer
//     kernels run on 1/cores of each tensor;
//   * the memory plan is the chip's (plan_device_memory): parameters, optimizer state and
//     gradients once, activations, inputs and temporaries once per core.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/collective_plan.h"
#include "compiler/compile_cache.h"
#include "compiler/memory_plan.h"
#include "models/graph.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

struct DataParallelStep {
  const models::Graph* graph = nullptr;
  std::vector<int> grads;        // gradients to all-reduce; empty: no all-reduce (evaluation, or a
                                 // gradient-accumulation micro-step that does not sync)
  std::map<int, int> donated;    // output node -> the input parameter whose buffer it overwrites
  bool prefetch_next_batch = true;  // host->HBM transfer of the next step's inputs overlaps this step
  uint64_t allreduce_piece_bytes = 1ull << 20;
  // XLA's all-reduce combiner threshold: gradients are all-reduced in combined tensors of at most
  // this size. 30 MiB is XLA's default combine threshold (xla_gpu_all_reduce_combine_threshold_bytes);
  // the TPU backend's is not public (assumption: the same).
  uint64_t allreduce_bucket_bytes = 30ull << 20;
  CollectiveAlgorithm allreduce_algorithm = CollectiveAlgorithm::kAuto;  // kAuto: chosen per tensor
  // XLA's asynchronous collectives with its latency-hiding scheduler: each combined all-reduce
  // starts as soon as the backward pass has produced its gradients and runs on the cores'
  // background queues while the rest of the backward pass computes (which then has
  // staging_bytes(allreduce_piece_bytes) less VMEM). Off: all of them after the backward pass.
  bool overlap_allreduce = true;
};

struct CombinedAllReduce {
  uint64_t bytes = 0;  // per core
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  std::string after_kernel;  // the kernel whose end starts it (the backward pass's last with overlap off)
  bool overlapped = false;   // runs in the background while later kernels compute
};

struct CompiledStep {
  isa::Program program;  // one core stream per replica (ring order), core 0 of chip 0 first
  MemoryPlan memory;     // per device: a core (every replica holds the same buffers), or a megacore chip
  CacheKey key;          // XLA-style compilation cache key of the step graph
  uint64_t hlo_ops = 0;  // nodes of the step graph
  uint32_t kernels = 0;  // fused kernels per core
  uint64_t allreduce_bytes = 0;
  std::vector<CombinedAllReduce> allreduces;  // the combined gradient all-reduces, in order
  uint64_t allgather_bytes = 0;      // FSDP (compiler/fsdp.h): gathered bytes per core and step
  uint64_t reducescatter_bytes = 0;  // FSDP: reduce-scattered (full gradient) bytes per core and step
  uint64_t infeed_bytes = 0;  // per core and step
  // False when the memory plan's peak exceeds the device's HBM: such a program cannot run (the
  // runtime's allocation fails, which the training loop reports from `memory`), so it is not
  // lowered and `program` is empty; the rest (memory, key, ops, kernels) is filled in.
  bool lowered = true;
};

// XLA's all-reduce combiner as the step applies it: `grads` in the order their kernels produce them
// (`producer`: each node's kernel position; ties by node id), combined into buckets of at most
// `bucket_bytes` of stored bytes (a larger gradient is a bucket alone).
std::vector<std::vector<int>> gradient_buckets(const models::Graph& g, std::vector<int> grads,
                                              const std::vector<size_t>& producer, uint64_t bucket_bytes);

// The step as one graph with its gradient all-reduces in it, as compile_data_parallel_step runs
// them over `replicas` cores: graph collectives (models::OpKind::kCollective), one combined
// all-reduce per bucket of gradient_buckets (CollectiveAttrs::combine; asynchronous when
// overlap_allreduce), which the optimizer update reads instead of the gradients. Its nodes: those
// that read no gradient, the all-reduces bucket by bucket, then the rest. replicas <= 1: the graph
// reordered so, without collectives. (tpusim export-hlo writes it.)
models::Graph graph_with_allreduces(const DataParallelStep& step, uint32_t replicas);

// The step's XLA-style compilation cache key (graph, shapes, donation), without lowering it.
CacheKey step_cache_key(const DataParallelStep& step);

// Compiles the step for every core of `hw`'s slice (`replicas` = 0: all of them; 1: one core, no
// collective). Throws SimError when a kernel cannot be tiled.
CompiledStep compile_data_parallel_step(const DataParallelStep& step, const HwConfig& hw, const std::string& name,
                                        uint32_t replicas = 0);

}  // namespace tpusim::compiler
