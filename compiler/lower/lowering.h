// Lowering of one fused kernel into instructions on one core.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/lower/program_builder.h"
#include "compiler/plan/fusion.h"
#include "compiler/plan/layout.h"
#include "models/graph.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

struct LowerContext {
  const models::Graph& graph;
  const FusionPlan& plan;
  const HwConfig& hw;
  ProgramBuilder& pb;
  uint64_t hbm_bytes = 0;  // HBM traffic the schedule moves (reported in ProgramInfo)
  uint64_t flops = 0;
  // By graph node id: the value's buffer lives in CMEM (MemoryPlan::cmem_node; null or empty: all
  // in HBM). Its DMAs are tagged isa::MemSpace::kCmem and counted in cmem_bytes, not hbm_bytes.
  const std::vector<bool>* cmem_node = nullptr;
  uint64_t cmem_bytes = 0;

  bool in_cmem(int node) const {
    return cmem_node && node >= 0 && size_t(node) < cmem_node->size() && (*cmem_node)[size_t(node)];
  }
  isa::MemSpace mem_of(int node) const { return in_cmem(node) ? isa::MemSpace::kCmem : isa::MemSpace::kHbm; }
  // Counts a DMA's bytes on the memory side of `node`.
  void moved(int node, uint64_t bytes) { (in_cmem(node) ? cmem_bytes : hbm_bytes) += bytes; }
};

// The label of a kernel's one store of all its merged reductions ("<kernel>:store reductions").
inline constexpr std::string_view kReductionsLabel = "reductions";

// The node whose memory side the kernel's one "reductions" store (all merged reductions at once)
// uses: the first merged reduction if every one is in CMEM, else -1 (HBM).
inline int reductions_side(const LowerContext& cx, const Fusion& f) {
  for (int r : f.merged_reduces)
    if (!cx.in_cmem(r)) return -1;
  return f.merged_reduces.empty() ? -1 : f.merged_reduces.front();
}

// Element-wise and reduction kernels: inputs streamed through VMEM in double-buffered tiles.
void lower_vector_kernel(LowerContext& cx, const Fusion& f);
// Dot kernels: tiled for the MXUs and VMEM, with operand (prologue) and output (epilogue) fusion.
void lower_dot_kernel(LowerContext& cx, const Fusion& f);
// Flash attention kernels (models::OpKind::kAttention): the forward or the backward of one call,
// block by block in VMEM (compiler/lower/lower_attention.cc).
void lower_attention_kernel(LowerContext& cx, const Fusion& f);
// A host copy (FusionKind::kHostCopy: models::OpKind::kHostOffload or kHostReload): one kernel of
// one transfer over the chip's PCIe link (isa::Op::kHostStore / kHostLoad) of the value's bytes,
// after the kernels before it. Returns the transfer's stream index (compile_spmd_step runs it in
// the background and awaits it at its done or first reader; alone, the next kernel waits for it).
uint32_t lower_host_copy(LowerContext& cx, const Fusion& f);
// One of these by the fusion's kind; records the kernel's share of cx.flops and cx.hbm_bytes
// in its kernel table entry (ProgramBuilder::add_kernel_costs), so that the entries of a program
// add up to its ProgramInfo.
void lower_fusion(LowerContext& cx, const Fusion& f);

// The per-step infeed: the bytes of `g`'s per-step inputs, and, when `prefetch`, one host load of
// them emitted outside any kernel (the next batch crossing PCIe while this step computes:
// torch_xla's parallel loader / tf.data prefetch; nothing in the step waits for it, but the step
// ends only when it has). Returns the bytes.
uint64_t emit_next_batch_infeed(ProgramBuilder& b, const models::Graph& g, bool prefetch);

}  // namespace tpusim::compiler
