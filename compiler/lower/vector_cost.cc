#include "compiler/lower/vector_cost.h"

#include <cmath>

#include "compiler/plan/layout.h"

namespace tpusim::compiler {

using models::DType;
using models::EwOp;
using models::OpKind;

isa::VpuWork& operator+=(isa::VpuWork& a, const isa::VpuWork& b) {
  a.alu_vregs += b.alu_vregs;
  a.eup_vregs += b.eup_vregs;
  a.xlu_vregs += b.xlu_vregs;
  a.vld_vregs += b.vld_vregs;
  a.vst_vregs += b.vst_vregs;
  return a;
}

isa::VpuWork scale_work(const isa::VpuWork& w, double f) {
  auto s = [f](uint64_t x) { return uint64_t(std::ceil(double(x) * f - 1e-9)); };
  return {s(w.alu_vregs), s(w.eup_vregs), s(w.xlu_vregs), s(w.vld_vregs), s(w.vst_vregs)};
}

namespace {

uint64_t log2_ceil(uint64_t x) {
  uint64_t r = 0;
  while ((uint64_t(1) << r) < x) ++r;
  return r;
}

// Rows of 8-sublane groups in a shape whose last dimension lies on lanes.
uint64_t row_groups(const models::Dims& d) {
  if (d.empty()) return 1;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < d.size(); ++i) rows *= d[i];
  return uint64_t(div_up(rows, kSublanes));
}

}  // namespace

isa::VpuWork node_work(const models::Graph& g, const models::Node& n, const VpuParams& vpu) {
  isa::VpuWork w;
  const uint64_t v = vregs(n.shape, DType::kF32);
  switch (n.kind) {
    case OpKind::kElementwise:
      switch (n.ew) {
        case EwOp::kAdd: case EwOp::kSub: case EwOp::kMul: case EwOp::kMax: case EwOp::kRelu: case EwOp::kNeg:
          w.alu_vregs = v;
          break;
        case EwOp::kDiv:  // reciprocal on the EUP, then a multiply and one Newton refinement step
          w.eup_vregs = v;
          w.alu_vregs = 3 * v;
          break;
        case EwOp::kExp:  // range reduction and scaling around the EUP's exp2
          w.eup_vregs = v;
          w.alu_vregs = 2 * v;
          break;
        case EwOp::kRsqrt: case EwOp::kSqrt:
          w.eup_vregs = v;
          w.alu_vregs = v;
          break;
        case EwOp::kTanh:  // 1 - 2/(1 + exp(2x)): an EUP exp and an EUP reciprocal
          w.eup_vregs = 2 * v;
          w.alu_vregs = 4 * v;
          break;
        case EwOp::kErf:  // XLA's rational approximation: ~13 multiply-adds and a clamp, one EUP reciprocal
          w.eup_vregs = v;
          w.alu_vregs = 14 * v;
          break;
        case EwOp::kLog:  // EUP log2 plus a scale
          w.eup_vregs = v;
          w.alu_vregs = 2 * v;
          break;
        case EwOp::kCmpEq: case EwOp::kCmpGt:  // compare, then select 1/0
          w.alu_vregs = 2 * v;
          break;
        case EwOp::kDropoutMask:  // draw random bits, compare with the threshold, select the scale
          w.alu_vregs = 3 * v;
          break;
      }
      break;
    case OpKind::kIota:  // index arithmetic: one ALU op per vreg
      w.alu_vregs = v;
      break;
    case OpKind::kGather:  // dynamic-offset row loads; one ALU op per output vreg for the addresses
      w.alu_vregs = v;
      break;
    case OpKind::kScatterAdd:  // zero fill of the table, then one add per update vreg
      w.alu_vregs = v + vregs(g.node(n.inputs[0]).shape, DType::kF32);
      break;
    case OpKind::kConvert:
      w.alu_vregs = v;
      break;
    case OpKind::kBroadcast: {
      const auto& in = g.node(n.inputs[0]);
      bool minor_is_new = true;
      for (int d : n.broadcast_dims) minor_is_new = minor_is_new && d != int(n.shape.size()) - 1;
      // A per-row value (stored along lanes) splatted across the lanes of each 8-row group
      // goes through the cross-lane unit once per group; broadcasts along major dims are free.
      if (minor_is_new && !in.shape.empty() && n.shape.size() >= 2) w.xlu_vregs = row_groups(n.shape);
      break;
    }
    case OpKind::kTranspose: {
      bool minor_moves = n.permutation.back() != int(n.permutation.size()) - 1;
      if (minor_moves) w.xlu_vregs = v;  // tile transposes on the XLU
      break;
    }
    case OpKind::kSlice: case OpKind::kConcatenate: {
      // Data movement fused into the consuming element-wise kernel, as XLA fuses slice and
      // concatenate. Along a major dimension it is addressing only: free. Along the minor (lane)
      // dimension, a piece that starts at a lane offset other than a multiple of 128 is moved by a
      // lane rotate on the cross-lane unit (one XLU op per vreg of the moved data; the pieces of one
      // vreg move together, so the count is of dense vregs), and a concatenate merges its pieces
      // into each output vreg with a select (one ALU op per output vreg). Swapping the halves of a
      // 128-wide head (rotary position embeddings) thus costs one rotate and one select per vreg.
      const int minor = int(n.shape.size()) - 1;
      if (n.axis != minor) break;
      auto dense_vregs = [](const models::Dims& d) { return uint64_t(div_up(models::num_elements(d), kLanes * kSublanes)); };
      if (n.kind == OpKind::kSlice) {
        if (n.start % kLanes != 0) w.xlu_vregs = dense_vregs(n.shape);
      } else {
        w.alu_vregs = v;
        int64_t offset = 0;
        for (int in : n.inputs) {
          const auto& piece = g.node(in);
          if (offset % kLanes != 0) w.xlu_vregs += dense_vregs(piece.shape);
          offset += piece.shape[n.axis];
        }
      }
      break;
    }
    case OpKind::kReduce: {
      const auto& in = g.node(n.inputs[0]);
      const uint64_t vin = vregs(in.shape, DType::kF32);
      const int rank = int(in.shape.size());
      if (n.reduce_dim == rank - 1) {
        // Lane reduction (XLA's row-reduction emitter): the ALUs add a row group's vregs into one
        // (vregs - groups adds), then the cross-lane unit reduces the 128 lanes of each of its 8
        // sublanes in one pass and returns the 8 sums lane-packed, ready for the [rows] output
        // (one XLU op per 8-row group). The XLU is a separate VLIW slot (Norrie et al. 2021; "How
        // to Think About TPUs", App. C: reductions across lanes go through the XLU), so these ops
        // overlap the ALU and load/store slots; its throughput is xlu_cycles_per_vreg.
        const uint64_t groups = row_groups(in.shape);
        w.alu_vregs = vin > groups ? vin - groups : 0;
        w.xlu_vregs = groups;
      } else if (n.reduce_dim == rank - 2) {
        // Sublane reduction: element-wise adds across vregs, then a log2(sublanes) shuffle tree.
        const uint64_t vout = vregs(n.shape.empty() ? models::Dims{1} : n.shape, DType::kF32);
        w.alu_vregs = vin + log2_ceil(vpu.sublanes) * vout;
      } else {
        w.alu_vregs = vin;  // reduction over a major dimension: element-wise adds
      }
      break;
    }
    default:
      break;
  }
  return w;
}

}  // namespace tpusim::compiler
