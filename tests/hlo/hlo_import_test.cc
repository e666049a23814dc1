// The HLO import (compiler/hlo/hlo_import.h): per op family a hand-written module in data/import_*.hlo
// imported and checked (node kinds, shapes, what is listed unmodelled and at which line), the
// statistics against their closed forms, and imported modules simulated against the same program
// built natively (models/kernels.cc) on the analytical engine.
#include <gtest/gtest.h>

#include <sstream>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "compiler/compile.h"
#include "compiler/hlo/hlo_import.h"
#include "config/hw_loader.h"
#include "models/kernels.h"
#include "sim/engine/engine.h"
#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using models::EwOp;
using models::OpKind;
using testing::data_module;

// The node of the graph named `name` (the importer names nodes after their instruction).
const models::Node& named(const models::Graph& g, const std::string& name) {
  for (const models::Node& n : g.nodes())
    if (n.name == name) return n;
  throw std::runtime_error("no node named " + name);
}

int count_kind(const models::Graph& g, OpKind k) {
  return int(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const models::Node& n) { return n.kind == k; }));
}

const Unmodelled* unmodelled(const HloStats& st, const std::string& name) {
  for (const Unmodelled& u : st.unmodelled)
    if (u.instruction == name) return &u;
  return nullptr;
}

TEST(HloImport, ElementwiseOps) {
  const HloImport r = import_hlo(data_module("import_elementwise.hlo"));
  const models::Graph& g = r.graph;
  EXPECT_EQ(named(g, "add").ew, EwOp::kAdd);
  EXPECT_EQ(named(g, "sub").ew, EwOp::kSub);
  EXPECT_EQ(named(g, "div").ew, EwOp::kDiv);
  EXPECT_EQ(named(g, "rsqrt").ew, EwOp::kRsqrt);
  EXPECT_EQ(named(g, "erf").ew, EwOp::kErf);
  // LT(a, b) is GT(b, a): exact, operands swapped.
  const models::Node& lt = named(g, "lt");
  EXPECT_EQ(lt.ew, EwOp::kCmpGt);
  EXPECT_EQ(g.node(lt.inputs[0]).name, "x");
  EXPECT_EQ(named(g, "min").ew, EwOp::kMax);
  EXPECT_EQ(count_kind(g, OpKind::kConvert), 2);
  // The broadcast scalar constant is folded into the op that reads it (the graph's element-wise
  // ops take a scalar constant operand); the broadcast, read by nothing else, is dropped.
  EXPECT_EQ(count_kind(g, OpKind::kBroadcast), 0);
  EXPECT_EQ(count_kind(g, OpKind::kConstant), 1);
  for (const models::Node& n : g.nodes()) {
    if (n.kind == OpKind::kElementwise) {
      EXPECT_EQ(n.shape, (models::Dims{4, 8})) << n.name;
    }
  }
  // The approximations, each at its line; the exact ops are not listed.
  ASSERT_EQ(r.stats.unmodelled.size(), 4u);
  EXPECT_EQ(unmodelled(r.stats, "min")->line, 13);
  EXPECT_EQ(unmodelled(r.stats, "abs")->line, 21);
  EXPECT_EQ(unmodelled(r.stats, "sel")->line, 23);
  EXPECT_EQ(unmodelled(r.stats, "cp")->line, 25);
  EXPECT_EQ(g.node(g.outputs().at(0)).dtype, models::DType::kF32);
  EXPECT_EQ(r.stats.parameter_bytes, 2u * 4 * 8 * 4);
  EXPECT_EQ(r.stats.output_bytes, 4u * 8 * 4);
}

TEST(HloImport, ShapeOpsTuplesCallsAndAliases) {
  const HloImport r = import_hlo(data_module("import_shapes.hlo"));
  const models::Graph& g = r.graph;
  // The aliased parameter is a persistent weight; the other an input.
  EXPECT_EQ(named(g, "w").role, models::ParamRole::kTrainable);
  EXPECT_EQ(named(g, "x").role, models::ParamRole::kInput);
  // The array constant is an input resident in HBM.
  EXPECT_EQ(named(g, "table").kind, OpKind::kParameter);
  EXPECT_EQ(named(g, "table").shape, (models::Dims{3}));
  EXPECT_EQ(count_kind(g, OpKind::kReshape), 2);  // reshape and bitcast
  EXPECT_EQ(count_kind(g, OpKind::kTranspose), 1);
  // slice [1:3] of dim 0 only (dim 1 is [0:3] of 6: also a slice): two graph slices.
  EXPECT_EQ(count_kind(g, OpKind::kSlice), 2);
  EXPECT_EQ(named(g, "cat").kind, OpKind::kConcatenate);
  EXPECT_EQ(named(g, "cat").shape, (models::Dims{4, 3}));
  ASSERT_EQ(count_kind(g, OpKind::kIota), 1);
  EXPECT_EQ(named(g, "io").kind, OpKind::kIota);  // named after its instruction
  for (const models::Node& n : g.nodes()) {
    if (n.kind == OpKind::kIota) {
      EXPECT_EQ(n.iota_dim, 1);
    }
  }
  // The call is inlined: the callee's multiply reads the bitcast through the tuple.
  const models::Node& m = named(g, "m");
  EXPECT_EQ(m.ew, EwOp::kMul);
  EXPECT_EQ(g.node(m.inputs[0]).kind, OpKind::kReshape);
  // The strided slice stands in as an input of its shape.
  const Unmodelled* u = unmodelled(r.stats, "strided");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->line, 18);
  EXPECT_EQ(named(g, "strided").kind, OpKind::kParameter);
  EXPECT_EQ(r.stats.unmodelled.size(), 1u);
  EXPECT_EQ(g.outputs().size(), 4u);
}

TEST(HloImport, DotsReducesAndGathers) {
  const Module mod = data_module("import_dot_reduce.hlo");
  const HloImport r = import_hlo(mod);
  const models::Graph& g = r.graph;
  const models::Node& s = named(g, "s");
  EXPECT_EQ(s.kind, OpKind::kDot);
  EXPECT_EQ(s.shape, (models::Dims{2, 8, 8}));
  EXPECT_EQ(s.precision, models::DotPrecision::kHighest);
  EXPECT_EQ(s.dot.lhs_batch, std::vector<int>{0});
  EXPECT_EQ(s.dot.rhs_contract, std::vector<int>{1});
  const models::Node& xw = named(g, "xw");
  EXPECT_EQ(xw.dtype, models::DType::kBF16);
  EXPECT_EQ(xw.precision, models::DotPrecision::kDefault);
  // dot_flops: the imported dots by models::dot_flops, and the closed form 2 x B x M x N x K.
  EXPECT_EQ(models::dot_flops(g, s), 2u * 2 * 8 * 8 * 16);
  EXPECT_EQ(models::dot_flops(g, xw), 2u * 8 * 16 * 32);
  EXPECT_EQ(r.stats.dot_flops, models::dot_flops(g, s) + models::dot_flops(g, xw));
  // reduce over {1,2}: two graph reduces, the higher dimension first; the product reduction as a
  // sum (listed).
  EXPECT_EQ(count_kind(g, OpKind::kReduce), 4);
  bool max_seen = false;
  for (const models::Node& n : g.nodes())
    if (n.kind == OpKind::kReduce && n.reduce == models::ReduceOp::kMax) max_seen = n.shape == models::Dims{2, 8};
  EXPECT_TRUE(max_seen);
  // Gathers of whole rows (ids with and without the trailing index vector); a partial-row gather
  // and a product reduction stand in.
  EXPECT_EQ(named(g, "rows").kind, OpKind::kGather);
  EXPECT_EQ(named(g, "rows").shape, (models::Dims{5, 16}));
  EXPECT_EQ(named(g, "rows2").kind, OpKind::kGather);
  EXPECT_EQ(named(g, "rows2").shape, (models::Dims{3, 16}));
  ASSERT_EQ(r.stats.unmodelled.size(), 2u);
  EXPECT_EQ(unmodelled(r.stats, "prod")->line, 36);
  EXPECT_EQ(unmodelled(r.stats, "part")->line, 39);
  EXPECT_EQ(r.stats.instructions.at("dot"), 2);
  EXPECT_EQ(r.stats.instructions.at("parameter"), 13);  // 6 in the three reducers, 7 in ENTRY
}

TEST(HloImport, ApproximatedOpsAreListedAtTheirLines) {
  const HloImport r = import_hlo(data_module("import_unmodelled.hlo"));
  const HloStats& st = r.stats;
  const std::vector<std::pair<std::string, int>> expect = {{"conv", 20}, {"dw", 21}, {"sorted", 22},
                                                           {"cc", 24},   {"half", 25}};
  ASSERT_EQ(st.unmodelled.size(), expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ(st.unmodelled[i].instruction, expect[i].first);
    EXPECT_EQ(st.unmodelled[i].line, expect[i].second);
  }
  EXPECT_NE(unmodelled(st, "cc")->reason.find("'my_kernel'"), std::string::npos);
  // The all-reduce of a module of one replica: a collective over a group of one.
  EXPECT_EQ(named(r.graph, "ar").kind, OpKind::kCollective);
  EXPECT_EQ(named(r.graph, "ar").collective.group_size(), 1);
  ASSERT_EQ(st.warnings.size(), 1u);
  EXPECT_NE(st.warnings[0].find(":24: custom-call 'cc' has target 'my_kernel'"), std::string::npos) << st.warnings[0];
  // The convolutions are dots of the convolution's flops: 2 x output elements x kernel spatial size x
  // input features / feature_group_count.
  EXPECT_EQ(named(r.graph, "conv").kind, OpKind::kDot);
  EXPECT_EQ(models::dot_flops(r.graph, named(r.graph, "conv")), 2u * (2 * 16 * 16 * 16) * 9 * 8);
  EXPECT_EQ(models::dot_flops(r.graph, named(r.graph, "dw")), 2u * (2 * 16 * 16 * 8) * 9 * (8 / 8));
  EXPECT_EQ(st.convolution_flops, 2u * (2 * 16 * 16 * 16) * 9 * 8 + 2u * (2 * 16 * 16 * 8) * 9 * (8 / 8));
}

// Tuples of tuples and calls of calls, doubling per level: shared, bounded, quick.
TEST(HloImport, DoublingTuplesAndCallsStayBounded) {
  // Built with a stream: GCC 12 warns -Wrestrict, falsely, on `"c" + std::to_string(i)`.
  std::ostringstream t;
  t << "HloModule m\nc0 {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n";
  for (int i = 1; i <= 40; ++i)
    t << 'c' << i << " {\n  p = f32[2] parameter(0)\n  a = f32[2] call(p), to_apply=c" << i - 1
      << "\n  ROOT b = f32[2] call(a), to_apply=c" << i - 1 << "\n}\n";
  t << "ENTRY e {\n  x = f32[2] parameter(0)\n  t0 = (f32[2], f32[2]) tuple(x, x)\n";
  std::string shape = "(f32[2], f32[2])";
  for (int i = 1; i <= 12; ++i) {
    std::ostringstream doubled;
    doubled << '(' << shape << ", " << shape << ')';
    shape = doubled.str();
    t << "  t" << i << " = " << shape << " tuple(t" << i - 1 << ", t" << i - 1 << ")\n";
  }
  t << "  y = f32[2] call(x), to_apply=c40\n  ROOT r = (f32[2], " << shape << ") tuple(y, t12)\n}\n";
  const std::string text = t.str();
  const HloImport r = import_hlo(parse_hlo_module(text, "t.hlo"), {.max_instructions = 5000, .while_trip_count = {}, .replicas = {}});
  EXPECT_LE(r.graph.nodes().size(), 5000u + 64);
  bool limited = false;
  for (const Unmodelled& u : r.stats.unmodelled) limited |= u.reason.find("inlining limit") != std::string::npos;
  EXPECT_TRUE(limited);
}

// An imported module simulates like the same program built natively (models/kernels.cc).
double device_time(const models::Graph& g, const HwConfig& hw) {
  return make_engine("analytical", hw)->run(compiler::compile_graph(g, hw, "k", 0, 0), nullptr).device_time_s;
}

TEST(HloImport, MatchesNativeKernels) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  const std::string matmul =
      "HloModule matmul\nENTRY main {\n  a = f32[512,256] parameter(0)\n  b = f32[256,384] parameter(1)\n"
      "  ROOT d = f32[512,384] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  const std::string softmax =
      "HloModule softmax\nmax_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n"
      "add_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY main {\n  x = f32[256,512] parameter(0)\n  ninf = f32[] constant(-inf)\n"
      "  m = f32[256] reduce(x, ninf), dimensions={1}, to_apply=max_f\n"
      "  mb = f32[256,512] broadcast(m), dimensions={0}\n  shift = f32[256,512] subtract(x, mb)\n"
      "  e = f32[256,512] exponential(shift)\n  zero = f32[] constant(0)\n"
      "  s = f32[256] reduce(e, zero), dimensions={1}, to_apply=add_f\n"
      "  sb = f32[256,512] broadcast(s), dimensions={0}\n  ROOT y = f32[256,512] divide(e, sb)\n}\n";
  // Batched dots with the kernel's dimension numbers, the scale as a broadcast scalar, bf16.
  const std::string attention =
      "HloModule attention\nmax_f {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n  ROOT m = bf16[] maximum(a, b)\n}\n"
      "add_f {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n  ROOT s = bf16[] add(a, b)\n}\n"
      "ENTRY main {\n  q = bf16[8,256,64] parameter(0)\n  k = bf16[8,256,64] parameter(1)\n  v = bf16[8,256,64] parameter(2)\n"
      "  s = bf16[8,256,256] dot(k, q), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
      "rhs_contracting_dims={2}\n"
      "  c = bf16[] constant(0.125)\n  cb = bf16[8,256,256] broadcast(c), dimensions={}\n"
      "  sc = bf16[8,256,256] multiply(s, cb)\n  ninf = bf16[] constant(-inf)\n"
      "  m = bf16[8,256] reduce(sc, ninf), dimensions={1}, to_apply=max_f\n"
      "  mb = bf16[8,256,256] broadcast(m), dimensions={0,2}\n  sh = bf16[8,256,256] subtract(sc, mb)\n"
      "  e = bf16[8,256,256] exponential(sh)\n  zero = bf16[] constant(0)\n"
      "  t = bf16[8,256] reduce(e, zero), dimensions={1}, to_apply=add_f\n"
      "  tb = bf16[8,256,256] broadcast(t), dimensions={0,2}\n  p = bf16[8,256,256] divide(e, tb)\n"
      "  ROOT o = bf16[8,64,256] dot(v, p), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, "
      "rhs_contracting_dims={1}\n}\n";
  struct Case {
    std::string hlo;
    models::KernelArgs native;
  } cases[] = {{matmul, {"matmul", {{"m", 512}, {"k", 256}, {"n", 384}}}},
               {softmax, {"softmax", {{"rows", 256}, {"cols", 512}}}},
               {attention, {"attention", {{"heads", 8}, {"seq", 256}, {"head_dim", 64}}, models::DType::kBF16}}};
  for (const Case& c : cases) {
    const HloImport r = import_hlo(parse_hlo_module(c.hlo, c.native.kernel + ".hlo"));
    EXPECT_TRUE(r.stats.unmodelled.empty()) << c.native.kernel;
    const double imported = device_time(r.graph, hw), native = device_time(models::build_kernel(c.native), hw);
    EXPECT_GT(native, 0);
    std::printf("%s: imported %.9g s, native %.9g s\n", c.native.kernel.c_str(), imported, native);
    EXPECT_NEAR(imported / native, 1.0, 0.02) << c.native.kernel << ": " << imported << " s vs " << native << " s";
  }
}

}  // namespace
}  // namespace tpusim::hlo
