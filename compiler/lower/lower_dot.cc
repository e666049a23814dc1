// Dot kernels on the MXUs: the kernel's ops split around its dot (dot_parts.h), a tiling chosen
// for them (dot_tiling.h), and the emission below, which walks the tiling's steps:
//   * operand blocks are loaded and prepared on the VPU (converted to bf16, fused producers) into
//     double-buffered slots, as far ahead as the buffers allow;
//   * each step's blocks are pushed through the MXUs as weight tiles of at most R x C, round robin
//     over the arrays, each MXU keeping weight_buffers tiles (the next loads while one streams);
//   * a step's results are accumulated in fp32 some steps later (after the arrays' fill/drain), a
//     finished tile's epilogue runs in place and its store is issued after the next step's loads.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "compiler/lower/dot_parts.h"
#include "compiler/lower/dot_tiling.h"
#include "compiler/lower/lowering.h"
#include "compiler/lower/vector_cost.h"
#include "compiler/plan/layout.h"

namespace tpusim::compiler {

using models::DType;

namespace {

// A double-buffered operand slot. It holds one block (non-resident), one panel of tr rows
// (resident streamed operand) or one batch's whole stationary operand; a load into a slot waits
// for the last matmuls on each MXU that read the slot's previous owner.
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

// One streamed or stationary operand as emitted: its inputs after the tiling's choice of which
// small inputs are streamed, and its preparation work.
struct OperandInputs {
  std::vector<int> large, small;
  isa::VpuWork prep;
};

OperandInputs operand_inputs(const DotKernelParts& parts, const DotTiling& t, int o) {
  OperandInputs op{parts.large[o], {}, parts.problem.operands[o].prep};
  const std::vector<size_t>& streamed = t.streamed_small[o];
  for (size_t i : streamed) op.large.push_back(parts.small[o][i]);
  for (size_t i = 0; i < parts.small[o].size(); ++i)
    if (std::find(streamed.begin(), streamed.end(), i) == streamed.end()) op.small.push_back(parts.small[o][i]);
  return op;
}

class DotEmitter {
 public:
  DotEmitter(LowerContext& cx, const Fusion& f, const DotKernelParts& parts, const DotTiling& t)
      : cx_(cx), g_(cx.graph), pb_(cx.pb), mxu_(cx.hw.chip.core.mxu), f_(f), parts_(parts), t_(t),
        streamed_(operand_inputs(parts, t, t.stream_lhs ? 0 : 1)), stationary_(operand_inputs(parts, t, t.stream_lhs ? 1 : 0)),
        steps_(dot_steps(t)), s_ready_(steps_.size(), 0), w_ready_(steps_.size(), 0), epi_ready_(steps_.size(), 0),
        has_epi_load_(steps_.size(), false), s_block_(size_t(t.k_blocks), 0),
        w_block_(size_t(t.col_tiles * t.k_blocks), 0), mxu_matmuls_(mxu_.count), step_users_(steps_.size()) {}

  void emit();

 private:
  // The slot owner of step t's operand: a block per step, or a resident panel / batch.
  int64_t s_owner(size_t t) const { return t_.streamed_resident ? steps_[t].b * t_.row_tiles + steps_[t].i : int64_t(t); }
  int64_t w_owner(size_t t) const { return t_.stationary_resident ? steps_[t].b : int64_t(t); }

  void load_small_inputs();
  uint32_t prep_block(const OperandInputs& op, double frac, const isa::Deps& war, const char* what);
  void emit_loads(size_t t);
  bool can_load(size_t u, size_t t) const;
  void emit_matmuls(size_t t);
  void finish(size_t t);
  void flush_store();

  LowerContext& cx_;
  const models::Graph& g_;
  ProgramBuilder& pb_;
  const MxuParams& mxu_;
  const Fusion& f_;
  const DotKernelParts& parts_;
  const DotTiling& t_;
  const OperandInputs streamed_, stationary_;
  const std::vector<DotStep> steps_;

  isa::Deps small_loads_;
  Slot s_slot_[2], w_slot_[2];
  std::vector<uint32_t> s_ready_, w_ready_, epi_ready_;  // per step: its prepared blocks, epilogue inputs
  std::vector<bool> has_epi_load_;
  // The prepared (loaded + converted) block ids, reused by later steps when resident.
  std::vector<uint32_t> s_block_, w_block_;
  std::vector<std::vector<uint32_t>> mxu_matmuls_;  // per MXU, in order
  std::vector<uint32_t> last_on_;                   // per MXU: the current step's last matmul
  uint64_t counter_ = 0;                            // matmuls issued (round robin over the MXUs)
  std::vector<isa::Deps> step_users_;               // per step: its last matmul on each MXU
  std::vector<uint32_t> stores_;
  uint32_t pending_store_ = UINT32_MAX;  // a finished tile's epilogue whose store is not issued yet
  uint64_t pending_bytes_ = 0;
  uint32_t acc_prev_ = 0, epi_dep_ = 0;
  bool have_epi_dep_ = false;
};

// Small inputs are loaded whole, once, before any block.
void DotEmitter::load_small_inputs() {
  auto load = [&](int in) {
    small_loads_.push_back(pb_.dma_load(stored_bytes(g_, in), {}, g_.node(in).name, cx_.mem_of(in)));
    cx_.moved(in, stored_bytes(g_, in));
  };
  for (const OperandInputs* op : {&streamed_, &stationary_})
    for (int in : op->small) load(in);
  for (int in : parts_.epilogue_small) load(in);
}

// Loads fraction `frac` of each of the operand's large inputs and prepares the block on the VPU.
uint32_t DotEmitter::prep_block(const OperandInputs& op, double frac, const isa::Deps& war, const char* what) {
  isa::Deps loads;
  for (int in : op.large) {
    uint64_t bytes = uint64_t(std::ceil(double(stored_bytes(g_, in)) * frac));
    loads.push_back(pb_.dma_load(bytes, war, g_.node(in).name, cx_.mem_of(in)));
    cx_.moved(in, bytes);
  }
  loads.insert(loads.end(), small_loads_.begin(), small_loads_.end());
  if (loads.empty()) loads = war;
  return pb_.vpu(scale_work(op.prep, frac), loads, what);
}

// Step t's operand blocks (unless resident and already loaded) and, at the start of a tile, the
// epilogue's inputs for it.
void DotEmitter::emit_loads(size_t t) {
  const DotStep& s = steps_[t];
  const int64_t B = t_.batch, R = t_.r, C = t_.c, K = t_.k, kb = t_.k_blocks;
  const bool s_needed = !t_.streamed_resident || s.j == 0;
  const bool w_needed = !t_.stationary_resident || (s.i == 0);
  if (s_needed) {
    const double frac = double(t_.rows_in(s.i) * t_.depth_in(s.k)) / double(B * R * K);
    const int64_t own = s_owner(t);
    s_block_[s.k] = prep_block(streamed_, frac, s_slot_[own % 2].war_for(own), "prepare streamed");
  }
  if (w_needed) {
    const double frac = double(t_.depth_in(s.k) * t_.cols_in(s.j)) / double(B * K * C);
    const int64_t own = w_owner(t);
    w_block_[s.j * kb + s.k] = prep_block(stationary_, frac, w_slot_[own % 2].war_for(own), "prepare stationary");
  }
  s_ready_[t] = s_block_[s.k];
  w_ready_[t] = w_block_[s.j * kb + s.k];
  if (s.k == 0 && !parts_.epilogue_large.empty()) {
    const double frac = double(t_.rows_in(s.i) * t_.cols_in(s.j)) / double(B * R * C);
    for (int in : parts_.epilogue_large) {
      uint64_t bytes = uint64_t(std::ceil(double(stored_bytes(g_, in)) * frac));
      epi_ready_[t] = pb_.dma_load(bytes, {}, g_.node(in).name, cx_.mem_of(in));  // the last one: loads run in order
      cx_.moved(in, bytes);
    }
    has_epi_load_[t] = true;
  }
}

// Loads run ahead of the matmuls as far as the buffers allow: a non-resident operand one step
// (double buffering), a resident one up to the end of the next panel/batch, whose slot's
// previous owner's readers are known by then. DMAs issue in program order, so emitting loads
// early is what lets them overlap the stores of earlier tiles.
bool DotEmitter::can_load(size_t u, size_t t) const {
  if (u >= steps_.size()) return false;
  if ((!t_.streamed_resident || !t_.stationary_resident) && u > t + 1) return false;
  return s_owner(u) <= s_owner(t) + 1 && w_owner(u) <= w_owner(t) + 1;
}

// Step t's weight tiles and matmuls, round robin over the MXUs; a weight load waits for the
// matmul that last used its weight buffer.
void DotEmitter::emit_matmuls(size_t t) {
  const DotStep& s = steps_[t];
  const int64_t array_rows = mxu_.rows, array_cols = mxu_.cols;
  const int64_t rows = t_.rows_in(s.i), cols = t_.cols_in(s.j), ks = t_.depth_in(s.k);
  last_on_.assign(mxu_.count, UINT32_MAX);
  for (int64_t kk = 0; kk < div_up(ks, array_rows); ++kk)
    for (int64_t nn = 0; nn < div_up(cols, array_cols); ++nn) {
      const uint32_t u = uint32_t(counter_++ % mxu_.count);
      const uint32_t k_used = uint32_t(std::min(array_rows, ks - kk * array_rows));
      const uint32_t n_used = uint32_t(std::min(array_cols, cols - nn * array_cols));
      isa::Deps wdeps = {w_ready_[t]};
      auto& hist = mxu_matmuls_[u];
      if (hist.size() >= mxu_.weight_buffers) wdeps.push_back(hist[hist.size() - mxu_.weight_buffers]);
      uint32_t w = pb_.mxu_weights(u, k_used, n_used, wdeps);
      uint32_t m = pb_.mxu_matmul(u, uint32_t(rows), k_used, n_used, parts_.problem.passes, {w, s_ready_[t]}, parts_.problem.packing);
      hist.push_back(m);
      last_on_[u] = m;
    }
  isa::Deps users;
  for (uint32_t id : last_on_)
    if (id != UINT32_MAX) users.push_back(id);
  // This step's matmuls are the latest readers of its operand buffer slots (a block loaded
  // at step t sits in slot t % 2; resident panels sit in slot i % 2, resident weights in b % 2).
  s_slot_[s_owner(t) % 2].record(s_owner(t), users);
  w_slot_[w_owner(t) % 2].record(w_owner(t), users);
  step_users_[t] = users;
}

// Accumulates step t's results into its tile; after the last K block, the tile's epilogue.
void DotEmitter::finish(size_t t) {
  const DotStep& s = steps_[t];
  const int64_t rows = t_.rows_in(s.i), cols = t_.cols_in(s.j);
  const uint64_t acc_v = vregs({rows, cols}, DType::kF32);
  isa::Deps adeps = step_users_[t];
  if (s.k > 0) adeps.push_back(acc_prev_);
  if (s.k == 0 && stores_.size() >= t_.acc_tiles)  // its accumulator tile has drained to HBM
    adeps.push_back(stores_[stores_.size() - t_.acc_tiles]);
  acc_prev_ = pb_.vpu({acc_v, 0, 0, s.k > 0 ? acc_v : 0, acc_v}, adeps, "accumulate");
  if (s.k == t_.k_blocks - 1) {
    const double frac = double(rows * cols) / double(t_.batch * t_.r * t_.c);
    isa::Deps edeps = {acc_prev_};
    if (have_epi_dep_) edeps.push_back(epi_dep_);
    pending_store_ = pb_.vpu(scale_work(parts_.problem.epilogue, frac), edeps, "epilogue");
    pending_bytes_ = uint64_t(std::ceil(double(parts_.problem.out_bytes) * frac));
  }
}

// The store of a finished tile is issued after the next step's loads: DMAs issue in program
// order, and a store waits for its epilogue, so issuing it first would hold the prefetch of the
// next operands behind the epilogue (XLA's scheduler starts those prefetches first).
void DotEmitter::flush_store() {
  if (pending_store_ == UINT32_MAX) return;
  stores_.push_back(pb_.dma_store(pending_bytes_, {pending_store_}, g_.node(f_.root).name, cx_.mem_of(f_.root)));
  cx_.moved(f_.root, pending_bytes_);
  pending_store_ = UINT32_MAX;
}

void DotEmitter::emit() {
  pb_.alloc(t_.streamed_buffer_bytes, t_.streamed_resident ? "streamed_panels" : "streamed_blocks");
  pb_.alloc(t_.stationary_buffer_bytes, t_.stationary_resident ? "stationary_operand" : "stationary_blocks");
  pb_.alloc(t_.fixed_buffer_bytes, "accumulator_output_epilogue");
  load_small_inputs();
  const size_t lag = t_.accumulate_lag_steps;
  size_t next_load = 0;
  for (size_t t = 0; t < steps_.size(); ++t) {
    while (next_load <= t || can_load(next_load, t)) emit_loads(next_load++);
    flush_store();
    if (has_epi_load_[t]) {
      epi_dep_ = epi_ready_[t];
      have_epi_dep_ = true;
    }
    emit_matmuls(t);
    // Software pipelining: pop and accumulate a step's results `lag` steps later, once they have
    // drained from the arrays, while later steps' matmuls stream (the VPU is in order:
    // accumulating right behind the matmuls would stall the next operands' preparation, and so
    // the MXUs, on the fill/drain latency).
    if (t >= lag) finish(t - lag);
  }
  for (size_t t = steps_.size() > lag ? steps_.size() - lag : 0; t < steps_.size(); ++t) finish(t);
  flush_store();
  if (const uint64_t bytes = parts_.problem.reduce_out_bytes) {
    const int side = reductions_side(cx_, f_);
    pb_.dma_store(bytes, {stores_.back()}, kReductionsLabel, cx_.mem_of(side));
    cx_.moved(side, bytes);
  }
}

}  // namespace

void lower_dot_kernel(LowerContext& cx, const Fusion& f) {
  cx.pb.begin_kernel(f.name);
  DotKernelParts parts = split_dot_kernel(cx.graph, f, cx.hw.chip.core.vpu);
  const models::DotPrecision precision = cx.graph.node(f.dot).precision;
  if (models::is_quantized(precision)) {  // the chip's int8 / fp8 rate: rows per bf16 row slot
    const MxuParams& mxu = cx.hw.chip.core.mxu;
    const uint32_t rate = precision == models::DotPrecision::kInt8 ? mxu.int8_rate : mxu.fp8_rate;
    if (rate == 0)
      throw SimError("kernel '" + f.name + "': the " + cx.hw.chip.generation + " MXU has no " +
                     models::dot_precision_name(precision) + " matmul (chip mxu." +
                     models::dot_precision_name(precision) + "_rate is 0)");
    parts.problem.packing = rate;
  }
  const DotProblem& p = parts.problem;
  cx.flops += models::dot_flops(cx.graph, cx.graph.node(f.dot));  // = 2 B M K N
  const uint64_t vmem = cx.pb.vmem_available();  // less what background work keeps (program_builder.h)
  const DotTiling t = choose_dot_tiling(p, cx.hw, vmem);
  if (std::getenv("TPUSIM_DEBUG_TILING"))
    std::fprintf(stderr, "%s: B=%lld M=%lld K=%lld N=%lld -> stream_lhs=%d tr=%lld tc=%lld tk=%lld s_res=%d w_res=%d est=%.0f\n",
                 f.name.c_str(), (long long)p.batch, (long long)p.m, (long long)p.k, (long long)p.n, t.stream_lhs,
                 (long long)t.tr, (long long)t.tc, (long long)t.tk, t.streamed_resident, t.stationary_resident,
                 t.est_cycles);
  if (!t.fits) throw SimError("kernel '" + f.name + "' cannot be tiled into VMEM (" + std::to_string(vmem) + " bytes)");
  DotEmitter(cx, f, parts, t).emit();
  cx.pb.end_kernel();
}

}  // namespace tpusim::compiler
