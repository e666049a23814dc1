// The one SPMD step compiler. Every parallel step — a data-parallel or FSDP training step of a
// model (compiler/step/data_parallel.h, fsdp.h), or a module imported from XLA HLO — is one
// replica's program: a graph whose tensors are already cut to the replica's share and whose
// collectives are explicit nodes (models::OpKind::kCollective), lowered here for every core that
// runs it (replica i on cores[i]). One program per core is built: core 0's whole, the others only
// their collective sections (compiler/collectives/replicas.h).
//
// The schedule is the graph's (models::Graph::scheduled: kernels in node order; else the fusion
// plan's topological order). Collectives:
//   * synchronous: every core waits for it; the next kernel waits for it;
//   * asynchronous (CollectiveAttrs::async): it runs on the cores' background queues from where it
//     is scheduled, after the previous asynchronous one (they share the background queues and the
//     staging VMEM: one at a time), and is awaited at its done (OpKind::kCollectiveDone: the next
//     kernel waits for it) or, without one, by the first kernel that reads its result. While one
//     is under way the kernels are compiled with its staging VMEM (staging_bytes) reserved.
//
// Host copies (models::OpKind::kHostOffload, kHostReload): one transfer each on the core's
// transfer queue (PCIe), issued where scheduled, not waited for by the next kernel; an offload is
// awaited at its done (its operand's HBM buffer is held until then), a reload by its first reader.
//
// Host copies (models::OpKind::kHostOffload, kHostReload): one transfer each on the core's
// transfer queue (PCIe), issued where scheduled, not waited for by the next kernel; an offload is
// awaited at its done (its operand's HBM buffer is held until then), a reload by its first reader.
//
// Memory (compiler/plan/memory_plan.h): one plan over the kernel sequence. A done is its collective's
// buffer; an all-reduce writes over its operand when nothing else reads that (XLA shares an
// element-wise op's operand buffer); collective operands and results stay in HBM (transfers read
// and write HBM).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "compiler/collectives/graph_collectives.h"
#include "compiler/compile_cache.h"
#include "compiler/plan/memory_plan.h"
#include "compiler/plan/rematerialize.h"
#include "models/graph.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

struct SpmdStep {
  models::Graph graph;            // one replica's program
  std::vector<CoreId> cores;      // replica i runs on cores[i]; at least one, each once
  std::map<int, int> donated;     // output node -> the parameter node whose buffer it overwrites
  // The next batch's inputs (the graph's kInput parameters) cross PCIe while the step computes
  // (torch_xla's parallel loader, tf.data prefetch): one host load outside the kernels.
  bool prefetch_next_batch = false;
  uint64_t piece_bytes = 1ull << 20;  // collectives' pipelining granularity
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;  // kAuto: chosen per tensor
  // Megacore data parallelism (chip.megacore): the chip's cores are one device running one replica
  // of the model on halves of its batch. Its all-reduces are device all-reduces (the result once per
  // chip: CollectiveOptions::per_device); parameters, optimizer state, the reduced gradients and
  // what the kernels after the all-reduces write are stored once in the chip's HBM; each core runs
  // those kernels (the optimizer update) on 1/cores of every tensor. Off: each core is a device.
  bool device_update = false;
  // Cores sharing a chip's CMEM (each places its own buffers in its share); 0: the most of `cores`
  // on one chip.
  uint32_t cmem_sharers = 0;
  // Megacore device_update: the nodes whose kernels each core of the device runs on its 1/cores
  // share of every tensor (the optimizer update after the gradient all-reduces).
  std::vector<int> device_split;
  std::vector<int> gradients;            // nodes holding gradients (the memory breakdown's categories)
  std::vector<int> gathered_parameters;  // nodes holding all-gathered parameters (FSDP)
  CacheKey key;  // the step's compilation cache key, as its builder computes it
  // When the memory plan exceeds the device's HBM, recompute values live across the peak as XLA's
  // rematerialization pass does (compiler/plan/rematerialize.h) before giving up.
  bool rematerialize = true;
};

struct CompiledStep {
  isa::Program program;  // one core stream per replica, cores[0] first
  MemoryPlan memory;     // per device: a core, or a megacore chip
  CacheKey key;          // SpmdStep::key
  uint64_t hlo_ops = 0;  // nodes of the step graph
  uint32_t kernels = 0;  // kernels per core, collectives included (dones are not kernels)
  std::vector<GraphCollective> collectives;  // in program order
  uint64_t infeed_bytes = 0;  // per core and step: the next batch's inputs it prefetches (0: none)
  // Per core and step: the collectives' bytes by kind (graph_collective_bytes; FSDP's all-gathers:
  // the gathered bytes, its reduce-scatters: the full gradients).
  uint64_t allreduce_bytes = 0, allgather_bytes = 0, reducescatter_bytes = 0;
  // Per core and step: activations copied to host memory and back (models::OpKind::kHostOffload,
  // kHostReload) over PCIe.
  uint64_t host_offload_bytes = 0, host_reload_bytes = 0;
  // What the rematerialization pass recomputed to fit HBM (SpmdStep::rematerialize; zero: nothing).
  Rematerialization remat;
  // False when the memory plan's peak exceeds the device's HBM: such a program cannot run (the
  // runtime's allocation fails), so it is not lowered and `program` has no instructions; the rest
  // (memory, key, ops, kernels, collectives' bytes) is filled in.
  bool lowered = true;
};

// Throws std::invalid_argument when `step.cores` is empty or names a core twice, or when a
// collective is for a replica count other than cores.size(); SimError when a kernel cannot be tiled.
CompiledStep compile_spmd_step(const SpmdStep& step, const HwConfig& hw, const std::string& name);

// The memory plan compile_spmd_step makes (per device, with its CMEM placement), without lowering.
MemoryPlan step_memory_plan(const SpmdStep& step, const HwConfig& hw);

// A graph that is already one replica's program (an imported module) on `cores`, with its donated
// buffers (an output node -> the parameter it overwrites), the SpmdStep defaults otherwise.
CompiledStep compile_spmd_graph(models::Graph g, const HwConfig& hw, const std::string& name, std::vector<CoreId> cores,
                                std::map<int, int> donated = {});

}  // namespace tpusim::compiler
