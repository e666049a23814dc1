// The graph's collectives (models::OpKind::kCollective) as instructions: on one core
// (compile_graph) and across replicas (compile_spmd_step). docs/hlo.md ("Collectives") says what
// is modelled.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "compiler/collectives/replicas.h"
#include "compiler/lower/lowering.h"
#include "compiler/plan/fusion.h"
#include "models/graph.h"

namespace tpusim::compiler {

// The ISA mark of a graph collective's kernel and instructions (what the engines' collective
// statistics are kept by).
isa::Collective isa_collective(models::CollectiveOp op);

// The bytes the collective moves, as its emitter takes them (collectives.h, emit_collective): the
// operand's stored bytes (all-reduce, reduce-scatter, all-to-all, collective-permute: each core's
// input), the result's for an all-gather (each core's output; it contributes 1/group of it).
uint64_t graph_collective_bytes(const models::Graph& g, const models::Node& n);
// The bytes of a collective kernel: its parts' summed, a flat collective's buffer once.
uint64_t kernel_collective_bytes(const models::Graph& g, const Fusion& f);

// A collective kernel on one core, where there is nobody to talk to: one zero-work instruction
// marked with the collective's kind. Over a group of one replica the collective is the identity
// (all-gather and reduce-scatter of one member keep the shape), so this is exact; over a larger
// group a program of one core cannot run it, and the kernel is listed (its label says so) but
// costs nothing: compile_spmd_step runs it.
void lower_collective_alone(LowerContext& cx, const Fusion& f);

// What one collective of a graph compiled across replicas did.
struct GraphCollective {
  std::string name;  // its kernel's
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  uint64_t bytes = 0;            // graph_collective_bytes
  uint32_t group_size = 1;       // replicas per group
  uint32_t groups = 1;           // groups running at once
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // as emitted (all-reduce & co)
  uint64_t bytes_sent_per_core = 0;  // the busiest core's
  uint64_t dcn_bytes_per_core = 0;   // of them, over the data-center network (multislice)
  bool background = false;           // run asynchronously (models::CollectiveAttrs::async)
  std::string after_kernel;          // the kernel whose end starts it ("" at the program's start)
  uint32_t done = kNoInstr;          // the stream index (every core's) of the instruction ending it
};

// Emits the collective of fusion `f` (of all its outputs' bytes: a combined one's parts run as one)
// for every replica (replica i = cores[i]) in one section of
// `streams`, after main()'s current kernel: each group's collective over the cores of its
// replicas, the groups at once. Synchronous, the kernels after it wait for it (it ends the
// section's kernel on every core). Asynchronous (CollectiveAttrs::async), it runs on the cores'
// background queues with its staging at the top of VMEM, after `previous` (the last background
// collective's done, kNoInstr: none; they run one at a time), and the next kernel waits for the
// kernel before it: the caller makes the kernels reading the result wait for `done` and compiles
// the kernels meanwhile with the staging reserved. `opt.tag_base` is advanced past the tags used.
// Throws std::invalid_argument when the collective's replica count differs from cores.size().
GraphCollective emit_graph_collective(ReplicaStreams& streams, LowerContext& cx, const Fusion& f,
                                      const std::vector<CoreId>& cores, CollectiveOptions& opt,
                                      uint32_t previous = kNoInstr);

}  // namespace tpusim::compiler
