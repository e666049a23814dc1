// Flash attention kernels (models::OpKind::kAttention; FlashAttention-2, Dao 2023, as MaxText's
// splash attention and PyTorch/XLA's Pallas flash_attention run it on TPU): for every (batch, head)
// the query blocks (block_q rows) meet the key blocks (block_kv rows) that the causal mask or the
// sliding window do not mask whole (models::attention_blocks); the [block_q, block_kv] scores live
// in vregs and VMEM only.
//
// Forward, per block pair (r query rows, c keys, head size d):
//   MXU  s = q k^T (r x d x c), o += p v (r x c x d)                          2 x 2 r c d flops
//   VPU  on the r x c scores in fp32 vregs: scale 1, row max 1, subtract the max 1, exp 2 + 1 EUP,
//        row sum 1, convert p to bf16 1 ALU op per vreg (7 ALU, 1 EUP), the mask's iota compare and
//        select 2 more on a pair masked in part; a lane reduction per 8-row group for the max and
//        for the sum and a lane broadcast of each row's max and rescale factor (4 XLU per row
//        group); p stored to VMEM for the second matmul; the accumulator o rescaled and summed
//        (2 ALU per vreg of [r, d] fp32, loaded and stored), the row statistics (a few ALU and
//        one EUP op on [r]).
//   per query block: q loaded once, o normalized (1 ALU per vreg, a reciprocal) and stored, the
//   log-sum-exp (m + log l) stored; per pair k and v loaded (Pallas refetches a block whenever its
//   index changes between grid steps, and the key block changes every step).
// Backward (splash attention's three passes, one kernel): D = rowsum(dO * o) per query block (a
// pass over o and dO, stored); the dkv pass, per key block, over its query blocks: q, dO, lse and
// D loaded, s = q k^T and dP = dO v^T recomputed, p = exp(scale s - lse), dS = p (dP - D),
// dv += p^T dO, dk += dS^T q (4 matmuls; p and dS transposed on the XLU), dk and dv stored; the dq
// pass, per query block, over its key blocks: s and dP again, dq += dS k (3 matmuls), dq stored.
//
// Emission: a step per block pair, (batch, head) after (batch, head); each step's loads are issued
// one step ahead (double-buffered blocks: a load waits for the readers of its slot's block two
// loads before), and a step's score matmuls are issued before the previous step's softmax, so that
// the MXUs compute the next scores while the VPU works on the last (software pipelining, as the
// kernels' bundle scheduling overlaps the units). Matmuls go round robin over the MXUs, a weight
// tile waiting for the matmul `weight_buffers` tiles back on its MXU, as in lower_dot.cc.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "compiler/lower/lowering.h"
#include "compiler/plan/layout.h"

namespace tpusim::compiler {

namespace {

using models::AttentionBlock;
using models::AttentionPart;
using models::DType;

// One pass of block pairs: `outer` rows (query blocks, or key blocks for the dkv pass), each with
// its inner blocks, for every (batch, head).
struct PassStep {
  int64_t head = 0;   // batch x heads + head
  int64_t outer = 0;  // block index along the outer loop
  AttentionBlock pair;
  bool first = false, last = false;  // first and last step of its outer block
};

std::vector<PassStep> pass_steps(const std::vector<AttentionBlock>& blocks, int64_t heads, bool by_key) {
  std::vector<AttentionBlock> order = blocks;
  if (by_key)
    std::stable_sort(order.begin(), order.end(), [](const AttentionBlock& a, const AttentionBlock& b) { return a.j < b.j; });
  std::vector<PassStep> steps;
  steps.reserve(order.size() * size_t(heads));
  for (int64_t h = 0; h < heads; ++h)
    for (size_t t = 0; t < order.size(); ++t) {
      const int64_t outer = by_key ? order[t].j : order[t].i;
      const bool first = t == 0 || (by_key ? order[t - 1].j : order[t - 1].i) != outer;
      const bool last = t + 1 == order.size() || (by_key ? order[t + 1].j : order[t + 1].i) != outer;
      steps.push_back({h, outer, order[t], first, last});
    }
  return steps;
}

class AttentionEmitter {
 public:
  AttentionEmitter(LowerContext& cx, const Fusion& f) : cx_(cx), g_(cx.graph), pb_(cx.pb), mxu_(cx.hw.chip.core.mxu) {
    for (int x : kernel_outputs(f)) part_[size_t(g_.node(x).attention.part)] = x;
    const models::Node& root = g_.node(f.root);
    a_ = root.attention;
    q_ = root.inputs[0], k_ = root.inputs[1], v_ = root.inputs[2];
    if (root.inputs.size() == 6) o_ = root.inputs[3], lse_ = root.inputs[4], dout_ = root.inputs[5];
    const models::Dims& qs = g_.node(q_).shape;
    const models::Dims& ks = g_.node(k_).shape;
    heads_ = qs[0] * qs[1];
    s_ = qs[2], skv_ = ks[2], d_ = qs[3];
    blocks_ = models::attention_blocks(s_, skv_, a_);
    backward_ = part_[size_t(AttentionPart::kDq)] >= 0;
    mxu_hist_.resize(mxu_.count);
  }

  void emit() {
    const uint64_t bq = uint64_t(std::min(a_.block_q, s_)), bk = uint64_t(std::min(a_.block_kv, skv_)), d = uint64_t(d_);
    const uint64_t e = models::dtype_bytes(g_.node(q_).dtype);
    // Double-buffered q, k, v (and dO) blocks, the scores and probabilities, the accumulators.
    const uint64_t vmem = 2 * (bq + 2 * bk) * d * e * (backward_ ? 2 : 1) + bq * bk * (4 + 2) * (backward_ ? 2 : 1) +
                          (bq + 2 * bk) * d * 4 + 4 * bq * 4;
    if (vmem > pb_.vmem_available())
      throw SimError("attention kernel: blocks of " + std::to_string(bq) + " x " + std::to_string(bk) + " need " +
                     std::to_string(vmem) + " bytes of VMEM (" + std::to_string(pb_.vmem_available()) + " available)");
    pb_.alloc(vmem, "attention_blocks");
    if (backward_) {
      backward();
    } else {
      forward();
    }
  }

 private:
  // A block of `rows` rows of node x (its [B, heads, S, ...] rows): its share of the stored bytes.
  uint64_t block_bytes(int x, int64_t rows) const {
    const models::Dims& s = g_.node(x).shape;
    const int64_t all_rows = s[0] * s[1] * s[2];
    return uint64_t(std::ceil(double(stored_bytes(g_, x)) * double(rows) / double(all_rows)));
  }
  uint32_t load(int x, int64_t rows, const isa::Deps& deps) {
    const uint64_t b = block_bytes(x, rows);
    cx_.moved(x, b);
    return pb_.dma_load(b, deps, g_.node(x).name, cx_.mem_of(x));
  }
  uint32_t store(int x, int64_t rows, const isa::Deps& deps) {
    const uint64_t b = block_bytes(x, rows);
    cx_.moved(x, b);
    return pb_.dma_store(b, deps, g_.node(x).name, cx_.mem_of(x));
  }
  // (rows x k) . (k x n) on the MXUs: weight tiles of at most R x C, round robin; returns the last
  // matmul on each MXU used.
  isa::Deps matmul(int64_t rows, int64_t k, int64_t n, const isa::Deps& deps) {
    std::vector<uint32_t> last(mxu_.count, UINT32_MAX);
    for (int64_t kk = 0; kk < k; kk += mxu_.rows)
      for (int64_t nn = 0; nn < n; nn += mxu_.cols) {
        const uint32_t u = uint32_t(counter_++ % mxu_.count);
        const uint32_t k_used = uint32_t(std::min<int64_t>(mxu_.rows, k - kk)), n_used = uint32_t(std::min<int64_t>(mxu_.cols, n - nn));
        isa::Deps wdeps = deps;
        std::vector<uint32_t>& hist = mxu_hist_[u];
        if (hist.size() >= mxu_.weight_buffers) wdeps.push_back(hist[hist.size() - mxu_.weight_buffers]);
        const uint32_t w = pb_.mxu_weights(u, k_used, n_used, wdeps);
        isa::Deps mdeps = deps;
        mdeps.push_back(w);
        last[u] = pb_.mxu_matmul(u, uint32_t(rows), k_used, n_used, 1, mdeps);
        hist.push_back(last[u]);
      }
    isa::Deps users;
    for (uint32_t id : last)
      if (id != UINT32_MAX) users.push_back(id);
    return users;
  }
  static isa::Deps join(isa::Deps a, const isa::Deps& b) {
    for (uint32_t x : b) a.push_back(x);
    return a;
  }

  // VPU work of the softmax on an r x c block of scores (the header's counts).
  isa::VpuWork softmax_work(const AttentionBlock& p) const {
    const uint64_t sv = vregs({p.rows, p.cols}, DType::kF32), pv = vregs({p.rows, p.cols}, DType::kBF16);
    const uint64_t rg = uint64_t((p.rows + 7) / 8), rs = vregs({p.rows}, DType::kF32);
    return {7 * sv + (p.masked ? 2 * sv : 0) + 6 * rs, sv + rs, 4 * rg, 0, pv};
  }
  // The accumulator [rows, d] fp32: rescaled (alu_per) and summed, loaded and stored.
  isa::VpuWork accumulate_work(int64_t rows, uint64_t alu_per) const {
    const uint64_t av = vregs({rows, d_}, DType::kF32);
    return {alu_per * av, 0, 0, av, av};
  }

  // The software pipeline of one pass over `n` steps: step t's loads are issued at step t - 1, its
  // score matmuls at step t, its softmax (VPU) at step t + 1 followed by its second matmuls, and its
  // accumulation at step t + 2 (the matmul results drained meanwhile): the VPU's in-order queue
  // alternates one step's softmax with the previous step's accumulation, and the MXUs compute the
  // next scores and this step's products while it works.
  struct Stages {
    std::function<void(size_t)> loads, scores, softmax, products, accumulate;
  };
  static void pipeline(size_t n, const Stages& st) {
    if (n == 0) return;
    st.loads(0);
    for (size_t t = 0; t < n; ++t) {
      if (t + 1 < n) st.loads(t + 1);
      st.scores(t);
      if (t >= 1) st.softmax(t - 1);
      if (t >= 2) st.accumulate(t - 2);
      if (t >= 1) st.products(t - 1);
    }
    st.softmax(n - 1);
    if (n >= 2) st.accumulate(n - 2);
    st.products(n - 1);
    st.accumulate(n - 1);
  }

  void forward() {
    const int out = part_[size_t(AttentionPart::kOut)], lse = part_[size_t(AttentionPart::kLse)];
    const std::vector<PassStep> steps = pass_steps(blocks_, heads_, false);
    const size_t n = steps.size();
    std::vector<uint32_t> q_load(n), k_load(n), v_load(n), soft(n);
    std::vector<isa::Deps> s_users(n), pv_users(n), k_users(n), v_users(n);
    std::vector<isa::Deps> q_users;  // per query block loaded: its score matmuls
    isa::Deps acc, stats;            // the accumulator's and the row statistics' last updates
    auto war = [](const std::vector<isa::Deps>& users, size_t t) { return t >= 2 ? users[t - 2] : isa::Deps{}; };
    Stages st;
    st.loads = [&](size_t t) {
      const PassStep& s = steps[t];
      if (s.first) {
        q_load[t] = load(q_, s.pair.rows, q_users.size() >= 2 ? q_users[q_users.size() - 2] : isa::Deps{});
        q_users.emplace_back();
      } else {
        q_load[t] = q_load[t - 1];
      }
      k_load[t] = load(k_, s.pair.cols, war(k_users, t));
      v_load[t] = load(v_, s.pair.cols, war(v_users, t));
    };
    st.scores = [&](size_t t) {
      s_users[t] = k_users[t] = matmul(steps[t].pair.rows, d_, steps[t].pair.cols, {q_load[t], k_load[t]});
      q_users.back() = join(q_users.back(), s_users[t]);
    };
    st.softmax = [&](size_t t) {
      soft[t] = pb_.vpu(softmax_work(steps[t].pair), join(s_users[t], steps[t].first ? isa::Deps{} : stats), "softmax");
      stats = {soft[t]};
    };
    st.products = [&](size_t t) { pv_users[t] = v_users[t] = matmul(steps[t].pair.rows, steps[t].pair.cols, d_, {soft[t], v_load[t]}); };
    st.accumulate = [&](size_t t) {
      const PassStep& s = steps[t];
      acc = {pb_.vpu(accumulate_work(s.pair.rows, 2), join(pv_users[t], s.first ? isa::Deps{} : acc), "accumulate")};
      if (!s.last) return;  // normalize by the row sums, store the block and its log-sum-exp
      const uint64_t rs = vregs({s.pair.rows}, DType::kF32), rg = uint64_t((s.pair.rows + 7) / 8);
      const uint64_t av = vregs({s.pair.rows, d_}, DType::kF32);
      const uint32_t fin = pb_.vpu({av + 2 * rs, 2 * rs, rg, av, vregs({s.pair.rows, d_}, g_.node(out).dtype)}, acc, "normalize");
      // A part no one reads is not written (the forward of a recomputed layer: its lse unused).
      if (out >= 0) store(out, s.pair.rows, {fin});
      if (lse >= 0) store(lse, s.pair.rows, {fin});
    };
    pipeline(n, st);
  }

  // p = exp(scale s - lse) (with the mask), dS = p (dP - D), both converted to bf16 (and, for the
  // dkv pass, transposed for their matmuls).
  isa::VpuWork backward_work(const AttentionBlock& p, bool transpose) const {
    const uint64_t sv = vregs({p.rows, p.cols}, DType::kF32), pv = vregs({p.rows, p.cols}, DType::kBF16);
    const uint64_t rg = uint64_t((p.rows + 7) / 8);
    return {8 * sv + (p.masked ? 2 * sv : 0), sv, 2 * rg + (transpose ? 2 * pv : 0), 0, 2 * pv};
  }

  void backward() {
    const int dq = part_[size_t(AttentionPart::kDq)], dk = part_[size_t(AttentionPart::kDk)], dv = part_[size_t(AttentionPart::kDv)];
    // D = rowsum(dO * o), per query block of every head (stored beside lse, read by both passes).
    const int64_t bq = std::min(a_.block_q, s_);
    isa::Deps d_stores;
    for (int64_t h = 0; h < heads_; ++h)
      for (int64_t r0 = 0; r0 < s_; r0 += bq) {
        const int64_t rows = std::min(bq, s_ - r0);
        const uint32_t lo = load(o_, rows, {}), ld = load(dout_, rows, {});
        const uint64_t av = vregs({rows, d_}, DType::kF32);
        const uint32_t w = pb_.vpu({2 * av, 0, uint64_t((rows + 7) / 8), 2 * vregs({rows, d_}, g_.node(o_).dtype), 0}, {lo, ld}, "rowsum");
        d_stores.push_back(store(lse_, rows, {w}));  // D: [rows] fp32, the size of an lse block
      }
    pass(true, dk, dv, d_stores);
    pass(false, dq, -1, d_stores);
  }

  // The dkv pass (by_key: per key block, its query blocks; 4 matmuls) or the dq pass (per query
  // block, its key blocks; 3 matmuls), on the pipeline above.
  void pass(bool by_key, int out1, int out2, const isa::Deps& after) {
    const std::vector<PassStep> steps = pass_steps(blocks_, heads_, by_key);
    const size_t n = steps.size();
    std::vector<isa::Deps> in(n), users(n), scores(n), products(n);  // per step
    std::vector<uint32_t> grad(n);
    isa::Deps acc, outer;  // the accumulators' last update; the outer block's loads
    auto war = [&](size_t t) { return t >= 2 ? users[t - 2] : (t == 0 ? after : isa::Deps{}); };
    Stages st;
    st.loads = [&](size_t t) {
      const PassStep& s = steps[t];
      const int64_t r = s.pair.rows, c = s.pair.cols;
      // The inner blocks every step, the outer block's once (kept in VMEM for its row).
      isa::Deps l;
      if (s.first) outer.clear();
      if (by_key) {
        for (int x : {q_, dout_}) l.push_back(load(x, r, war(t)));
        l.push_back(load(lse_, r, war(t)));
        l.push_back(load(lse_, r, war(t)));  // D
        if (s.first)
          for (int x : {k_, v_}) outer.push_back(load(x, c, war(t)));
      } else {
        for (int x : {k_, v_}) l.push_back(load(x, c, war(t)));
        if (s.first) {
          for (int x : {q_, dout_}) outer.push_back(load(x, r, war(t)));
          outer.push_back(load(lse_, r, war(t)));
          outer.push_back(load(lse_, r, war(t)));  // D
        }
      }
      in[t] = join(l, outer);
    };
    st.scores = [&](size_t t) {  // s = q k^T, dP = dO v^T
      const int64_t r = steps[t].pair.rows, c = steps[t].pair.cols;
      scores[t] = join(matmul(r, d_, c, in[t]), matmul(r, d_, c, in[t]));
    };
    st.softmax = [&](size_t t) { grad[t] = pb_.vpu(backward_work(steps[t].pair, by_key), scores[t], "softmax grad"); };
    st.products = [&](size_t t) {
      const int64_t r = steps[t].pair.rows, c = steps[t].pair.cols;
      const isa::Deps deps = join({grad[t]}, in[t]);
      // dkv: dv += p^T dO and dk += dS^T q, [c, r] x [r, d]; dq: dq += dS k, [r, c] x [c, d].
      products[t] = by_key ? join(matmul(c, r, d_, deps), matmul(c, r, d_, deps)) : matmul(r, c, d_, deps);
      users[t] = join(scores[t], products[t]);
    };
    st.accumulate = [&](size_t t) {
      const PassStep& s = steps[t];
      const int64_t rows = by_key ? s.pair.cols : s.pair.rows;
      acc = {pb_.vpu(accumulate_work(rows, by_key ? 2 : 1), join(products[t], s.first ? isa::Deps{} : acc), "accumulate")};
      if (!s.last) return;
      if (out1 >= 0) store(out1, rows, acc);
      if (out2 >= 0) store(out2, rows, acc);
    };
    pipeline(n, st);
  }

  LowerContext& cx_;
  const models::Graph& g_;
  ProgramBuilder& pb_;
  const MxuParams& mxu_;
  models::AttentionAttrs a_;
  int part_[5] = {-1, -1, -1, -1, -1};
  int q_ = -1, k_ = -1, v_ = -1, o_ = -1, lse_ = -1, dout_ = -1;
  int64_t heads_ = 0, s_ = 0, skv_ = 0, d_ = 0;
  std::vector<AttentionBlock> blocks_;
  bool backward_ = false;
  std::vector<std::vector<uint32_t>> mxu_hist_;
  uint64_t counter_ = 0;
};

}  // namespace

void lower_attention_kernel(LowerContext& cx, const Fusion& f) {
  cx.pb.begin_kernel(f.name);
  for (int x : kernel_outputs(f)) cx.flops += models::attention_flops(cx.graph, cx.graph.node(x));
  AttentionEmitter(cx, f).emit();
  cx.pb.end_kernel();
}

}  // namespace tpusim::compiler
