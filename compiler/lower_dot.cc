// Dot kernels on the MXUs.
//
// A dot [B x M x K] . [B x K x N] runs as weight-stationary matmuls: one operand (the "stationary"
// one, C columns) is cut into k x n <= 128 x 128 weight tiles pushed into an MXU; the other (the
// "streamed" one, R rows) streams its rows through. Either operand can be the stationary one (the
// MXU computes C^T = B^T A^T as readily); the choice and the tile sizes come from the analytical
// cost model below, under the VMEM budget:
//   * the output is cut into tr x tc tiles accumulated in fp32 in VMEM over K blocks of tk;
//   * a streamed panel (tr x K) or the whole stationary operand (K x C) stays resident in VMEM when
//     it fits, otherwise blocks are re-read from HBM for every tile that needs them;
//   * loads are double buffered: the DMA of step t+1 overlaps the MXU work of step t;
//   * fp32 operands are converted to bf16 on the VPU as they arrive (1 bf16 pass at default
//     precision, hi/lo splits for high/highest), together with any fused operand producers;
//   * each MXU keeps two weight tiles (weight_buffers): the next tile loads while one streams.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "compiler/layout.h"
#include "compiler/lowering.h"
#include "compiler/vector_cost.h"
#include "sim/hw/resolved_hw.h"
#include "sim/mxu/mxu_timing.h"
#include "sim/vpu/vpu_timing.h"

namespace tpusim::compiler {

using models::DType;
using models::OpKind;

namespace {

struct Operand {
  std::vector<int> cone;  // fused producer ops computed as the operand is loaded
  std::vector<int> large, small;
  uint64_t large_bytes = 0, small_bytes = 0;
  isa::VpuWork prep;  // for the whole operand (all batches)
};

struct Tiling {
  bool stream_lhs = true;
  int64_t tr = 0, tc = 0, tk = 0;
  bool s_res = false, w_res = false;
  uint32_t acc_tiles = 2;  // fp32 accumulator tiles in flight (accumulating, or draining to HBM)
  double s_buf = 0, w_buf = 0, fixed_buf = 0;  // VMEM bytes
  double est = std::numeric_limits<double>::infinity();
  uint64_t steps = 0;
};

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

std::vector<int64_t> candidates(int64_t full, int64_t quantum, int64_t cap) {
  std::vector<int64_t> c;
  const int64_t whole = round_up(full, quantum);
  if (whole <= cap) c.push_back(whole);
  for (int64_t x : {4096, 2048, 1024, 512, 256, 128})
    if (x < whole && x >= quantum) c.push_back(x);
  if (c.empty()) c.push_back(std::min(whole, quantum));
  return c;
}

}  // namespace

void lower_dot_kernel(LowerContext& cx, const Fusion& f) {
  const auto& g = cx.graph;
  const auto& hw = cx.hw;
  const auto& core = hw.chip.core;
  const auto& dot = g.node(f.dot);
  const auto& root = g.node(f.root);
  auto& pb = cx.pb;
  pb.begin_kernel(f.name);

  // --- Split the kernel's ops into the two operand prologues and the epilogue.
  std::set<int> in_kernel(f.nodes.begin(), f.nodes.end());
  std::set<int> inputs(f.inputs.begin(), f.inputs.end());
  Operand ops[2];
  std::set<int> claimed = {f.dot};
  for (int o = 0; o < 2; ++o) {
    const int64_t elems = models::num_elements(g.node(dot.inputs[o]).shape);
    std::set<int> seen;
    std::function<void(int)> visit = [&](int x) {
      if (!seen.insert(x).second) return;
      if (inputs.count(x)) {
        uint64_t b = stored_bytes(g, x);
        if (models::num_elements(g.node(x).shape) * 8 <= elems) {
          ops[o].small.push_back(x);
          ops[o].small_bytes += b;
        } else {
          ops[o].large.push_back(x);
          ops[o].large_bytes += b;
        }
        ops[o].prep.vld_vregs += vregs(g.node(x).shape, g.node(x).dtype);
        return;
      }
      if (!in_kernel.count(x) || g.node(x).kind == OpKind::kConstant) return;
      ops[o].cone.push_back(x);
      claimed.insert(x);
      ops[o].prep += node_work(g, g.node(x), core.vpu);
      for (int in : g.node(x).inputs) visit(in);
    };
    visit(dot.inputs[o]);
    const auto& opnd = g.node(dot.inputs[o]);
    if (opnd.dtype == DType::kF32) {
      // Rounding to bf16 (default) or splitting into hi/lo bf16 parts (high, highest).
      uint64_t v = vregs(opnd.shape, DType::kF32);
      ops[o].prep.alu_vregs += passes_for(dot.precision, DType::kF32) == 1 ? v : 3 * v;
    }
    ops[o].prep.vst_vregs += vregs(opnd.shape, DType::kBF16);  // the MXU-ready copy
  }
  const DType in_type = g.node(dot.inputs[0]).dtype;
  const uint32_t passes = passes_for(dot.precision, in_type);

  isa::VpuWork epi;
  std::vector<int> epi_large, epi_small;
  uint64_t epi_large_bytes = 0, epi_small_bytes = 0;
  const int64_t out_elems = models::num_elements(root.shape);
  for (int x : f.nodes) {
    if (claimed.count(x)) continue;
    epi += node_work(g, g.node(x), core.vpu);
    for (int in : g.node(x).inputs) {
      if (!inputs.count(in) || in == f.dot) continue;
      if (std::find(epi_large.begin(), epi_large.end(), in) != epi_large.end() ||
          std::find(epi_small.begin(), epi_small.end(), in) != epi_small.end())
        continue;
      uint64_t b = stored_bytes(g, in);
      if (models::num_elements(g.node(in).shape) * 8 <= out_elems) {
        epi_small.push_back(in);
        epi_small_bytes += b;
      } else {
        epi_large.push_back(in);
        epi_large_bytes += b;
      }
      epi.vld_vregs += vregs(g.node(in).shape, g.node(in).dtype);
    }
  }
  epi.vst_vregs += vregs(root.shape, root.dtype);
  // Extra outputs (an already-fused group's) are stored with the output tiles.
  uint64_t out_bytes = stored_bytes(g, f.root);
  for (int x : f.extra_outputs) {
    out_bytes += stored_bytes(g, x);
    epi.vst_vregs += vregs(g.node(x).shape, g.node(x).dtype);
  }
  // Reductions fused as extra outputs (multi-output fusion): their work joins the epilogue and
  // the output tile must span the reduced dimension (see fusion.h).
  uint64_t reduce_out_bytes = 0;
  bool reduce_spans_m = false, reduce_spans_n = false;
  {
    const int nb = int(dot.dot.lhs_batch.size());
    const int n_lhs_free = int(g.node(dot.inputs[0]).shape.size() - dot.dot.lhs_batch.size() -
                               dot.dot.lhs_contract.size());
    for (int r : f.merged_reduces) {
      epi += node_work(g, g.node(r), core.vpu);
      reduce_out_bytes += stored_bytes(g, r);
      const int d = g.node(r).reduce_dim;
      if (d >= nb && d < nb + n_lhs_free) reduce_spans_m = true;
      if (d >= nb + n_lhs_free) reduce_spans_n = true;
    }
  }

  // --- Problem size.
  const auto& ls = g.node(dot.inputs[0]).shape;
  const auto& rs = g.node(dot.inputs[1]).shape;
  const int64_t B = product(ls, dot.dot.lhs_batch);
  const int64_t K = product(ls, dot.dot.lhs_contract);
  const int64_t M = models::num_elements(ls) / (B * K);
  const int64_t N = models::num_elements(rs) / (B * K);
  cx.flops += models::dot_flops(g, dot);  // = 2 B M K N

  const int64_t R_ = core.mxu.rows, C_ = core.mxu.cols;
  const uint32_t n_mxu = core.mxu.count;
  const ResolvedHw rhw = resolve_hw(hw);
  const double bpc = rhw.hbm_core_bytes_per_cycle;
  const uint64_t vmem = cx.pb.vmem_available();  // less what background work keeps (program_builder.h)
  const uint64_t wl = mxu_weight_load_cycles(core.mxu, uint32_t(R_));

  // MXU cycles of one step (a tr x tk block against a tk x tc block, the arrays sharing its tiles).
  auto step_mxu_cycles = [&](int64_t tr, int64_t tc, int64_t tk, int64_t R, int64_t C) {
    return double(mxu_stream_cycles(core.mxu, uint32_t(std::min(tr, R)), passes)) *
           double(div_up(std::min(tk, K), R_) * div_up(std::min(tc, C), C_)) / n_mxu;
  };

  // --- Analytical cost of one tiling (the compiler's decision model; same formulas as the sim).
  // `partial`: a merged reduction's line may straddle tiles; its partial results then stay in VMEM
  // (output-sized accumulators, added to tile by tile) until the last tile of the line.
  auto evaluate = [&](bool stream_lhs, int64_t tr, int64_t tc, int64_t tk, bool partial) {
    Tiling t;
    bool straddles = false;
    {
      const int64_t R = stream_lhs ? M : N, C = stream_lhs ? N : M;
      const bool spans_r = stream_lhs ? reduce_spans_m : reduce_spans_n;
      const bool spans_c = stream_lhs ? reduce_spans_n : reduce_spans_m;
      straddles = (spans_r && tr < R) || (spans_c && tc < C);
      if (straddles && !partial) return t;  // a reduced line would straddle tiles
    }
    t.stream_lhs = stream_lhs;
    t.tr = tr;
    t.tc = tc;
    t.tk = tk;
    const Operand& S = ops[stream_lhs ? 0 : 1];
    const Operand& W = ops[stream_lhs ? 1 : 0];
    const int64_t R = stream_lhs ? M : N, C = stream_lhs ? N : M;
    const double s_bpe = double(S.large_bytes) / double(B * R * K);
    const double w_bpe = double(W.large_bytes) / double(B * K * C);
    const int64_t ri = div_up(R, tr), cj = div_up(C, tc), kb = div_up(K, tk);
    // fp32 accumulator tiles: the epilogue runs in place and the store drains a finished tile
    // while the next ones accumulate; enough of them (2 to 4) that the tiles computed meanwhile
    // cover a store's latency and transfer. The epilogue's large inputs are double buffered.
    {
      const double tile_mxu = double(div_up(K, tk)) * step_mxu_cycles(tr, tc, tk, R, C);
      const double store = double(rhw.dma_fixed_cycles) + double(tr * tc) * (double(out_bytes) / out_elems) / bpc;
      t.acc_tiles = uint32_t(std::clamp(1.0 + std::ceil(store / std::max(tile_mxu, 1.0)), 2.0, 4.0));
    }
    const double acc = double(t.acc_tiles) * double(tr * tc * 4);
    const double epi_buf = 2.0 * double(tr * tc) * double(epi_large_bytes) / double(out_elems);
    const double fixed = acc + epi_buf + double(S.small_bytes + W.small_bytes + epi_small_bytes) +
                         (straddles ? double(reduce_out_bytes) : 0.0);
    // Operand blocks land as stored (s_bpe / w_bpe bytes per element, double buffered) and are
    // converted to the MXU's bf16 (2 bytes); a resident operand keeps only its bf16 copy (the
    // landing buffers are reused), two panels of it (the next is prepared while one streams) or
    // one stationary operand per batch (two when batches alternate).
    for (int res = 3; res >= 0; --res) {  // prefer residency of both, then of either
      bool s_res = res & 1, w_res = res & 2;
      const double ek = double(std::min(tk, K));  // a block is never deeper than K
      const double s_land = 2.0 * double(std::min(tr, R)) * ek * s_bpe, w_land = 2.0 * ek * double(std::min(tc, C)) * w_bpe;
      double s_buf = s_res ? s_land + 2.0 * tr * K * 2 : s_land + 2.0 * tr * tk * 2;
      double w_buf = w_res ? w_land + (B > 1 ? 2.0 : 1.0) * K * C * 2 : w_land + 2.0 * tk * tc * 2;
      if (s_buf + w_buf + fixed <= double(vmem)) {
        t.s_res = s_res;
        t.w_res = w_res;
        t.s_buf = s_buf;
        t.w_buf = w_buf;
        t.fixed_buf = fixed;
        break;
      }
      if (res == 0) return t;  // does not fit
    }
    const double traffic = double(S.large_bytes) * (t.s_res ? 1 : cj) + double(W.large_bytes) * (t.w_res ? 1 : ri) +
                           double(out_bytes + epi_large_bytes + S.small_bytes + W.small_bytes + epi_small_bytes);
    const double hbm = traffic / bpc;
    double mxu = 0;
    const int64_t sub_k = div_up(K, R_), sub_c = div_up(C, C_);
    for (int64_t i = 0; i < ri; ++i) {
      int64_t rows = std::min(tr, R - i * tr);
      mxu += double(sub_k * sub_c) * double(std::max<uint64_t>(mxu_stream_cycles(core.mxu, uint32_t(rows), passes), wl));
    }
    mxu = mxu * double(B) / n_mxu;
    isa::VpuWork v = scale_work(S.prep, t.s_res ? 1.0 : double(cj));
    v += scale_work(W.prep, t.w_res ? 1.0 : double(ri));
    v += epi;
    const uint64_t acc_vregs = uint64_t(B) * vregs({R, C}, DType::kF32);
    v += isa::VpuWork{acc_vregs * uint64_t(kb), 0, 0, acc_vregs * uint64_t(kb - 1), acc_vregs * uint64_t(kb)};
    const double vpu = double(vpu_issue_cycles(core.vpu, v));
    const double first = (s_bpe * tr * tk + w_bpe * tk * tc) / bpc;
    const double last = double(tr * tc) * (double(out_bytes) / out_elems) / bpc;
    t.steps = uint64_t(B * ri * cj * kb);
    // Latency chain of double buffering: the load into a buffer waits for the matmuls that read
    // it two steps earlier, so two steps take at least one load (fixed latency + transfer), its
    // VPU preparation and one step's matmuls with their fill/drain.
    const double fd = double(mxu_fill_drain_cycles(core.mxu));
    const double step_stream = step_mxu_cycles(tr, tc, tk, R, C);
    const double step_load = (s_bpe * tr * tk * (t.s_res ? 0 : 1) + w_bpe * tk * tc * (t.w_res ? 0 : 1)) / bpc;
    const double chain = (t.s_res && t.w_res) ? 0.0
                         : double(t.steps) * (double(rhw.dma_fixed_cycles) + step_load +
                                              double(core.vpu.pipeline_latency_cycles) + step_stream + fd) / 2.0;
    t.est = std::max({mxu, hbm, vpu, chain}) + first + last + fd + double(t.steps) * double(core.vpu.pipeline_latency_cycles);
    return t;
  };

  Tiling best;
  auto search = [&](auto row_candidates, bool partial) {
    for (bool stream_lhs : {true, false}) {
      const int64_t R = stream_lhs ? M : N, C = stream_lhs ? N : M;
      for (int64_t tr : row_candidates(R))
        for (int64_t tc : candidates(C, C_, 4096))
          for (int64_t tk : candidates(K, R_, 4096)) {
            Tiling t = evaluate(stream_lhs, tr, tc, tk, partial);
            if (t.est < best.est || (t.est == best.est && t.steps < best.steps)) best = t;
          }
    }
  };
  auto row_tiles = [&](int64_t R) { return candidates(R, kSublanes, 2048); };
  auto search_all = [&] {
    search(row_tiles, false);
    // A kernel whose output tile must span a long reduced dimension, with a large epilogue (e.g. a
    // LayerNorm backward fused into its dot at hidden 768 and 2048 rows: five [2048, 768] operands),
    // may fit only with fewer than 128 rows per tile: search those too, rather than fail.
    if (!std::isfinite(best.est)) {
      search([&](int64_t R) {
        std::vector<int64_t> c;
        for (int64_t x : {64, 32, 16, 8})
          if (x < R) c.push_back(x);
        return c;
      }, false);
    }
    // Still nothing: the merged reductions' lines cannot be whole in one tile beside the epilogue's
    // buffers (a LayerNorm backward at 2048 rows of a small hidden size); their partial results are
    // accumulated across the tiles instead.
    if (!std::isfinite(best.est) && !f.merged_reduces.empty()) search(row_tiles, true);
  };
  search_all();
  // Still nothing: an input held whole in VMEM (a "small" one: at most 1/8 of its operand's
  // elements, such as a broadcast's source) leaves no room for any tiling: the largest such input
  // is streamed with the operand's blocks instead, each block reading its share of it, and so on
  // until a tiling fits. E.g. a convolution's im2col operand is a broadcast of its input over the
  // kernel positions (compiler/hlo/hlo_import_ops.cc): a 32x56x56x64 bf16 input (12.25 MiB) cannot
  // stay whole in a core's 16 MiB beside the tiles, and is read block by block as XLA reads the
  // input in windows.
  auto stream_largest_small = [&] {
    Operand* from = nullptr;
    size_t at = 0;
    uint64_t most = 0;
    for (Operand& op : ops)
      for (size_t i = 0; i < op.small.size(); ++i)
        if (const uint64_t b = stored_bytes(g, op.small[i]); b > most) from = &op, at = i, most = b;
    if (!from) return false;
    from->large.push_back(from->small[at]);
    from->small.erase(from->small.begin() + long(at));
    from->small_bytes -= most;
    from->large_bytes += most;
    return true;
  };
  while (!std::isfinite(best.est) && stream_largest_small()) search_all();
  if (std::getenv("TPUSIM_DEBUG_TILING"))
    std::fprintf(stderr, "%s: B=%lld M=%lld K=%lld N=%lld -> stream_lhs=%d tr=%lld tc=%lld tk=%lld s_res=%d w_res=%d est=%.0f\n",
                 f.name.c_str(), (long long)B, (long long)M, (long long)K, (long long)N, best.stream_lhs,
                 (long long)best.tr, (long long)best.tc, (long long)best.tk, best.s_res, best.w_res, best.est);
  if (!std::isfinite(best.est))
    throw SimError("kernel '" + f.name + "' cannot be tiled into VMEM (" + std::to_string(vmem) + " bytes)");

  // --- Emit.
  const Operand& S = ops[best.stream_lhs ? 0 : 1];
  const Operand& W = ops[best.stream_lhs ? 1 : 0];
  const int64_t R = best.stream_lhs ? M : N, C = best.stream_lhs ? N : M;
  const int64_t tr = best.tr, tc = best.tc, tk = best.tk;
  const int64_t ri = div_up(R, tr), cj = div_up(C, tc), kb = div_up(K, tk);

  pb.alloc(uint64_t(best.s_buf), best.s_res ? "streamed_panels" : "streamed_blocks");
  pb.alloc(uint64_t(best.w_buf), best.w_res ? "stationary_operand" : "stationary_blocks");
  pb.alloc(uint64_t(best.fixed_buf), "accumulator_output_epilogue");

  isa::Deps small_loads;
  auto small_load = [&](int in) {
    small_loads.push_back(pb.dma_load(stored_bytes(g, in), {}, g.node(in).name, cx.mem_of(in)));
    cx.moved(in, stored_bytes(g, in));
  };
  for (const Operand* op : {&S, &W})
    for (int in : op->small) small_load(in);
  for (int in : epi_small) small_load(in);

  struct Step {
    int64_t b, i, j, k;
  };
  std::vector<Step> steps;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < ri; ++i)
      for (int64_t j = 0; j < cj; ++j)
        for (int64_t k = 0; k < kb; ++k) steps.push_back({b, i, j, k});

  // Operand buffer slots (double buffering). A slot holds one block (non-resident), one panel of
  // tr rows (resident streamed operand) or one batch's whole stationary operand; a load into a
  // slot waits for the last matmuls on each MXU that read the slot's previous owner.
  struct Slot {
    int64_t owner = -1;
    isa::Deps users, prev_users;
    const isa::Deps& war_for(int64_t who) const { return owner == who ? prev_users : users; }
    void record(int64_t who, const isa::Deps& u) {
      if (owner != who) {
        prev_users = users;
        owner = who;
      }
      users = u;
    }
  };
  Slot s_slot[2], w_slot[2];
  auto s_owner = [&](size_t t) { return best.s_res ? steps[t].b * ri + steps[t].i : int64_t(t); };
  auto w_owner = [&](size_t t) { return best.w_res ? steps[t].b : int64_t(t); };
  std::vector<uint32_t> s_ready(steps.size(), 0), w_ready(steps.size(), 0), epi_ready(steps.size(), 0);
  std::vector<bool> has_epi_load(steps.size(), false);
  // The prepared (loaded + converted) block ids, reused by later steps when resident.
  std::vector<uint32_t> s_block(kb, 0), w_block(cj * kb, 0);

  auto rows_in = [&](int64_t i) { return std::min(tr, R - i * tr); };
  auto cols_in = [&](int64_t j) { return std::min(tc, C - j * tc); };
  auto ks_in = [&](int64_t k) { return std::min(tk, K - k * tk); };

  auto prep_block = [&](const Operand& op, double frac, const isa::Deps& war, const char* what) {
    uint32_t last = 0;
    isa::Deps loads;
    for (int in : op.large) {
      uint64_t bytes = uint64_t(std::ceil(double(stored_bytes(g, in)) * frac));
      loads.push_back(pb.dma_load(bytes, war, g.node(in).name, cx.mem_of(in)));
      cx.moved(in, bytes);
    }
    loads.insert(loads.end(), small_loads.begin(), small_loads.end());
    if (loads.empty()) loads = war;
    last = pb.vpu(scale_work(op.prep, frac), loads, what);
    return last;
  };

  auto emit_loads = [&](size_t t) {
    const Step& s = steps[t];
    const bool s_needed = !best.s_res || s.j == 0;
    const bool w_needed = !best.w_res || (s.i == 0);
    if (s_needed) {
      const double frac = double(rows_in(s.i) * ks_in(s.k)) / double(B * R * K);
      const int64_t own = s_owner(t);
      s_block[s.k] = prep_block(S, frac, s_slot[own % 2].war_for(own), "prepare streamed");
    }
    if (w_needed) {
      const double frac = double(ks_in(s.k) * cols_in(s.j)) / double(B * K * C);
      const int64_t own = w_owner(t);
      w_block[s.j * kb + s.k] = prep_block(W, frac, w_slot[own % 2].war_for(own), "prepare stationary");
    }
    s_ready[t] = s_block[s.k];
    w_ready[t] = w_block[s.j * kb + s.k];
    if (s.k == 0 && !epi_large.empty()) {
      const double frac = double(rows_in(s.i) * cols_in(s.j)) / double(B * R * C);
      for (int in : epi_large) {
        uint64_t bytes = uint64_t(std::ceil(double(stored_bytes(g, in)) * frac));
        epi_ready[t] = pb.dma_load(bytes, {}, g.node(in).name, cx.mem_of(in));  // the last one: loads run in order
        cx.moved(in, bytes);
      }
      has_epi_load[t] = true;
    }
  };

  std::vector<std::vector<uint32_t>> mxu_matmuls(n_mxu);  // per MXU, in order
  std::vector<uint32_t> stores;
  uint32_t pending_store = UINT32_MAX;  // a finished tile's epilogue whose store is not issued yet
  uint64_t pending_bytes = 0;
  uint32_t acc_prev = 0, epi_dep = 0;
  bool have_epi_dep = false;
  uint64_t counter = 0;
  std::vector<isa::Deps> step_users(steps.size());
  auto finish = [&](size_t t) {
    const Step& s = steps[t];
    const int64_t rows = rows_in(s.i), cols = cols_in(s.j);
    const uint64_t acc_v = vregs({rows, cols}, DType::kF32);
    isa::Deps adeps = step_users[t];
    if (s.k > 0) adeps.push_back(acc_prev);
    if (s.k == 0 && stores.size() >= best.acc_tiles)  // its accumulator tile has drained to HBM
      adeps.push_back(stores[stores.size() - best.acc_tiles]);
    acc_prev = pb.vpu({acc_v, 0, 0, s.k > 0 ? acc_v : 0, acc_v}, adeps, "accumulate");
    if (s.k == kb - 1) {
      const double frac = double(rows * cols) / double(B * R * C);
      isa::Deps edeps = {acc_prev};
      if (have_epi_dep) edeps.push_back(epi_dep);
      pending_store = pb.vpu(scale_work(epi, frac), edeps, "epilogue");
      pending_bytes = uint64_t(std::ceil(double(out_bytes) * frac));
    }
  };
  // The store of a finished tile is issued after the next step's loads: DMAs issue in program
  // order, and a store waits for its epilogue, so issuing it first would hold the prefetch of the
  // next operands behind the epilogue (XLA's scheduler starts those prefetches first).
  auto flush_store = [&] {
    if (pending_store == UINT32_MAX) return;
    stores.push_back(pb.dma_store(pending_bytes, {pending_store}, root.name, cx.mem_of(f.root)));
    cx.moved(f.root, pending_bytes);
    pending_store = UINT32_MAX;
  };
  // Loads run ahead of the matmuls as far as the buffers allow: a non-resident operand one step
  // (double buffering), a resident one up to the end of the next panel/batch, whose slot's
  // previous owner's readers are known by then. DMAs issue in program order, so emitting loads
  // early is what lets them overlap the stores of earlier tiles.
  size_t next_load = 0;
  auto can_load = [&](size_t u, size_t t) {
    if (u >= steps.size()) return false;
    if ((!best.s_res || !best.w_res) && u > t + 1) return false;
    return s_owner(u) <= s_owner(t) + 1 && w_owner(u) <= w_owner(t) + 1;
  };
  std::vector<uint32_t> last_on;  // per MXU: this step's last matmul
  // Steps between a step's matmuls and the accumulation of their results: one step, plus as many
  // as the array's fill/drain latency spans (at most 3 more: the MXU result buffers are finite).
  const double step_mxu = std::max(1.0, std::floor(step_mxu_cycles(tr, tc, tk, R, C)));
  const size_t lag = 1 + size_t(std::min(3.0, std::ceil(double(mxu_fill_drain_cycles(core.mxu)) / step_mxu)));
  for (size_t t = 0; t < steps.size(); ++t) {
    const Step& s = steps[t];
    while (next_load <= t || can_load(next_load, t)) emit_loads(next_load++);
    flush_store();
    if (has_epi_load[t]) {
      epi_dep = epi_ready[t];
      have_epi_dep = true;
    }
    const int64_t rows = rows_in(s.i), cols = cols_in(s.j), ks = ks_in(s.k);
    last_on.assign(n_mxu, UINT32_MAX);
    for (int64_t kk = 0; kk < div_up(ks, R_); ++kk)
      for (int64_t nn = 0; nn < div_up(cols, C_); ++nn) {
        const uint32_t u = uint32_t(counter++ % n_mxu);
        const uint32_t k_used = uint32_t(std::min(R_, ks - kk * R_));
        const uint32_t n_used = uint32_t(std::min(C_, cols - nn * C_));
        isa::Deps wdeps = {w_ready[t]};
        auto& hist = mxu_matmuls[u];
        if (hist.size() >= core.mxu.weight_buffers) wdeps.push_back(hist[hist.size() - core.mxu.weight_buffers]);
        uint32_t w = pb.mxu_weights(u, k_used, n_used, wdeps);
        uint32_t m = pb.mxu_matmul(u, uint32_t(rows), k_used, n_used, passes, {w, s_ready[t]});
        hist.push_back(m);
        last_on[u] = m;
      }
    isa::Deps users;
    for (uint32_t id : last_on)
      if (id != UINT32_MAX) users.push_back(id);
    // This step's matmuls are the latest readers of its operand buffer slots (a block loaded
    // at step t sits in slot t % 2; resident panels sit in slot i % 2, resident weights in b % 2).
    s_slot[s_owner(t) % 2].record(s_owner(t), users);
    w_slot[w_owner(t) % 2].record(w_owner(t), users);

    step_users[t] = users;
    // Software pipelining: pop and accumulate a step's results `lag` steps later, once they have
    // drained from the arrays, while later steps' matmuls stream (the VPU is in order:
    // accumulating right behind the matmuls would stall the next operands' preparation, and so
    // the MXUs, on the fill/drain latency).
    if (t >= lag) finish(t - lag);
  }
  for (size_t t = steps.size() > lag ? steps.size() - lag : 0; t < steps.size(); ++t) finish(t);
  flush_store();
  if (reduce_out_bytes) {
    const int side = reductions_side(cx, f);
    pb.dma_store(reduce_out_bytes, {stores.back()}, "reductions", cx.mem_of(side));
    cx.moved(side, reduce_out_bytes);
  }
  pb.end_kernel();
}

}  // namespace tpusim::compiler
