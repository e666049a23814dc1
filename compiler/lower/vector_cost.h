// Vector (VPU) work of the ops computed inside a kernel, in vector-register operations per VLIW
// slot class. Element-wise math runs in fp32 on the VPU (v2/v3 have no bf16 ALUs), so counts use
// fp32 vregs of each op's shape.
#pragma once
#include "models/graph.h"
#include "sim/hw/vpu_params.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

isa::VpuWork& operator+=(isa::VpuWork& a, const isa::VpuWork& b);
isa::VpuWork scale_work(const isa::VpuWork& w, double f);  // rounds up each field

// Work to compute node `n` of graph `g` over its whole shape (dots excluded: they run on the MXU).
isa::VpuWork node_work(const models::Graph& g, const models::Node& n, const VpuParams& vpu);

}  // namespace tpusim::compiler
