// A dot kernel's fused ops around its dot, read from the graph: what each operand loads (its
// inputs, held whole in VMEM or read block by block) and computes as it is loaded (the prologue),
// what the output tiles compute and load (the epilogue), and from them the tiling problem
// (dot_tiling.h).
#pragma once
#include <vector>

#include "compiler/lower/dot_tiling.h"
#include "compiler/plan/fusion.h"
#include "models/graph.h"
#include "sim/hw/vpu_params.h"

namespace tpusim::compiler {

struct DotKernelParts {
  // Per operand (lhs, rhs): its large inputs (read block by block) and small ones (at most 1/8 of
  // the operand's elements, held whole), in the order of DotProblem's operand bytes.
  std::vector<int> large[2], small[2];
  // The epilogue's inputs, by the same rule against the output's elements.
  std::vector<int> epilogue_large, epilogue_small;
  DotProblem problem;
};

// The parts of dot kernel `f` of graph `g` (f.kind == FusionKind::kDot), the vector work counted
// for a core's `vpu`.
DotKernelParts split_dot_kernel(const models::Graph& g, const Fusion& f, const VpuParams& vpu);

}  // namespace tpusim::compiler
