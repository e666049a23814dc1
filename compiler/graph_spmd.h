// A graph run by several cores at once, each on its own data (SPMD): an imported HLO module with
// `replicas` or `num_partitions` > 1 (docs/hlo.md). Every core runs the same program, lowered once
// on the first core's builder and shared by the others (compiler/replicas.h); the cores of a chip
// share its CMEM. The graph's collectives (models::OpKind::kCollective) run across the cores:
// replica i of a collective's replica groups is cores[i] (compiler/graph_collectives.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/collectives.h"
#include "compiler/graph_collectives.h"
#include "compiler/memory_plan.h"
#include "models/graph.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

struct SpmdProgram {
  isa::Program program;
  uint32_t kernels = 0;  // fusions lowered per core (collectives included)
  std::vector<GraphCollective> collectives;  // in program order
  // A replica's buffers (compiler/memory_plan.h) per device: on a megacore chip, every buffer once
  // per replica the chip runs (they share its HBM). Above device_hbm_bytes the program is not
  // lowered (`lowered` false, `program` without instructions): it cannot be allocated.
  MemoryPlan memory;
  bool lowered = true;
};

struct SpmdOptions {
  // The collectives' pipelining granularity and algorithm (kAuto: per tensor, choose_algorithm).
  // tag_base and background are the compiler's own.
  uint64_t piece_bytes = 1ull << 20;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};

// Lowers `g` for every core of `cores` (at least one; cores[0] is the one whose stream is built).
// Throws std::invalid_argument when `cores` is empty or names a core twice, or when a collective
// of `g` is for a replica count other than cores.size().
SpmdProgram compile_graph_spmd(const models::Graph& g, const HwConfig& hw, const std::string& name,
                               const std::vector<CoreId>& cores, const SpmdOptions& options = {});

}  // namespace tpusim::compiler
