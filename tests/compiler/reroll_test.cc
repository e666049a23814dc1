// Tile loops stored once (sim/isa/repeat.h, compiler/lower/reroll.h): rerolling gives back the
// emitted stream exactly, the compiler's programs expand to it, both engines run a program with
// repeats exactly as its expansion (every figure), and the plan rejects malformed repeats.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower/reroll.h"
#include "compiler/step/data_parallel.h"
#include "compiler/step/fsdp.h"
#include "compiler/step/fsdp_graphs.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "sim/analysis/program_plan.h"
#include "sim/base/sim_error.h"
#include "sim/engine/engine.h"
#include "tests/compiler/dp_steps.h"
#include "tests/sim/test_hw.h"
#include "tests/sim/test_program.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_config(const std::string& name) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml");
}

struct KernelCase {
  std::string kernel;
  std::map<std::string, uint64_t> shape;
  models::DType dtype = models::DType::kF32;
  models::DotPrecision precision = models::DotPrecision::kDefault;
};

std::vector<KernelCase> kernel_cases() {
  return {{"matmul", {{"m", 1024}, {"k", 1024}, {"n", 1024}}},
          {"matmul", {{"m", 1000}, {"k", 77}, {"n", 300}}},  // ragged edges
          {"matmul", {{"m", 512}, {"k", 512}, {"n", 512}}, models::DType::kF32, models::DotPrecision::kHighest},
          {"matmul", {{"m", 2048}, {"k", 2048}, {"n", 2048}}, models::DType::kBF16},
          {"layernorm", {{"rows", 2048}, {"cols", 768}}},
          {"softmax", {{"rows", 2048}, {"cols", 2048}}},
          {"attention", {{"heads", 16}, {"seq", 512}, {"head_dim", 64}}},
          {"encoder_block", {{"seq", 512}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096}}}};
}

isa::Program compile(const KernelCase& k, const HwConfig& hw) {
  return compile_kernel({k.kernel, k.shape, k.dtype, k.precision}, hw);
}

std::string name_of(const KernelCase& k) {
  std::string s = k.kernel;
  for (const auto& [key, v] : k.shape) s += " " + key + "=" + std::to_string(v);
  return s;
}

nlohmann::json as_json(const std::vector<isa::Instr>& v) { return nlohmann::json(v); }

// The compiler's program expands to a stream that rerolling, from scratch over the whole stream,
// gives back instruction for instruction; both store far fewer instructions than they run.
TEST(Reroll, GivesBackTheEmittedStreamExactly) {
  const HwConfig hw = hw_config("v3-8");
  for (const KernelCase& k : kernel_cases()) {
    const isa::Program p = compile(k, hw);
    const std::vector<isa::Instr> stream = isa::expanded_instrs(p.cores[0]);
    EXPECT_EQ(stream.size(), p.cores[0].stream_size()) << name_of(k);

    isa::CoreProgram plain = isa::unshared(p).cores[0];
    ASSERT_TRUE(plain.repeats.empty());
    ASSERT_EQ(as_json(plain.instrs), as_json(stream)) << name_of(k);
    isa::CoreProgram again = plain;
    const uint64_t extra = reroll_tail(again, 0);
    EXPECT_EQ(again.instrs.size() + extra, plain.instrs.size()) << name_of(k);
    EXPECT_EQ(as_json(isa::expanded_instrs(again)), as_json(stream)) << name_of(k);
    EXPECT_LE(p.cores[0].instrs.size(), stream.size()) << name_of(k);
    if (k.kernel == "matmul" && stream.size() >= kMinRerollKernel) {
      EXPECT_LT(p.cores[0].instrs.size(), stream.size()) << name_of(k);
    }
    std::printf("[ stored   ] %-48s %7zu of %7zu instructions\n", name_of(k).c_str(), p.cores[0].instrs.size(), stream.size());
  }
}

// A hand-made case: the body's deps either move with the run or stay (`fixed`).
TEST(Reroll, FindsTheBodyAndWhichDepsStay) {
  isa::Program p = tpusim::test::make_program("loop");
  tpusim::test::Stream s(p.cores[0]);
  const uint32_t w = s.weights(0, 128, 128);                     // 0: before the loop
  uint32_t prev = s.dma_load(64, {w});                            // 1
  for (int t = 0; t < 5; ++t) {
    const uint32_t load = s.dma_load(4096, {prev}, "tile load");  // the tile before: moves
    prev = s.matmul(0, 8, 128, 128, {load, w}, 1, "tile mm");     // the weights: stay
  }
  s.dma_store(64, {prev});
  const std::vector<isa::Instr> unrolled = p.cores[0].instrs;
  isa::CoreProgram c = p.cores[0];
  EXPECT_EQ(reroll_tail(c, 0), 8u);  // 5 runs of 2 stored as one body
  ASSERT_EQ(c.repeats.size(), 1u);
  const isa::Repeat& r = c.repeats[0];
  EXPECT_EQ(std::tie(r.first, r.len, r.trips), std::make_tuple(2u, 2u, 5u));
  EXPECT_EQ(r.fixed, (std::vector<uint16_t>{0b0, 0b10}));  // the matmul's second dep (the weights) stays
  EXPECT_EQ(c.instrs.size(), 5u);
  EXPECT_EQ(c.stream_size(), unrolled.size());
  EXPECT_EQ(as_json(isa::expanded_instrs(c)), as_json(unrolled));
}

// Every figure of a run, the op profile and collective statistics included.
void expect_same(const RunResult& a, const RunResult& b, const std::string& what) {
  EXPECT_EQ(a.device_cycles, b.device_cycles) << what;
  ASSERT_EQ(a.cores.size(), b.cores.size()) << what;
  for (size_t c = 0; c < a.cores.size(); ++c) EXPECT_EQ(a.cores[c].end_cycle, b.cores[c].end_cycle) << what << " core " << c;
  EXPECT_EQ(a.stats.dump(), b.stats.dump()) << what;
  EXPECT_TRUE(a.collectives == b.collectives) << what;
  EXPECT_EQ(a.op_profile.cycles, b.op_profile.cycles) << what;
  ASSERT_EQ(a.op_profile.entries.size(), b.op_profile.entries.size()) << what;
  for (size_t k = 0; k < a.op_profile.entries.size(); ++k) {
    const OpProfileEntry &x = a.op_profile.entries[k], &y = b.op_profile.entries[k];
    EXPECT_EQ(std::tie(x.name, x.count, x.cycles, x.hbm_bytes, x.ici_bytes, x.bound),
              std::tie(y.name, y.count, y.cycles, y.hbm_bytes, y.ici_bytes, y.bound))
        << what << " entry " << k;
  }
}

// `p` and its expansion on both engines; whether `p` has repeats.
bool expect_runs_as_expanded(const isa::Program& p, const HwConfig& hw, const std::string& what) {
  bool repeats = false;
  for (const isa::CoreProgram& c : p.cores) repeats |= !c.repeats.empty();
  const isa::Program plain = isa::unshared(p);
  for (const char* engine : {"analytical", "systemc"}) {
    auto e = make_engine(engine, hw);
    const RunResult a = e->run(p, nullptr);
    const RunResult b = e->run(plain, nullptr);
    expect_same(a, b, what + " on " + engine);
  }
  return repeats;
}

TEST(Reroll, EnginesRunKernelsAsTheirExpansion) {
  const HwConfig hw = hw_config("v3-8");
  size_t with_repeats = 0;
  for (const KernelCase& k : kernel_cases()) with_repeats += expect_runs_as_expanded(compile(k, hw), hw, name_of(k));
  EXPECT_GE(with_repeats, 2u);  // the kernels of at least kMinRerollKernel instructions
}

// `p` with every kernel of every own stream rerolled, as ProgramBuilder does for kernels of
// kMinRerollKernel instructions and more, here whatever their length (a small step's kernels
// are shorter): a collective's kernels stay unrolled.
isa::Program rerolled_kernels(const isa::Program& p) {
  isa::Program out = isa::unshared(p);
  for (size_t c = 0; c < out.cores.size(); ++c) {
    if (p.cores[c].stream_of >= 0) {  // shares core stream_of's again, with its peers
      out.cores[c] = p.cores[c];
      continue;
    }
    isa::CoreProgram& cp = out.cores[c];
    std::vector<isa::Instr> plain = std::move(cp.instrs);
    cp.instrs.clear();
    cp.repeats.clear();
    size_t at = 0;
    for (const isa::KernelRange& k : cp.kernels) {
      cp.instrs.insert(cp.instrs.end(), plain.begin() + long(at), plain.begin() + long(k.first_instr));
      const size_t from = cp.instrs.size();
      cp.instrs.insert(cp.instrs.end(), plain.begin() + long(k.first_instr), plain.begin() + long(k.last_instr) + 1);
      if (k.collective == isa::Collective::kNone) reroll_tail(cp, from);
      at = k.last_instr + 1;
    }
    cp.instrs.insert(cp.instrs.end(), plain.begin() + long(at), plain.end());
  }
  return out;
}

TEST(Reroll, EnginesRunStepsAsTheirExpansion) {
  const HwConfig hw = hw_config("v3-8");
  test::Step st = test::make_step("bert-tiny", 2, 16);
  st.dp.allreduce_bucket_bytes = 256 << 10;  // several combined all-reduces, in the background
  const isa::Program dp = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "dp").program;
  EXPECT_TRUE(expect_runs_as_expanded(rerolled_kernels(dp), hw, "data-parallel step"));
  models::BertGraphOptions o;
  o.batch = 2;
  o.seq = 16;
  auto f = build_fsdp_graphs(models::build_bert(models::find_preset("bert-tiny"), o), 8, true, models::OptimizerConfig{}, true);
  const isa::Program fsdp = compile_spmd_step(fsdp_step(*f, hw), hw, "fsdp").program;
  EXPECT_TRUE(expect_runs_as_expanded(rerolled_kernels(fsdp), hw, "FSDP step"));
}

// A well-formed hand-made loop, and each rule of repeat.h broken once.
isa::Program looped() {
  isa::Program p = tpusim::test::make_program("loop");
  tpusim::test::Stream s(p.cores[0]);
  const uint32_t w = s.weights(0, 128, 128);
  const uint32_t load = s.dma_load(4096, {w});
  s.matmul(0, 8, 128, 128, {load, w});
  p.cores[0].repeats = {{1, 2, 3, {0, 0b10}}};
  return p;
}

std::string plan_error(const isa::Program& p) {
  try {
    ProgramPlan plan;
    plan.build(p, tpusim::test::v3_8_like());
  } catch (const SimError& e) {
    return e.what();
  }
  return "";
}

TEST(Reroll, ThePlanChecksTheRepeats) {
  EXPECT_EQ(plan_error(looped()), "");
  {
    const isa::Program p = looped();  // the plan's views are into it
    ProgramPlan plan;
    plan.build(p, tpusim::test::v3_8_like());
    EXPECT_EQ(plan.instructions(), 7u);
    EXPECT_EQ(plan.cores()[0].instr(6).op, isa::Op::kMxuMatmul);  // run 2's matmul: stored instruction 2
  }
  auto broken = [](auto&& edit) {
    isa::Program p = looped();
    edit(p.cores[0]);
    return plan_error(p);
  };
  EXPECT_NE(broken([](isa::CoreProgram& c) { c.repeats[0].trips = 1; }).find("runs at least twice"), std::string::npos);
  EXPECT_NE(broken([](isa::CoreProgram& c) { c.repeats[0].len = 3; c.repeats[0].fixed.push_back(0); }).find("runs past"),
            std::string::npos);
  EXPECT_NE(broken([](isa::CoreProgram& c) { c.repeats.insert(c.repeats.begin(), isa::Repeat{0, 2, 2, {0, 0}}); })
                .find("either nest or not overlap"),
            std::string::npos);  // [0, 2) and [1, 3)
  EXPECT_EQ(broken([](isa::CoreProgram& c) { c.repeats.push_back(isa::Repeat{2, 1, 2, {0}}); }), "");  // nested
  EXPECT_NE(broken([](isa::CoreProgram& c) { c.repeats[0].fixed.pop_back(); }).find("one per body instruction"),
            std::string::npos);
  EXPECT_NE(broken([](isa::CoreProgram& c) { c.repeats[0].fixed[0] = 0b10; }).find("a bit per dep"), std::string::npos);
  EXPECT_NE(broken([](isa::CoreProgram& c) { c.instrs[1].op = isa::Op::kBarrier; }).find("holds only DMA, MXU and VPU work"),
            std::string::npos);
  // Deps must point backwards in the expanded stream (the matmul naming itself).
  EXPECT_NE(broken([](isa::CoreProgram& c) { c.instrs[2].deps = {2, 0}; }).find("not earlier in the stream"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::compiler

namespace tpusim::compiler {
namespace {

// Nested tile loops: an outer loop of (a block load, an inner loop of tiles, a store), itself
// run by a loop over row blocks; the passes nest the repeats and the expansion is the stream.
TEST(Reroll, NestsTheLoopsOfALoop) {
  isa::Program p = tpusim::test::make_program("nested");
  tpusim::test::Stream s(p.cores[0]);
  const uint32_t w = s.weights(0, 128, 128);
  uint32_t prev = w;
  for (int rows = 0; rows < 3; ++rows) {
    for (int block = 0; block < 4; ++block) {
      const uint32_t blk = s.dma_load(1 << 16, {prev}, "block");
      uint32_t tile = blk;
      for (int t = 0; t < 5; ++t) {
        const uint32_t load = s.dma_load(4096, {tile}, "tile load");
        tile = s.matmul(0, 8, 128, 128, {load, w, blk}, 1, "tile mm");
      }
      prev = s.dma_store(1 << 16, {tile}, "block store");
    }
    prev = s.vpu({.alu_vregs = 8}, {prev}, "rows done");
  }
  const std::vector<isa::Instr> unrolled = p.cores[0].instrs;
  isa::CoreProgram c = p.cores[0];
  reroll_tail(c, 0);
  EXPECT_EQ(c.stream_size(), unrolled.size());
  EXPECT_EQ(as_json(isa::expanded_instrs(c)), as_json(unrolled));
  EXPECT_LT(c.instrs.size(), 20u);
  uint32_t depth = 0;
  const isa::RepeatTree tree = isa::repeat_tree(c.repeats);
  for (size_t r = 0; r < c.repeats.size(); ++r) {
    uint32_t d = 1;
    for (int32_t q = tree.parent[r]; q >= 0; q = tree.parent[size_t(q)]) ++d;
    depth = std::max(depth, d);
  }
  EXPECT_GE(depth, 2u);
  p.cores[0] = c;
  EXPECT_EQ(plan_error(p), "");
  ProgramPlan plan;
  plan.build(p, tpusim::test::v3_8_like());
  EXPECT_EQ(plan.instructions(), unrolled.size());
}

}  // namespace
}  // namespace tpusim::compiler
