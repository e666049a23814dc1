// The HLO text parser on the modules of tests/hlo/data: every syntax form of docs/hlo.md, names
// resolved, and a generated ~100k-instruction module.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include "compiler/hlo/hlo_parser.h"
#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using testing::data_module;
using testing::inst;

TEST(HloParser, OldStyleHeaderAndSignatures) {
  const Module m = data_module("old_style.hlo");
  EXPECT_EQ(m.name, "SyncTensorsGraph.42");
  EXPECT_EQ(m.replica_count, 2);
  EXPECT_EQ(m.num_partitions, 1);
  EXPECT_EQ(m.entry_computation_layout, "(f32[4,8]{1,0}, f32[8]{0}, s64[])->(f32[4,8]{1,0}, s64[])");
  ASSERT_EQ(m.input_output_alias.size(), 2u);
  EXPECT_EQ(m.input_output_alias[0].output_index, std::vector<int64_t>{0});
  EXPECT_EQ(m.input_output_alias[0].parameter, 0);
  EXPECT_EQ(m.input_output_alias[0].kind, "may-alias");
  EXPECT_EQ(m.input_output_alias[1].parameter, 2);
  EXPECT_EQ(m.input_output_alias[1].kind, "must-alias");
  ASSERT_EQ(m.computations.size(), 3u);
  EXPECT_EQ(m.entry_computation().name, "SyncTensorsGraph.42");
  const Computation& add = m.computations[0];
  EXPECT_TRUE(add.has_signature);
  ASSERT_EQ(add.params.size(), 2u);
  EXPECT_EQ(add.params[1].first, "y.7");
  EXPECT_EQ(add.root_instruction().name, "add.8");
  EXPECT_EQ(m.entry_computation().result->to_string(), "(f32[4,8], s64[])");
}

TEST(HloParser, OldStyleOperandsCarryTheirShapes) {
  const Module m = data_module("old_style.hlo");
  const Instruction& mul = inst(m, "SyncTensorsGraph.42", "multiply.18");
  ASSERT_EQ(mul.operand_names.size(), 2u);
  EXPECT_EQ(mul.operand_names[0], "p0.1");
  ASSERT_TRUE(mul.operand_shapes[0].has_value());
  EXPECT_EQ(mul.operand_shapes[0]->to_string(), "f32[4,8]{1,0}");
  const Computation& e = m.entry_computation();
  EXPECT_EQ(e.instructions[size_t(mul.operands[1])].name, "broadcast.17");
  // A tuple-shaped operand, and a /*index=1*/ comment inside a tuple shape.
  const Instruction& gte = inst(m, "SyncTensorsGraph.42", "get-tuple-element.28");
  EXPECT_TRUE(gte.operand_shapes[0]->is_tuple());
  EXPECT_EQ(e.root_instruction().shape.to_string(), "(f32[4,8]{1,0}, s64[])");
  // The reduce's to_apply names the first computation; the all-reduce's too.
  EXPECT_EQ(inst(m, "SyncTensorsGraph.42", "reduce.19").called, std::vector<int>{0});
  EXPECT_EQ(inst(m, "SyncTensorsGraph.42", "reduce.20").called, std::vector<int>{1});
  EXPECT_EQ(inst(m, "SyncTensorsGraph.42", "all-reduce.26").called, std::vector<int>{0});
}

TEST(HloParser, ConstantLiterals) {
  const Module m = data_module("old_style.hlo");
  auto lit = [&](const char* n) { return *inst(m, "SyncTensorsGraph.42", n).literal; };
  EXPECT_EQ(lit("constant.10").scalar, 0.0);
  EXPECT_TRUE(std::isinf(*lit("constant.11").scalar) && *lit("constant.11").scalar < 0);
  EXPECT_EQ(lit("constant.12").scalar, 1.0);
  EXPECT_EQ(lit("constant.13").scalar, 1.0);  // true
  EXPECT_FALSE(lit("constant.14").scalar.has_value());
  EXPECT_EQ(lit("constant.14").raw, "{ { 1, 2, 3 }, { 4, 5.5, -6e-3 } }");
  EXPECT_EQ(inst(m, "SyncTensorsGraph.42", "constant.14").shape.to_string(), "f32[2,3]{1,0}");
  EXPECT_TRUE(std::isnan(*lit("constant.15").scalar));
  EXPECT_TRUE(lit("constant.16").elided);
}

TEST(HloParser, JaxStyleWithoutPercentOrSignatures) {
  const Module m = data_module("jax_style.hlo");
  EXPECT_EQ(m.name, "jit_train_step");
  EXPECT_EQ(m.num_partitions, 8);
  EXPECT_EQ(m.replica_count, 1);
  const Computation& e = m.entry_computation();
  EXPECT_EQ(e.name, "main.50");
  EXPECT_FALSE(e.has_signature);
  EXPECT_EQ(e.root_instruction().name, "out.64");
  const Instruction& dot = inst(m, "main.50", "dot.40");
  EXPECT_EQ(dot.opcode, "dot");
  EXPECT_FALSE(dot.operand_shapes[0].has_value());
  EXPECT_EQ(e.instructions[size_t(dot.operands[0])].name, "Arg_0.1");
  // The frontend_attributes header attribute is kept raw (and otherwise ignored).
  ASSERT_EQ(m.attrs.size(), 3u);
  EXPECT_EQ(m.attrs[2].name, "frontend_attributes");
}

TEST(HloParser, NestedComputationsResolved) {
  const Module m = data_module("jax_style.hlo");
  auto idx = [&](const char* c) { return int(m.find(c) - m.computations.data()); };
  const Instruction& w = inst(m, "main.50", "while.49");
  EXPECT_EQ(w.called, (std::vector<int>{idx("cond.10"), idx("body.20")}));
  EXPECT_EQ(inst(m, "main.50", "cond.53").called, (std::vector<int>{idx("branch_true.30"), idx("branch_false.33")}));
  EXPECT_EQ(inst(m, "main.50", "sw.55").called, (std::vector<int>{idx("branch_true.30"), idx("branch_false.33")}));
  EXPECT_EQ(inst(m, "main.50", "sum.43").called, std::vector<int>{idx("region_0.4")});
  // A parameter of tuple shape; the while body's ROOT.
  EXPECT_TRUE(m.find("body.20")->instructions[0].shape.is_tuple());
  EXPECT_EQ(m.find("body.20")->root_instruction().opcode, "tuple");
  // control-predecessors resolved to the instruction above.
  const Instruction& conv = inst(m, "main.50", "conv.63");
  ASSERT_EQ(conv.control_predecessors.size(), 1u);
  EXPECT_EQ(m.entry_computation().instructions[size_t(conv.control_predecessors[0])].name, "tok.59");
}

// sort, scatter, reduce-window, select-and-scatter (select= and scatter=), map, call, async and
// collective ops name their computations; a computation attribute after the closing brace.
TEST(HloParser, EveryComputationValuedAttribute) {
  const Module m = data_module("called_computations.hlo");
  auto idx = [&](const char* c) { return int(m.find(c) - m.computations.data()); };
  EXPECT_EQ(inst(m, "main", "sort").called, std::vector<int>{idx("less")});
  EXPECT_EQ(inst(m, "main", "scatter").called, std::vector<int>{idx("add")});
  EXPECT_EQ(inst(m, "main", "rw").called, std::vector<int>{idx("add")});
  EXPECT_EQ(inst(m, "main", "sas").called, (std::vector<int>{idx("ge"), idx("add")}));
  EXPECT_EQ(inst(m, "main", "map").called, std::vector<int>{idx("double")});
  EXPECT_EQ(inst(m, "main", "call").called, std::vector<int>{idx("double")});
  EXPECT_EQ(inst(m, "main", "ars").called, std::vector<int>{idx("add")});
  EXPECT_TRUE(inst(m, "main", "a2a").called.empty());
  ASSERT_EQ(m.find("double")->attrs.size(), 1u);
  EXPECT_EQ(m.find("double")->attrs[0].value, "\"main\"");
  EXPECT_EQ(m.find("less")->params.size(), 4u);
}

TEST(HloParser, ShapesDynamicTokenAndF8) {
  const Module m = data_module("jax_style.hlo");
  const Shape& dyn = inst(m, "main.50", "dyn.57").shape;
  EXPECT_EQ(dyn.dims, (std::vector<int64_t>{8, -1}));
  EXPECT_EQ(dyn.dynamic, (std::vector<bool>{true, true}));
  EXPECT_EQ(dyn.to_string(), "f32[<=8,?]{1,0}");
  EXPECT_EQ(inst(m, "main.50", "f8.58").shape.type, ElementType::kF8E4M3FN);
  EXPECT_EQ(inst(m, "main.50", "tok.59").shape.type, ElementType::kToken);
  EXPECT_EQ(inst(m, "main.50", "tok.59").shape.to_string(), "token[]");
  EXPECT_EQ(inst(m, "main.50", "iota.60").operands.size(), 0u);
}

TEST(HloParser, AfterOptimizationsFusionsAndTiledLayouts) {
  const Module m = data_module("after_optimizations.hlo");
  const Computation& e = m.entry_computation();
  const Instruction& f = e.root_instruction();
  EXPECT_EQ(f.opcode, "fusion");
  EXPECT_EQ(f.attr("kind")->value, "kLoop");
  EXPECT_EQ(m.computations[size_t(f.called.at(0))].name, "fused_computation");
  const Shape& a = e.instructions[0].shape;
  EXPECT_EQ(a.type, ElementType::kBF16);
  EXPECT_EQ(a.minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(a.layout, "1,0:T(8,128)(2,1)");
  EXPECT_EQ(inst(m, "main.10", "fusion.1").attr("backend_config")->value, "{\"flag_configs\":[],\"scoped_memory_configs\":[]}");
  EXPECT_TRUE(inst(m, "main.10", "bias").literal->elided);
}

TEST(HloParser, ParametersByNumberNotByOrder) {
  const Module m = parse_hlo_module(R"(HloModule m
ENTRY e {
  b = f32[2] parameter(1)
  a = f32[2] parameter(0)
  ROOT s = f32[2] subtract(a, b)
})", "t.hlo");
  EXPECT_EQ(*m.entry_computation().instructions[0].parameter_number, 1);
  EXPECT_EQ(m.entry_computation().root, 2);
}

TEST(HloParser, LastInstructionIsRootWithoutRootKeyword) {
  const Module m = parse_hlo_module("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  n = f32[] negate(a)\n}\n", "t.hlo");
  EXPECT_EQ(m.entry_computation().root_instruction().name, "n");
  EXPECT_TRUE(m.entry_computation().root_instruction().is_root);
}

TEST(HloParser, AttributeValuesKeptRawWithStringsAndBraces) {
  const Module m = data_module("jax_style.hlo");
  const Instruction& d = inst(m, "main.50", "dyn.57");
  EXPECT_EQ(d.attr("custom_call_target")->value, "\"SetBound \\\"x\\\"\"");
  EXPECT_EQ(d.attr("backend_config")->value, "\"{\\\"k\\\": 1}\"");
  const Instruction& w = inst(m, "main.50", "while.49");
  EXPECT_EQ(w.attr("backend_config")->value, "{\"known_trip_count\":{\"n\":\"10\"}}");
}

// A generated module of ~100k instructions (a chain of element-wise ops over four parameters, with a
// reduce every 100 instructions): it parses, every operand resolves, and in well under the test's timeout.
TEST(HloParser, HundredThousandInstructions) {
  constexpr int kN = 100000;
  std::string t = "HloModule big, replica_count=1\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\nENTRY main {\n";
  t += "  p0 = f32[128,256]{1,0} parameter(0)\n  p1 = f32[128,256]{1,0} parameter(1)\n  z = f32[] constant(0)\n";
  std::string prev = "p0";
  for (int i = 0; i < kN; ++i) {
    const std::string n = "v." + std::to_string(i);
    if (i % 100 == 99)
      t += "  r." + std::to_string(i) + " = f32[128]{0} reduce(" + prev + ", z), dimensions={1}, to_apply=add\n";
    t += "  " + n + " = f32[128,256]{1,0} " + (i % 2 ? "multiply(" : "add(") + prev + ", p1), metadata={op_type=\"Add\" op_name=\"layer/" + std::to_string(i) + "\"}\n";
    prev = n;
  }
  t += "  ROOT out = f32[128,256]{1,0} copy(" + prev + ")\n}\n";
  const auto t0 = std::chrono::steady_clock::now();
  const Module m = parse_hlo_module(t, "big.hlo");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(m.instruction_count(), size_t(3 + kN + kN / 100 + 1 + 3));
  EXPECT_EQ(m.entry_computation().root_instruction().operands.at(0), int(m.entry_computation().instructions.size()) - 2);
  std::cout << "parsed " << m.instruction_count() << " instructions (" << t.size() / 1024 << " KiB) in " << s * 1e3 << " ms\n";
  EXPECT_LT(s, 20.0);  // ~0.2 s in a Release build; generous for sanitizer builds
}

}  // namespace
}  // namespace tpusim::hlo
