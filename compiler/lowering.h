// Lowering of one fused kernel into instructions on one core.
#pragma once
#include <cstdint>

#include "compiler/fusion.h"
#include "compiler/program_builder.h"
#include "models/graph.h"
#include "sim/slice/slice_params.h"

namespace tpusim::compiler {

struct LowerContext {
  const models::Graph& graph;
  const FusionPlan& plan;
  const HwConfig& hw;
  ProgramBuilder& pb;
  uint64_t hbm_bytes = 0;  // traffic the schedule moves (reported in ProgramInfo)
  uint64_t flops = 0;
};

// Stored bytes of a materialized value in HBM (tiled layout).
uint64_t stored_bytes(const models::Graph& g, int node);

// Element-wise and reduction kernels: inputs streamed through VMEM in double-buffered tiles.
void lower_vector_kernel(LowerContext& cx, const Fusion& f);
// Dot kernels: tiled for the MXUs and VMEM, with operand (prologue) and output (epilogue) fusion.
void lower_dot_kernel(LowerContext& cx, const Fusion& f);

}  // namespace tpusim::compiler
