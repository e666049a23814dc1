// A graph run by several cores at once, each on its own data (SPMD): an imported HLO module with
// `replicas` or `num_partitions` > 1 (docs/hlo.md). Every core runs the same program, lowered once
// on the first core's builder and shared by the others (compiler/replicas.h); the cores of a chip
// share its CMEM.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/collectives.h"
#include "models/graph.h"
#include "sim/isa/program.h"
#include "sim/slice/slice_params.h"

namespace tpusim::compiler {

struct SpmdProgram {
  isa::Program program;
  uint32_t kernels = 0;  // fusions lowered per core
};

// Lowers `g` for every core of `cores` (at least one; cores[0] is the one whose stream is built).
// Throws std::invalid_argument when `cores` is empty or names a core twice.
SpmdProgram compile_graph_spmd(const models::Graph& g, const HwConfig& hw, const std::string& name,
                               const std::vector<CoreId>& cores);

}  // namespace tpusim::compiler
