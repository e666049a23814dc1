// Flash attention kernels (compiler/lower/lower_attention.cc) compiled alone and simulated: what
// they move and compute is exactly the derivation's (q, the output and the log-sum-exp once, a key
// and a value block per computed pair; 2 x 2 r c d flops per pair forward, 7 backward; the matmuls'
// weight tiles), causal blocks are skipped, the memory plan holds no [S, S] buffer, and the time
// sits on the kernel's roofline (at least its largest bound, at most 1.5 x it: the pipeline keeps
// the units busy).
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "compiler/plan/layout.h"
#include "compiler/plan/memory_plan.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

using models::AttentionAttrs;
using models::DType;

HwConfig v6e() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-8.yaml"); }

struct Built {
  models::Graph g;
  int q = -1, k = -1, v = -1;
  models::Graph::AttentionValues fwd;
  models::Graph::AttentionGrads bwd;
};

// q [1, 4, S, 128], k and v [1, 2, S, 128] in bf16; with `backward`, the backward call too.
Built build(int64_t s, bool causal, bool backward) {
  Built b;
  b.q = b.g.parameter("q", {1, 4, s, 128}, DType::kBF16);
  b.k = b.g.parameter("k", {1, 2, s, 128}, DType::kBF16);
  b.v = b.g.parameter("v", {1, 2, s, 128}, DType::kBF16);
  AttentionAttrs a;
  a.causal = causal;
  a.scale = 1.0 / std::sqrt(128.0);
  b.fwd = b.g.attention(b.q, b.k, b.v, a);
  b.g.mark_output(b.fwd.out);
  b.g.mark_output(b.fwd.lse);
  if (backward) {
    const int dout = b.g.parameter("dout", {1, 4, s, 128}, DType::kBF16);
    b.bwd = b.g.attention_grad(b.q, b.k, b.v, b.fwd.out, b.fwd.lse, dout, a);
    for (int x : {b.bwd.dq, b.bwd.dk, b.bwd.dv}) b.g.mark_output(x);
  }
  return b;
}

TEST(AttentionKernel, ForwardMovesAndComputesWhatTheDerivationSays) {
  const HwConfig hw = v6e();
  const int64_t S = 4096, blocks = S / 512;
  for (bool causal : {false, true}) {
    Built b = build(S, causal, false);
    const isa::Program p = compile_graph(b.g, hw, "attention", 0, 0);
    const uint64_t pairs = causal ? uint64_t(blocks * (blocks + 1) / 2) : uint64_t(blocks * blocks);
    // Per (batch, head) pair: the forward flops of every computed block pair.
    EXPECT_EQ(p.info.flops, 4 * pairs * 2 * 2 * 512 * 512 * 128);
    // q, out and lse once; a 512-row block of k and of v per pair and query head.
    const uint64_t kv_block = stored_bytes(b.g, b.k) / (2 * blocks);
    EXPECT_EQ(p.info.hbm_bytes, stored_bytes(b.g, b.q) + stored_bytes(b.g, b.fwd.out) + stored_bytes(b.g, b.fwd.lse) +
                                    4 * pairs * 2 * kv_block);
    // Two matmuls per pair and head, each of (128 / R) x (512 / C) or (512 / R) x (128 / C) tiles.
    uint64_t matmuls = 0;
    const isa::Program expanded = isa::unshared(p);  // the tile loops expanded
    for (const auto& in : expanded.cores[0].instrs) matmuls += in.op == isa::Op::kMxuMatmul;
    const uint64_t R = hw.chip.core.mxu.rows, C = hw.chip.core.mxu.cols;
    EXPECT_EQ(matmuls, 4 * pairs * (div_up(128, R) * div_up(512, C) + div_up(512, R) * div_up(128, C)));
    const RunResult r = make_engine("analytical", hw)->run(p, nullptr);
    ASSERT_FALSE(r.op_profile.entries.empty());
    const OpProfileEntry& e = r.op_profile.entries.front();
    EXPECT_EQ(e.name, "attention");
    EXPECT_GE(e.time_s, e.max_bound_s());
    EXPECT_LE(e.time_s, 1.5 * e.max_bound_s()) << "bounds: mxu " << e.compute_bound_s << " hbm " << e.memory_bound_s << " vpu "
                                               << e.vpu_bound_s;
  }
}

TEST(AttentionKernel, CausalSkipsAlmostHalfTheWork) {
  const HwConfig hw = v6e();
  auto time = [&](bool causal) {
    Built b = build(4096, causal, true);
    return make_engine("analytical", hw)->run(compile_graph(b.g, hw, "attention", 0, 0), nullptr).device_time_s;
  };
  const double full = time(false), half = time(true);
  // 36 of 64 block pairs: the causal run takes about 36/64 of the time (its diagonal blocks masked).
  EXPECT_GT(half / full, 0.5);
  EXPECT_LT(half / full, 0.65);
}

TEST(AttentionKernel, BackwardIsOneKernelOfSevenMatmulsPerPair) {
  const HwConfig hw = v6e();
  Built b = build(2048, true, true);
  const FusionPlan plan = plan_fusions(b.g);
  int attention = 0;
  for (const Fusion& f : plan.fusions)
    if (f.kind == FusionKind::kAttention) {
      ++attention;
      EXPECT_EQ(kernel_outputs(f).size(), f.root == b.fwd.out ? 2u : 3u);
    }
  EXPECT_EQ(attention, 2);  // the forward (out, lse) and the backward (dq, dk, dv)
  const isa::Program p = compile_graph(b.g, hw, "attention", 0, 0);
  const uint64_t fwd = models::attention_flops(b.g, b.g.node(b.fwd.out)), bwd = models::attention_flops(b.g, b.g.node(b.bwd.dq));
  EXPECT_EQ(bwd * 2, fwd * 7);
  EXPECT_EQ(p.info.flops, fwd + bwd);
  EXPECT_EQ(models::attention_recompute_flops(b.g, b.g.node(b.bwd.dq)) * 7, bwd * 3);
  // No buffer of the memory plan is as large as one head's scores.
  const MemoryPlan mp = plan_memory(b.g, plan, [&](int id) { return buffer_kind_of_role(b.g.node(id).role); });
  for (const HbmBuffer& buf : mp.buffers) EXPECT_LT(buf.bytes, uint64_t(2048) * 2048 * 2) << buf.name;
}

}  // namespace
}  // namespace tpusim::compiler
