// Lowering to the Program: structural invariants the simulator relies on, dtype/precision
// handling, and the compiler's accounting.
#include <gtest/gtest.h>

#include "base/config_error.h"
#include "compiler/compile.h"
#include "config/hw_loader.h"

namespace tpusim::compiler {
namespace {

HwConfig v3() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }

isa::Program compile(const std::string& kernel, std::map<std::string, uint64_t> shape, const HwConfig& hw,
                     const std::string& dtype = "f32", const std::string& precision = "default") {
  KernelRequest r{kernel, std::move(shape), models::parse_float_dtype(dtype).value(), models::parse_dot_precision(precision).value()};
  return isa::unshared(compile_kernel(r, hw));  // the tile loops expanded: instructions by stream index
}

uint64_t streamed_row_slots(const isa::Program& p) {
  uint64_t s = 0;
  for (const auto& i : p.cores[0].instrs)
    if (i.op == isa::Op::kMxuMatmul) s += uint64_t(i.rows) * i.passes;
  return s;
}

// Every dependency points backwards, every MXU op fits the array, every matmul is preceded by a
// weight load on its MXU, and VMEM never exceeds the capacity.
void check_invariants(const isa::Program& p, const HwConfig& hw) {
  ASSERT_EQ(p.cores.size(), 1u);
  const auto& core = p.cores[0];
  std::vector<bool> weights_loaded(hw.chip.core.mxu.count, false);
  for (uint32_t i = 0; i < core.instrs.size(); ++i) {
    const auto& in = core.instrs[i];
    for (uint32_t d : in.deps) ASSERT_LT(d, i) << in.label;
    if (in.op == isa::Op::kMxuWeights || in.op == isa::Op::kMxuMatmul) {
      ASSERT_LT(in.mxu, hw.chip.core.mxu.count);
      ASSERT_LE(in.k, hw.chip.core.mxu.rows);
      ASSERT_LE(in.n, hw.chip.core.mxu.cols);
      if (in.op == isa::Op::kMxuWeights) weights_loaded[in.mxu] = true;
      if (in.op == isa::Op::kMxuMatmul) {
        ASSERT_TRUE(weights_loaded[in.mxu]);
      }
    }
  }
  for (const auto& a : core.vmem_allocs) EXPECT_LE(a.offset_bytes + a.size_bytes, hw.chip.core.vmem.size_bytes()) << a.label;
}

TEST(Lowering, MatmulFlopsAndTraffic) {
  auto hw = v3();
  auto p = compile("matmul", {{"m", 1024}, {"k", 1024}, {"n", 1024}}, hw);
  check_invariants(p, hw);
  EXPECT_EQ(p.info.flops, 2ull * 1024 * 1024 * 1024);
  // Compulsory traffic: a and b read, c written, 4 MiB each in f32.
  EXPECT_EQ(p.info.hbm_bytes_min, 3ull * 4 * 1024 * 1024);
  EXPECT_GE(p.info.hbm_bytes, p.info.hbm_bytes_min);
  // 2*1024^3 flops / (2 flops x 128 x 128 MACs x 2 MXUs per cycle) = 32768 cycles.
  auto ideal = ideal_cycles(p, hw);
  EXPECT_EQ(ideal.compute_cycles, 32768u);
  // 12 MiB at 450 GB/s per core (900 GB/s chip, per_core ownership) and 940 MHz:
  // 12582912 / (450e9 / 940e6) = 26284.5 -> 26285 cycles.
  EXPECT_EQ(ideal.hbm_cycles, 26285u);
}

TEST(Lowering, AllKernelsSatisfyInvariants) {
  auto hw = v3();
  check_invariants(compile("layernorm", {{"rows", 2048}, {"cols", 768}}, hw), hw);
  check_invariants(compile("softmax", {{"rows", 2048}, {"cols", 2048}}, hw), hw);
  check_invariants(compile("attention", {{"heads", 16}, {"seq", 512}, {"head_dim", 64}}, hw), hw);
  check_invariants(compile("encoder_block", {{"seq", 512}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096}}, hw), hw);
  check_invariants(compile("matmul", {{"m", 1000}, {"k", 77}, {"n", 300}}, hw), hw);  // ragged edges
}

// fp32 matmuls at precision high/highest stream 3/6 bf16 passes (torch_xla precision docs).
TEST(Lowering, PrecisionMultipliesMxuPasses) {
  auto hw = v3();
  std::map<std::string, uint64_t> s = {{"m", 512}, {"k", 512}, {"n", 512}};
  const uint64_t one = streamed_row_slots(compile("matmul", s, hw, "f32", "default"));
  EXPECT_EQ(streamed_row_slots(compile("matmul", s, hw, "f32", "high")), 3 * one);
  EXPECT_EQ(streamed_row_slots(compile("matmul", s, hw, "f32", "highest")), 6 * one);
  // bf16 operands are already MXU-native: one pass whatever the precision.
  EXPECT_EQ(streamed_row_slots(compile("matmul", s, hw, "bf16", "highest")), one);
}

TEST(Lowering, Bf16HalvesTrafficAndSkipsConversion) {
  auto hw = v3();
  std::map<std::string, uint64_t> s = {{"m", 1024}, {"k", 1024}, {"n", 1024}};
  auto f = compile("matmul", s, hw, "f32");
  auto b = compile("matmul", s, hw, "bf16");
  EXPECT_EQ(b.info.hbm_bytes_min * 2, f.info.hbm_bytes_min);
  uint64_t alu_f = 0, alu_b = 0;
  for (const auto& i : f.cores[0].instrs) alu_f += i.vpu.alu_vregs;
  for (const auto& i : b.cores[0].instrs) alu_b += i.vpu.alu_vregs;
  EXPECT_LT(alu_b, alu_f);
}

// XLA TPU layouts tile the two minor dims by (8, 128): a head_dim of 64 occupies 128 lanes.
TEST(Lowering, MinorDimensionPaddingIsRealTraffic) {
  auto hw = v3();
  auto p = compile("attention", {{"heads", 16}, {"seq", 512}, {"head_dim", 64}}, hw);
  // q, k, v: 16 x 512 x 128 (padded) x 4 B = 4 MiB each; output [16, 64, 512] = 2 MiB.
  EXPECT_EQ(p.info.hbm_bytes_min, 3ull * 4 * 1024 * 1024 + 2ull * 1024 * 1024);
}

// A smaller VMEM forces smaller tiles (more HBM traffic) but still compiles within capacity.
TEST(Lowering, TilingRespectsVmemCapacity) {
  auto hw = v3();
  hw.chip.core.vmem.size_mib = 2;
  auto p = compile("matmul", {{"m", 2048}, {"k", 2048}, {"n", 2048}}, hw);
  check_invariants(p, hw);
  auto big = compile("matmul", {{"m", 2048}, {"k", 2048}, {"n", 2048}}, v3());
  EXPECT_GT(p.info.hbm_bytes, big.info.hbm_bytes);
}

TEST(Program, JsonRoundTrip) {
  const isa::Program p = compile_kernel({"matmul", {{"m", 2048}, {"k", 2048}, {"n", 2048}}}, v3());
  ASSERT_FALSE(p.cores[0].repeats.empty());  // its tile loops are stored once
  nlohmann::json j = p;
  isa::Program q = j.get<isa::Program>();
  EXPECT_EQ(nlohmann::json(q), j);
  EXPECT_EQ(q.cores[0].instrs.size(), p.cores[0].instrs.size());
  EXPECT_EQ(q.cores[0].repeats, p.cores[0].repeats);
}

TEST(Lowering, Deterministic) {
  auto hw = v3();
  std::map<std::string, uint64_t> s = {{"seq", 256}, {"hidden", 512}, {"heads", 8}, {"ffn", 2048}};
  EXPECT_EQ(nlohmann::json(compile("encoder_block", s, hw)), nlohmann::json(compile("encoder_block", s, hw)));
}

}  // namespace
}  // namespace tpusim::compiler

namespace tpusim::compiler {
namespace {

// Issue 15's reproducers: m = 2^63-1 overflowed int64 products (SIGFPE in the dot lowering), m = 2^40
// ran for minutes in the tiling search, 2^20 per dimension exhausted memory. Each is a ConfigError
// on `shape` now, before any lowering.
TEST(Lowering, ImpossibleKernelShapesAreConfigErrors) {
  HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  auto rule_of = [&](std::map<std::string, uint64_t> shape) {
    try {
      compile_kernel({"matmul", std::move(shape), models::DType::kF32, models::DotPrecision::kDefault}, hw);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.info().yaml_path, "shape");
      return e.info().rule;
    }
    return std::string("no error");
  };
  EXPECT_NE(rule_of({{"m", 9223372036854775807ull}, {"k", 512}, {"n", 512}}).find("more than 2^40 elements"), std::string::npos);
  EXPECT_NE(rule_of({{"m", 18446744073709551615ull}, {"k", 512}, {"n", 512}}).find("more than 2^40 elements"), std::string::npos);
  EXPECT_NE(rule_of({{"m", 1ull << 40}, {"k", 512}, {"n", 512}}).find("more than 2^40 elements"), std::string::npos);
  const std::string hbm = rule_of({{"m", 1ull << 20}, {"k", 1ull << 20}, {"n", 1ull << 20}});
  EXPECT_NE(hbm.find("more than the 16384 MiB of HBM a core of TPU v3 holds"), std::string::npos) << hbm;
}

}  // namespace
}  // namespace tpusim::compiler
