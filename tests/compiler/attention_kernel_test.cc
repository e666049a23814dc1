// Flash attention kernels (compiler/lower/lower_attention.cc) compiled alone and simulated: one
// block pair forward and backward cycle by cycle, with the derivation, on both engines; what
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
#include "tests/sim/test_hw.h"

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

// One block pair (1 head, 128 queries, 128 keys, head size 128, bf16; blocks of 128) on
// test::v3_8_ici() (the shipped configs' 2 KiB HBM requests) at 940 MHz, cycle by cycle. The rules
// (tests/sim/exact_cycle_cases.h): launch 2000, DMA setup 64, HBM latency 235, 430.851 B/cycle per
// core; weights 128/8 = 16 cycles, a matmul streams its 128 rows then fill + drain 256; a VPU block
// takes the largest of ceil(ALU / 2), 4 per EUP, 8 per XLU, 1 per load or store vreg, then the
// latency 32. The instructions, in order (one unit each, in order per unit):
//   q, k, v loads (32,768 B each: 76.053 cycles of the core's bandwidth), issued at 2000;
//   s = q k^T: weights on MXU 0 and 128 rows (after q and k);
//   softmax on [128, 128] fp32 (16 vregs; bf16 8; 16 row groups; the row statistics 1 vreg):
//     ALU 7 x 16 + 6 = 118 (59), EUP 17 (68), XLU 4 x 16 = 64 (512), stores 8: 512 cycles;
//   o = p v on MXU 1: weights and 128 rows (after the softmax and v);
//   accumulate (32 ALU, 16 loads, 16 stores): 16 cycles; normalize (ALU 18, EUP 2, XLU 16, loads 16,
//     stores 8): 128 cycles;
//   out (32,768 B) and the log-sum-exp (one padded [8, 128] fp32 tile, 4,096 B) stored.
// Analytical engine (the core's HBM one server, each transfer holding it for whole cycles,
// ceil(76.05) = 77 and ceil(9.51) = 10):
//   q 2064..2141, done 2376; k 2141..2218, done 2453; v 2218..2295, done 2530;
//   weights 2453..2469, rows 2469..2597, done 2853; softmax 2853..3365, done 3397;
//   weights 3397..3413, rows 3413..3541, done 3797; accumulate 3797..3813, done 3845;
//   normalize 3845..3973, done 4005; out 4069..4146, done 4381; lse 4146..4156, done 4391.
// SystemC (each transfer's 2 KiB requests spread over the core's 16 channels, 76.05 cycles each,
// queued per channel): q done ceil(2140.05) + 235 = 2376, k ceil(2216.11) + 235 = 2452, v 2528;
//   the same chain 1 cycle earlier to the normalize, done 4004; out ceil(4144.05) + 235 = 4380;
//   the lse's two requests queue behind out's on channels 0 and 1: ceil(4068 + 2 x 76.05) + 235 =
//   4456 (the analytical engine, one server for all 16 channels, finishes them 65 cycles sooner).
TEST(AttentionKernel, OneBlockPairTakesTheDerivedCycles) {
  const HwConfig hw = test::v3_8_ici();
  models::Graph g;
  const int q = g.parameter("q", {1, 1, 128, 128}, DType::kBF16), k = g.parameter("k", {1, 1, 128, 128}, DType::kBF16),
            v = g.parameter("v", {1, 1, 128, 128}, DType::kBF16);
  AttentionAttrs a;
  a.causal = false;
  a.scale = 1.0 / std::sqrt(128.0);
  a.block_q = a.block_kv = 128;
  const models::Graph::AttentionValues o = g.attention(q, k, v, a);
  g.mark_output(o.out);
  g.mark_output(o.lse);
  const isa::Program p = compile_graph(g, hw, "attention", 0, 0);
  EXPECT_EQ(make_engine("analytical", hw)->run(p, nullptr).device_cycles, 4391u);
  EXPECT_EQ(make_engine("systemc", hw)->run(p, nullptr).device_cycles, 4456u);
}

// The backward of the same block pair (o, the log-sum-exp and dO given), cycle by cycle on the
// analytical engine (the rules above; 4 DMA engines, a load waiting for a free one in order):
//   D = rowsum(dO * o): o 2064..2141, done 2376; dO 2141..2218, done 2453; VPU (32 ALU, 16 XLU,
//     16 loads) 2453..2581, done 2613; D (4,096 B) stored 2677..2687, done 2922;
//   the dkv pass, its loads after D: q 2986..3063 (done 3298), dO ..3140 (3375), lse ..3150 (3385),
//     D ..3160 (3395); k on the engine q frees, 3362..3439 (3674); v on dO's, 3439..3516 (3751);
//     s = q k^T on MXU 0 and dP = dO v^T on MXU 1: weights 3751..3767, rows 3767..3895, done 4151;
//     p and dS (ALU 8 x 16, EUP 16, XLU 2 x 16 + 2 x 8 transposes = 48: 384 cycles, stores 16)
//     4151..4535, done 4567; dv += p^T dO and dk += dS^T q: weights 4567..4583, rows 4583..4711,
//     done 4967; accumulate (32 ALU, 16 loads, 16 stores) 4967..4983, done 5015; dk stored
//     5079..5156 (done 5391), dv 5156..5233 (5468);
//   the dq pass (its loads in order behind those stores): k 5233..5310 (5545), v ..5387 (5622),
//     q on dk's engine 5455..5532 (5767), dO on dv's 5532..5609 (5844), lse 5609..5619 (5854),
//     D on v's engine 5686..5696 (5931); s and dP 5931..5947, 5947..6075, done 6331; p and dS (no
//     transposes: XLU 32, 256 cycles) 6331..6587, done 6619; dq += dS k on MXU 0 6619..6635,
//     6635..6763, done 7019; accumulate (16 ALU) 7019..7035, done 7067; dq stored 7131..7208,
//     done 7443.
// SystemC spreads a 4,096 B transfer's two 2 KiB requests over 2 of the core's 16 channels (76.05
// cycles each, not 9.51 of the whole core): D's store and loads take longer there, 7572 cycles.
TEST(AttentionKernel, OneBlockPairBackwardTakesTheDerivedCycles) {
  const HwConfig hw = test::v3_8_ici();
  models::Graph g;
  auto bf16 = [&](const char* name) { return g.parameter(name, {1, 1, 128, 128}, DType::kBF16); };
  const int q = bf16("q"), k = bf16("k"), v = bf16("v"), o = bf16("o"), dout = bf16("dout");
  const int lse = g.parameter("lse", {1, 1, 128}, DType::kF32);
  AttentionAttrs a;
  a.causal = false;
  a.scale = 1.0 / std::sqrt(128.0);
  a.block_q = a.block_kv = 128;
  const models::Graph::AttentionGrads d = g.attention_grad(q, k, v, o, lse, dout, a);
  for (int x : {d.dq, d.dk, d.dv}) g.mark_output(x);
  const isa::Program p = compile_graph(g, hw, "attention", 0, 0);
  EXPECT_EQ(make_engine("analytical", hw)->run(p, nullptr).device_cycles, 7443u);
  EXPECT_EQ(make_engine("systemc", hw)->run(p, nullptr).device_cycles, 7572u);
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
