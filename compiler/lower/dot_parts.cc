#include "compiler/lower/dot_parts.h"

#include <algorithm>
#include <functional>
#include <set>

#include "compiler/lower/lowering.h"
#include "compiler/lower/vector_cost.h"
#include "compiler/plan/layout.h"

namespace tpusim::compiler {

using models::DType;
using models::OpKind;

namespace {

// bf16 passes per streamed row: an fp32 operand at precision high/highest is split into 3/6.
uint32_t passes_for(models::DotPrecision precision, DType t) {
  if (t != DType::kF32) return 1;
  if (precision == models::DotPrecision::kHigh) return 3;
  if (precision == models::DotPrecision::kHighest) return 6;
  return 1;
}

int64_t product(const models::Dims& shape, const std::vector<int>& dims) {
  int64_t p = 1;
  for (int d : dims) p *= shape.at(d);
  return p;
}

// Operand `o` of the dot: the kernel's ops computing it (claimed for the prologue), its inputs and
// the work preparing it for the MXU.
void split_operand(const models::Graph& g, const Fusion& f, const VpuParams& vpu, int o, std::set<int>& claimed,
                   DotKernelParts& parts) {
  const auto& dot = g.node(f.dot);
  const std::set<int> in_kernel(f.nodes.begin(), f.nodes.end());
  const std::set<int> inputs(f.inputs.begin(), f.inputs.end());
  DotOperandLoad& load = parts.problem.operands[o];
  const int64_t elems = models::num_elements(g.node(dot.inputs[o]).shape);
  std::set<int> seen;
  std::function<void(int)> visit = [&](int x) {
    if (!seen.insert(x).second) return;
    if (inputs.count(x)) {
      const uint64_t b = stored_bytes(g, x);
      if (models::num_elements(g.node(x).shape) * 8 <= elems) {
        parts.small[o].push_back(x);
        load.small_bytes.push_back(b);
      } else {
        parts.large[o].push_back(x);
        load.large_bytes += b;
      }
      load.prep.vld_vregs += vregs(g.node(x).shape, g.node(x).dtype);
      return;
    }
    if (!in_kernel.count(x) || g.node(x).kind == OpKind::kConstant) return;
    claimed.insert(x);
    load.prep += node_work(g, g.node(x), vpu);
    for (int in : g.node(x).inputs) visit(in);
  };
  visit(dot.inputs[o]);
  const auto& opnd = g.node(dot.inputs[o]);
  if (models::is_quantized(dot.precision)) {
    // AQT's quantization on the VPU, once per operand element (XLA quantizes an operand once, not on
    // every reload of its tiles): per vreg in its own dtype |x|, the running maximum for the scale,
    // the multiply by 1/scale, the round-and-clip to the 8-bit range. Counted with the kernel's
    // once-per-output work (the epilogue's total), spread over its output tiles. Each load stores
    // the 8-bit tile the MXU reads (half a bf16 copy's vregs).
    const uint64_t v = vregs(opnd.shape, opnd.dtype);
    parts.problem.epilogue.alu_vregs += 4 * v;
    load.prep.vst_vregs += (vregs(opnd.shape, DType::kBF16) + 1) / 2;
    return;
  }
  if (opnd.dtype == DType::kF32) {
    // Rounding to bf16 (default) or splitting into hi/lo bf16 parts (high, highest).
    const uint64_t v = vregs(opnd.shape, DType::kF32);
    load.prep.alu_vregs += passes_for(dot.precision, DType::kF32) == 1 ? v : 3 * v;
  }
  load.prep.vst_vregs += vregs(opnd.shape, DType::kBF16);  // the MXU-ready copy
}

// The ops not claimed by an operand: the epilogue, computed on each finished output tile, with
// the inputs it reads, the extra outputs stored with the tiles and the merged reductions.
void split_epilogue(const models::Graph& g, const Fusion& f, const VpuParams& vpu, const std::set<int>& claimed,
                    DotKernelParts& parts) {
  DotProblem& p = parts.problem;
  const auto& dot = g.node(f.dot);
  const auto& root = g.node(f.root);
  const std::set<int> inputs(f.inputs.begin(), f.inputs.end());
  auto& large = parts.epilogue_large;
  auto& small = parts.epilogue_small;
  p.out_elems = models::num_elements(root.shape);
  for (int x : f.nodes) {
    if (claimed.count(x)) continue;
    p.epilogue += node_work(g, g.node(x), vpu);
    for (int in : g.node(x).inputs) {
      if (!inputs.count(in) || in == f.dot) continue;
      if (std::find(large.begin(), large.end(), in) != large.end() ||
          std::find(small.begin(), small.end(), in) != small.end())
        continue;
      const uint64_t b = stored_bytes(g, in);
      if (models::num_elements(g.node(in).shape) * 8 <= p.out_elems) {
        small.push_back(in);
        p.epilogue_small_bytes += b;
      } else {
        large.push_back(in);
        p.epilogue_large_bytes += b;
      }
      p.epilogue.vld_vregs += vregs(g.node(in).shape, g.node(in).dtype);
    }
  }
  p.epilogue.vst_vregs += vregs(root.shape, root.dtype);
  // A quantized matmul's int32 result dequantized: a convert and the two scales' product.
  if (models::is_quantized(dot.precision)) p.epilogue.alu_vregs += 2 * vregs(g.node(f.dot).shape, DType::kF32);
  // Extra outputs (an already-fused group's) are stored with the output tiles.
  p.out_bytes = stored_bytes(g, f.root);
  for (int x : f.extra_outputs) {
    p.out_bytes += stored_bytes(g, x);
    p.epilogue.vst_vregs += vregs(g.node(x).shape, g.node(x).dtype);
  }
  // Reductions fused as extra outputs (multi-output fusion): their work joins the epilogue and
  // the output tile must span the reduced dimension (see fusion.h).
  const int nb = int(dot.dot.lhs_batch.size());
  const int n_lhs_free =
      int(g.node(dot.inputs[0]).shape.size() - dot.dot.lhs_batch.size() - dot.dot.lhs_contract.size());
  p.merged_reduces = !f.merged_reduces.empty();
  for (int r : f.merged_reduces) {
    p.epilogue += node_work(g, g.node(r), vpu);
    p.reduce_out_bytes += stored_bytes(g, r);
    const int d = g.node(r).reduce_dim;
    if (d >= nb && d < nb + n_lhs_free) p.reduce_spans_m = true;
    if (d >= nb + n_lhs_free) p.reduce_spans_n = true;
  }
}

}  // namespace

DotKernelParts split_dot_kernel(const models::Graph& g, const Fusion& f, const VpuParams& vpu) {
  const auto& dot = g.node(f.dot);
  DotKernelParts parts;
  std::set<int> claimed = {f.dot};
  for (int o = 0; o < 2; ++o) split_operand(g, f, vpu, o, claimed, parts);
  split_epilogue(g, f, vpu, claimed, parts);
  DotProblem& p = parts.problem;
  p.passes = passes_for(dot.precision, g.node(dot.inputs[0]).dtype);
  const auto& ls = g.node(dot.inputs[0]).shape;
  const auto& rs = g.node(dot.inputs[1]).shape;
  p.batch = product(ls, dot.dot.lhs_batch);
  p.k = product(ls, dot.dot.lhs_contract);
  p.m = models::num_elements(ls) / (p.batch * p.k);
  p.n = models::num_elements(rs) / (p.batch * p.k);
  return parts;
}

}  // namespace tpusim::compiler
