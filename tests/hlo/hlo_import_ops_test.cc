// The HLO import's op families beyond the element-wise and shape ops (compiler/hlo/hlo_import_ops.h,
// docs/hlo.md "Import"): data movement, rng, select, scatter, windows, sort, map, convolution flops
// against their closed form, while trip counts (from the bounds, user-given, neither),
// conditional, custom-call; and bad input, each case an HloError at its line, column and instruction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_parser.h"
#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using models::EwOp;
using models::OpKind;

HloImport import_text(const std::string& text, const ImportOptions& o = {}) {
  return import_hlo(parse_hlo_module(text, "t.hlo"), o);
}

int count_kind(const models::Graph& g, OpKind k) {
  return int(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const models::Node& n) { return n.kind == k; }));
}
int count_ew(const models::Graph& g, EwOp op) {
  return int(std::count_if(g.nodes().begin(), g.nodes().end(),
                           [&](const models::Node& n) { return n.kind == OpKind::kElementwise && n.ew == op; }));
}
const models::Node& output(const HloImport& r, size_t i = 0) { return r.graph.node(r.graph.outputs().at(i)); }
bool listed(const HloStats& st, const std::string& name) {
  return std::any_of(st.unmodelled.begin(), st.unmodelled.end(), [&](const Unmodelled& u) { return u.instruction == name; });
}

const std::string kAdd = "add_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";
const std::string kMax = "max_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] maximum(a, b)\n}\n";

TEST(HloImportOps, DataMovement) {
  const HloImport r = import_text(
      "HloModule m\nENTRY e {\n  x = f32[4,8] parameter(0)\n  z = f32[] constant(0)\n"
      "  p = f32[6,9] pad(x, z), padding=1_1x0_1\n"
      "  n = f32[3,8] pad(x, z), padding=-1_0x0_0\n"
      "  rv = f32[4,8] reverse(x), dimensions={1}\n"
      "  i = s32[] parameter(1)\n  ds = f32[2,8] dynamic-slice(x, i, i), dynamic_slice_sizes={2,8}\n"
      "  u = f32[1,8] parameter(2)\n  dus = f32[4,8] dynamic-update-slice(x, u, i, i)\n"
      "  ROOT t = (f32[6,9], f32[3,8], f32[4,8], f32[2,8], f32[4,8]) tuple(p, n, rv, ds, dus)\n}\n");
  // pad: the pad value's broadcasts joined around the operand, one concatenate per padded dimension.
  EXPECT_EQ(output(r, 0).kind, OpKind::kConcatenate);
  EXPECT_EQ(output(r, 0).shape, (models::Dims{6, 9}));
  // Negative padding cuts: a slice.
  EXPECT_EQ(output(r, 1).kind, OpKind::kSlice);
  EXPECT_EQ(output(r, 1).start, 1);
  // reverse: one element-wise pass (listed); dynamic-slice: a slice of the same size (exact).
  EXPECT_EQ(output(r, 2).kind, OpKind::kElementwise);
  EXPECT_EQ(output(r, 3).kind, OpKind::kSlice);
  EXPECT_EQ(output(r, 3).shape, (models::Dims{2, 8}));
  // dynamic-update-slice: the update joined to the rest of the operand (listed).
  EXPECT_EQ(output(r, 4).kind, OpKind::kConcatenate);
  EXPECT_FALSE(listed(r.stats, "p"));
  EXPECT_FALSE(listed(r.stats, "ds"));
  EXPECT_TRUE(listed(r.stats, "rv"));
  EXPECT_TRUE(listed(r.stats, "dus"));
}

TEST(HloImportOps, RngSelectAndDropout) {
  const HloImport r = import_text(
      "HloModule m\nENTRY e {\n  x = f32[4,8] parameter(0)\n  y = f32[4,8] parameter(1)\n"
      "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n  u = f32[4,8] rng(lo, hi), distribution=rng_uniform\n"
      "  r = f32[] constant(0.1)\n  rb = f32[4,8] broadcast(r), dimensions={}\n"
      "  keep = pred[4,8] compare(u, rb), direction=GT\n"
      "  s = f32[] constant(1.1111111)\n  sb = f32[4,8] broadcast(s), dimensions={}\n"
      "  zb = f32[4,8] broadcast(lo), dimensions={}\n  mask = f32[4,8] select(keep, sb, zb)\n"
      "  c = pred[4,8] compare(x, y), direction=GT\n  sel = f32[4,8] select(c, x, y)\n"
      "  st = u32[2] parameter(2)\n  g = (u32[2], u32[4,8]) rng-bit-generator(st), algorithm=rng_default\n"
      "  bits = u32[4,8] get-tuple-element(g), index=1\n"
      "  ROOT t = (f32[4,8], f32[4,8], u32[4,8]) tuple(mask, sel, bits)\n}\n");
  // rng > rate ? scale : 0 is the graph's dropout mask at that rate; its draw and compare are gone.
  EXPECT_EQ(output(r, 0).ew, EwOp::kDropoutMask);
  EXPECT_DOUBLE_EQ(output(r, 0).rate, 0.1);
  EXPECT_EQ(count_ew(r.graph, EwOp::kDropoutMask), 2);  // the mask and the generator's bits
  EXPECT_EQ(count_ew(r.graph, EwOp::kCmpGt), 1);        // sel's compare only
  // select reads its predicate: max(on_true * pred, on_false).
  const models::Node& sel = output(r, 1);
  EXPECT_EQ(sel.ew, EwOp::kMax);
  EXPECT_EQ(r.graph.node(sel.inputs[0]).ew, EwOp::kMul);
  EXPECT_EQ(r.graph.node(r.graph.node(sel.inputs[0]).inputs[1]).ew, EwOp::kCmpGt);
  EXPECT_EQ(output(r, 2).ew, EwOp::kDropoutMask);
  EXPECT_EQ(output(r, 2).shape, (models::Dims{4, 8}));
  EXPECT_FALSE(listed(r.stats, "mask"));
  EXPECT_TRUE(listed(r.stats, "sel"));
}

TEST(HloImportOps, ScatterWindowsSortMap) {
  const HloImport r = import_text(
      "HloModule m\n" + kAdd + kMax +
      "less_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT l = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY e {\n  tab = f32[10,8] parameter(0)\n  ids = s32[5] parameter(1)\n  upd = f32[5,8] parameter(2)\n"
      "  sc = f32[10,8] scatter(tab, ids, upd), update_window_dims={1}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f\n"
      "  img = f32[2,8,8,4] parameter(3)\n  ninf = f32[] constant(-inf)\n"
      "  pool = f32[2,4,4,4] reduce-window(img, ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max_f\n"
      "  zero = f32[] constant(0)\n"
      "  back = f32[2,8,8,4] select-and-scatter(img, pool, zero), window={size=1x2x2x1 stride=1x2x2x1}, "
      "select=max_f, scatter=add_f\n"
      "  v = f32[4,64] parameter(4)\n  srt = f32[4,64] sort(v), dimensions={1}, to_apply=less_f\n"
      "  mp = f32[4,64] map(v, srt), dimensions={0,1}, to_apply=add_f\n"
      "  ROOT t = (f32[10,8], f32[2,4,4,4], f32[2,8,8,4], f32[4,64]) tuple(sc, pool, back, mp)\n}\n");
  // Rows added into a table that is not zeros: the table plus the graph's scatter-add.
  EXPECT_EQ(output(r, 0).ew, EwOp::kAdd);
  EXPECT_EQ(count_kind(r.graph, OpKind::kScatterAdd), 1);
  // reduce-window: 4 window elements per output, a chain of 4 maximum ops over the operand's part.
  EXPECT_EQ(output(r, 1).ew, EwOp::kMax);
  EXPECT_EQ(output(r, 1).shape, (models::Dims{2, 4, 4, 4}));
  EXPECT_EQ(output(r, 2).shape, (models::Dims{2, 8, 8, 4}));
  // sort of 64 per row: log2(64) = 6 compare passes per element; with the 4 of each window op and
  // the map's one, 6 + 4 + 4 + 1 maximum ops.
  EXPECT_EQ(count_ew(r.graph, EwOp::kMax), 6 + 4 + 4 + 1);
  EXPECT_EQ(output(r, 3).kind, OpKind::kElementwise);
  for (const char* n : {"pool", "back", "srt", "mp"}) EXPECT_TRUE(listed(r.stats, n)) << n;
  EXPECT_FALSE(listed(r.stats, "sc"));
}

TEST(HloImportOps, ConvolutionFlopsInAnyLayout) {
  // NCHW input, OIHW kernel, stride 2: a dot of 2 x output elements x kernel spatial x input features.
  const HloImport r = import_text(
      "HloModule m\nENTRY e {\n  x = f32[2,3,32,32] parameter(0)\n  k = f32[16,3,5,5] parameter(1)\n"
      "  ROOT c = f32[2,16,16,16] convolution(x, k), window={size=5x5 stride=2x2 pad=2_2x2_2}, "
      "dim_labels=bf01_oi01->bf01\n}\n");
  const uint64_t closed = 2ull * (2 * 16 * 16 * 16) * (5 * 5) * 3;
  EXPECT_EQ(r.stats.convolution_flops, closed);
  uint64_t flops = 0;
  for (const models::Node& n : r.graph.nodes())
    if (n.kind == OpKind::kDot) flops += models::dot_flops(r.graph, n);
  EXPECT_EQ(flops, closed);
  EXPECT_EQ(output(r).shape, (models::Dims{2, 16, 16, 16}));
  EXPECT_EQ(output(r).kind, OpKind::kTranspose);  // back to the result's bf01 order
}

// A loop of `tanh` over a carried value: the condition compares the counter with 10.
std::string loop(const std::string& cond_root, const std::string& init, const std::string& step) {
  return "HloModule m\ncond {\n  p = (s32[], f32[8,32]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
         "  n = s32[] constant(10)\n  ROOT lt = pred[] " + cond_root + "\n}\n"
         "body {\n  p = (s32[], f32[8,32]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
         "  x = f32[8,32] get-tuple-element(p), index=1\n  one = s32[] constant(" + step + ")\n"
         "  next = s32[] add(i, one)\n  y = f32[8,32] tanh(x)\n  ROOT t = (s32[], f32[8,32]) tuple(next, y)\n}\n"
         "ENTRY e {\n  x = f32[8,32] parameter(0)\n  i0 = s32[] " + init + "\n"
         "  t = (s32[], f32[8,32]) tuple(i0, x)\n  w = (s32[], f32[8,32]) while(t), condition=cond, body=body\n"
         "  ROOT r = f32[8,32] get-tuple-element(w), index=1\n}\n";
}

TEST(HloImportOps, WhileTripCounts) {
  // From the bounds: i = 0; i < 10; i += 1 (and the mirrored compare, and a step of 3: 0, 3, 6, 9).
  EXPECT_EQ(count_ew(import_text(loop("compare(i, n), direction=LT", "constant(0)", "1")).graph, EwOp::kTanh), 10);
  EXPECT_EQ(count_ew(import_text(loop("compare(n, i), direction=GT", "constant(0)", "1")).graph, EwOp::kTanh), 10);
  EXPECT_EQ(count_ew(import_text(loop("compare(i, n), direction=LT", "constant(0)", "3")).graph, EwOp::kTanh), 4);
  EXPECT_EQ(count_ew(import_text(loop("compare(i, n), direction=LE", "constant(2)", "1")).graph, EwOp::kTanh), 9);
  // The counter starts from a parameter: not known from the bounds. User-given, or once and listed.
  const std::string unknown = loop("compare(i, n), direction=LT", "parameter(1)", "1");
  const HloImport given = import_text(unknown, {.max_instructions = size_t(1) << 21, .while_trip_count = 7, .replicas = std::nullopt});
  EXPECT_EQ(count_ew(given.graph, EwOp::kTanh), 7);
  EXPECT_FALSE(listed(given.stats, "w"));
  const HloImport once = import_text(unknown);
  EXPECT_EQ(count_ew(once.graph, EwOp::kTanh), 1);
  EXPECT_TRUE(listed(once.stats, "w"));
  // A huge trip count is bounded by the instruction limit (listed with the iterations imported).
  std::string big = loop("compare(i, n), direction=LT", "constant(0)", "1");
  big.replace(big.find("constant(10)"), 12, "constant(100000000)");
  const HloImport bounded = import_text(big, {.max_instructions = 5000, .while_trip_count = std::nullopt, .replicas = std::nullopt});
  EXPECT_LT(count_ew(bounded.graph, EwOp::kTanh), 1000);
  EXPECT_TRUE(listed(bounded.stats, "w"));
}

TEST(HloImportOps, ConditionalTakesTheCostlierBranch) {
  const HloImport r = import_text(
      "HloModule m\ncheap {\n  p = f32[8,8] parameter(0)\n  ROOT n = f32[8,8] negate(p)\n}\n"
      "costly {\n  p = f32[8,8] parameter(0)\n  ROOT d = f32[8,8] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"
      "ENTRY e {\n  b = pred[] parameter(0)\n  x = f32[8,8] parameter(1)\n"
      "  ROOT c = f32[8,8] conditional(b, x, x), true_computation=cheap, false_computation=costly\n}\n");
  EXPECT_EQ(output(r).kind, OpKind::kDot);
  EXPECT_TRUE(listed(r.stats, "c"));
}

TEST(HloImportOps, CustomCalls) {
  const HloImport r = import_text(
      "HloModule m\nENTRY e {\n  x = f32[8,128] parameter(0)\n"
      "  s = f32[8,128] custom-call(x), custom_call_target=\"Sharding\", sharding={devices=[2,1]0,1}\n"
      "  f = f32[8,128] custom-call(s), custom_call_target=\"SPMDFullToShardShape\"\n"
      "  k = f32[4,64] custom-call(f), custom_call_target=\"my_flash_kernel\"\n"
      "  ROOT t = (f32[8,128], f32[4,64]) tuple(f, k)\n}\n");
  EXPECT_EQ(output(r, 0).kind, OpKind::kParameter);  // the markers are the value itself
  // The unknown target reads its operand (a reduction of it) and writes its result (materialized).
  EXPECT_TRUE(output(r, 1).materialize);
  EXPECT_EQ(count_kind(r.graph, OpKind::kReduce), 1);
  ASSERT_EQ(r.stats.warnings.size(), 1u);
  EXPECT_EQ(r.stats.warnings[0], "t.hlo:6: custom-call 'k' has target 'my_flash_kernel', which tpusim does not model: "
                                 "costed as moving its operands' and results' bytes");
  EXPECT_TRUE(listed(r.stats, "k"));
  EXPECT_FALSE(listed(r.stats, "s"));
}

TEST(HloImportOps, OptBarrierMaterializes) {
  const HloImport r = import_text(
      "HloModule m\nENTRY e {\n  x = f32[8,128] parameter(0)\n  e1 = f32[8,128] exponential(x)\n"
      "  b = f32[8,128] opt-barrier(e1)\n  ROOT n = f32[8,128] negate(b)\n}\n");
  EXPECT_TRUE(r.graph.node(output(r).inputs[0]).materialize);
}

// Bad input: an HloError at the instruction, naming what was expected.
struct Bad {
  std::string body;  // ENTRY's instructions after `x = f32[2,3] parameter(0)` and `y = s32[7] parameter(1)`
  int line;
  std::string instruction, message;
};

TEST(HloImportOps, InconsistentModulesAreErrors) {
  const Bad cases[] = {
      {"  ROOT c = f32[2,3] add(x, y)\n", 5, "c", "is the shape of operand 1 'y' of this element-wise add; expected the result's dimensions [2,3]"},
      {"  ROOT d = f32[2,2] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n", 5, "d", "expected equal contracted sizes"},
      {"  ROOT r = f32[7] reshape(x)\n", 5, "r", "expected a reshape to keep the element count"},
      {"  t = (f32[2,3], s32[7]) tuple(x, y)\n  ROOT g = f32[2,3] get-tuple-element(t), index=9\n", 6, "g",
       "expected an index below 2 of a tuple"},
      {"  ROOT q = f32[2,3] frobnicate(x)\n", 5, "q", "is not an HLO opcode"},
      {"  ROOT b = f32[3,2] transpose(x), dimensions={0,0}\n", 5, "b", "expected each dimension once"},
      {"  ROOT e = f32[2,4] exponential(x)\n", 5, "e", "expected the result's dimensions [2,4]"},
      {"  ROOT s = f32[2,3] slice(x), slice={[0:2], [0:2]}\n", 5, "s", "expected the declared shape to be the op's result"},
  };
  for (const Bad& b : cases) {
    const std::string text = "HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n  y = s32[7] parameter(1)\n" + b.body + "}\n";
    try {
      import_text(text);
      ADD_FAILURE() << "no error for " << b.body;
    } catch (const HloError& e) {
      EXPECT_EQ(e.line(), b.line) << b.body;
      EXPECT_EQ(e.column(), 3) << b.body;
      EXPECT_EQ(e.instruction(), b.instruction) << b.body;
      EXPECT_NE(std::string(e.what()).find("t.hlo:" + std::to_string(b.line)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
}

// A known op the graph cannot express stays a stand-in input, listed (not an error).
TEST(HloImportOps, InexpressibleFormsStandIn) {
  const HloImport r = import_text(
      "HloModule m\nENTRY e {\n  x = f32[8,8] parameter(0)\n  s = f32[4,8] slice(x), slice={[0:8:2], [0:8]}\n"
      "  ROOT f = f32[8,8] fft(x), fft_type=FFT, fft_length={8}\n}\n");
  EXPECT_TRUE(listed(r.stats, "f"));
  EXPECT_EQ(output(r).kind, OpKind::kParameter);
}

}  // namespace
}  // namespace tpusim::hlo

namespace tpusim::hlo {
namespace {

// The importer is total: on mutated modules (a digit, an opcode or a line changed) only HloError
// escapes, never another exception or a crash. Deterministic (a fixed linear congruential stream).
TEST(HloImportOps, TotalOnMutatedModules) {
  const char* files[] = {"import_elementwise.hlo", "import_shapes.hlo", "import_dot_reduce.hlo", "import_unmodelled.hlo",
                         "called_computations.hlo", "jax_style.hlo"};
  const std::vector<std::string> opcodes = {"add", "dot", "reduce", "pad", "sort", "while", "scatter", "convolution", "select",
                                            "reverse", "dynamic-slice", "reduce-window", "tuple", "custom-call", "map", "rng"};
  uint64_t seed = 12345;
  int imported = 0;
  for (const char* f : files) {
    std::ifstream in(std::string(TPUSIM_HLO_DATA) + "/" + f);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << f;
    for (int k = 0; k < 300; ++k) {
      const std::string t = testing::mutate(text, seed, opcodes);
      std::optional<Module> m;
      try {
        m = parse_hlo_module(t, "fuzz.hlo");
      } catch (const HloError&) {
        continue;
      }
      try {
        import_hlo(*m, {.max_instructions = 20000, .while_trip_count = std::nullopt, .replicas = std::nullopt});
        ++imported;
      } catch (const HloError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << f << " mutation " << k << ": " << e.what() << "\n" << t;
        return;
      }
    }
  }
  EXPECT_GT(imported, 0);
}

}  // namespace
}  // namespace tpusim::hlo

namespace tpusim::hlo {
namespace {

// Scalar programs (a loop's arithmetic, a scalar select of a constant) are valid, not errors.
TEST(HloImportOps, ScalarConstantsAsOperands) {
  const HloImport r = import_text(
      "HloModule m\nENTRY e {\n  p = pred[] parameter(0)\n  x = f32[] parameter(1)\n  c = f32[] constant(2)\n"
      "  s = f32[] select(p, c, x)\n  a = f32[] add(c, s)\n  k = f32[] sort(c), dimensions={}\n"
      "  ROOT t = (f32[], f32[]) tuple(a, s)\n}\n");
  EXPECT_EQ(output(r, 0).ew, EwOp::kAdd);
  EXPECT_EQ(output(r, 0).shape, models::Dims{});
}

}  // namespace
}  // namespace tpusim::hlo
