// The HLO export (compiler/hlo/hlo_export.h, docs/hlo.md "Export"): BERT-base's training step, the
// kernels and one model of each family (tiny model_config variants) written out and parsed back with
// the project's parser. The opcode counts are derived here from the graph's node kinds by the
// mapping docs/hlo.md states; dots, parameters and outputs are compared node by node.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_export.h"
#include "compiler/hlo/hlo_parser.h"
#include "config/hw_loader.h"
#include "config/override.h"
#include "models/kernels.h"
#include "tests/hlo/hlo_step_util.h"

namespace tpusim::hlo {
namespace {

using models::EwOp;
using models::Graph;
using models::Node;
using models::OpKind;
using testing::Step;
using testing::step;

// The instructions docs/hlo.md lists for each node, by opcode.
std::map<std::string, int64_t> expected_opcodes(const Graph& g) {
  std::map<std::string, int64_t> c;
  for (const Node& n : g.nodes()) {
    // A materialized value's barrier (the users read it).
    if (n.materialize && n.kind != OpKind::kParameter && n.kind != OpKind::kConstant) ++c["opt-barrier"];
    switch (n.kind) {
      case OpKind::kParameter: ++c["parameter"]; break;
      case OpKind::kConstant: ++c["constant"]; break;
      case OpKind::kDot: ++c["dot"]; break;
      case OpKind::kAttention: break;  // not exported (hlo_export.h)
      case OpKind::kHostOffload:       // likewise
      case OpKind::kHostReload: break;
      case OpKind::kBroadcast: ++c["broadcast"]; break;
      case OpKind::kReduce: ++c["reduce"], ++c["constant"]; break;  // + the init value
      case OpKind::kReshape: ++c["reshape"]; break;
      case OpKind::kTranspose: ++c["transpose"]; break;
      case OpKind::kConvert: ++c["convert"]; break;
      case OpKind::kIota: ++c["iota"]; break;
      case OpKind::kGather: ++c["gather"]; break;
      case OpKind::kScatterAdd: ++c["scatter"], ++c["constant"], ++c["broadcast"]; break;  // + zeros
      case OpKind::kSlice: ++c["slice"]; break;
      case OpKind::kConcatenate: ++c["concatenate"]; break;
      case OpKind::kCollective: ++c[models::collective_op_name(n.collective.op)]; break;
      // The step graphs counted here are one core's, without asynchronous collectives (the
      // round trips of tests/hlo/hlo_roundtrip_test.cc cover those).
      case OpKind::kCollectiveDone: ADD_FAILURE() << "an asynchronous collective's done: " << n.name; break;
      case OpKind::kElementwise: {
        // Operands: a scalar constant is broadcast (converted first when of another type), a
        // tensor of another type converted.
        if (n.ew != EwOp::kDropoutMask)
          for (int i : n.inputs) {
            const Node& in = g.node(i);
            if (in.kind == OpKind::kConstant) ++c["broadcast"], c["constant"] += in.dtype != n.dtype;
            else if (in.dtype != n.dtype) ++c["convert"];
          }
        switch (n.ew) {
          case EwOp::kAdd: ++c["add"]; break;
          case EwOp::kSub: ++c["subtract"]; break;
          case EwOp::kMul: ++c["multiply"]; break;
          case EwOp::kDiv: ++c["divide"]; break;
          case EwOp::kMax: ++c["maximum"]; break;
          case EwOp::kExp: ++c["exponential"]; break;
          case EwOp::kRsqrt: ++c["rsqrt"]; break;
          case EwOp::kNeg: ++c["negate"]; break;
          case EwOp::kTanh: ++c["tanh"]; break;
          case EwOp::kErf: ++c["erf"]; break;
          case EwOp::kLog: ++c["log"]; break;
          case EwOp::kSqrt: ++c["sqrt"]; break;
          case EwOp::kRelu: ++c["maximum"], ++c["constant"], ++c["broadcast"]; break;
          case EwOp::kCmpEq: case EwOp::kCmpGt: ++c["compare"], ++c["convert"]; break;
          case EwOp::kDropoutMask:  // lo, hi, rate, scale; rate, scale and zeros broadcast
            ++c["rng"], ++c["compare"], ++c["select"], ++c["multiply"], c["constant"] += 4, c["broadcast"] += 3;
            break;
        }
        break;
      }
    }
  }
  ++c["tuple"];
  return c;
}

std::map<std::string, int64_t> opcodes(const Computation& comp) {
  std::map<std::string, int64_t> c;
  for (const Instruction& in : comp.instructions) ++c[in.opcode];
  return c;
}

std::vector<int64_t> as64(const std::vector<int>& v) { return {v.begin(), v.end()}; }

// `comp` is the export of `g`: opcode counts, every node's instruction with its shape and type,
// parameters in graph order, dots' dimension numbers, the ROOT tuple of the outputs.
void check_computation(const Module& m, const Computation& comp, const Graph& g) {
  EXPECT_EQ(opcodes(comp), expected_opcodes(g)) << comp.name;
  int64_t param = 0;
  for (const Node& n : g.nodes()) {
    const Instruction* in = comp.find(hlo_instruction_name(n));
    ASSERT_NE(in, nullptr) << hlo_instruction_name(n);
    EXPECT_EQ(in->shape.dims, n.shape) << in->name;
    EXPECT_EQ(element_type_name(in->shape.type), models::dtype_name(n.dtype)) << in->name;
    ASSERT_EQ(metadata_attr(m, *in).value_or(std::map<std::string, std::string>{})["op_name"], n.name);
    if (n.kind == OpKind::kParameter) {
      EXPECT_EQ(in->parameter_number, param++) << in->name;
    }
    if (n.kind == OpKind::kDot) {
      ASSERT_EQ(in->opcode, "dot");
      const DotDims d = dot_dims(m, *in);
      EXPECT_EQ(d.lhs_batch, as64(n.dot.lhs_batch)) << in->name;
      EXPECT_EQ(d.rhs_batch, as64(n.dot.rhs_batch)) << in->name;
      EXPECT_EQ(d.lhs_contracting, as64(n.dot.lhs_contract)) << in->name;
      EXPECT_EQ(d.rhs_contracting, as64(n.dot.rhs_contract)) << in->name;
      for (size_t j = 0; j < 2; ++j) {
        const Node& op = g.node(n.inputs[j]);
        EXPECT_EQ(comp.instructions[in->operands[j]].name, hlo_instruction_name(op) + (op.materialize && op.kind != OpKind::kParameter ? ".mat" : ""));
      }
      const Attribute* p = in->attr("operand_precision");
      if (n.precision == models::DotPrecision::kDefault) {
        EXPECT_EQ(p, nullptr) << in->name;
      } else {
        ASSERT_TRUE(p) << in->name;
        EXPECT_EQ(p->value, fmt::format("{{{0},{0}}}", models::dot_precision_name(n.precision))) << in->name;
      }
    }
  }
  const Instruction& root = comp.root_instruction();
  ASSERT_EQ(root.opcode, "tuple");
  ASSERT_EQ(root.operands.size(), g.outputs().size());
  for (size_t i = 0; i < root.operands.size(); ++i)
    EXPECT_EQ(comp.instructions[root.operands[i]].name, hlo_instruction_name(g.node(g.outputs()[i])));
}

Module export_and_parse(const Graph& g, const HloExportOptions& o = {}) {
  const std::string text = export_hlo(g, o);
  EXPECT_EQ(text, export_hlo(g, o)) << "deterministic";
  return parse_hlo_module(text, "export.hlo");
}

void check_step(const Step& s) {
  if (s.sg->fsdp) {
    HloExportOptions o;
    o.extra.push_back({"optimizer_update", &s.sg->fsdp->optimizer.graph});
    const Module m = export_and_parse(s.sg->fsdp->graph, o);
    check_computation(m, m.entry_computation(), s.sg->fsdp->graph);
    const Computation* upd = m.find("optimizer_update");
    ASSERT_NE(upd, nullptr);
    check_computation(m, *upd, s.sg->fsdp->optimizer.graph);
    return;
  }
  const Module m = export_and_parse(s.sg->fwd.graph);
  check_computation(m, m.entry_computation(), s.sg->fwd.graph);
}

TEST(HloExport, BertBaseTrainStep) {
  const auto s = step("bert_base_mrpc_v3-8", "v3-8", {}, GraphKind::kTrainFirstStep);
  const Module m = export_and_parse(s->sg->fwd.graph);
  check_computation(m, m.entry_computation(), s->sg->fwd.graph);
  // The step's dots: 12 layers x (6 forward + 12 backward) and the pooler and classifier.
  int64_t dots = 0;
  for (const Node& n : s->sg->fwd.graph.nodes()) dots += n.kind == OpKind::kDot;
  EXPECT_EQ(opcodes(m.entry_computation())["dot"], dots);
  EXPECT_GT(dots, 12 * 18);
  ASSERT_NE(m.find("add.f32"), nullptr);  // reduce/scatter helpers, once each
  ASSERT_NE(m.find("max.f32"), nullptr);
}

TEST(HloExport, Bf16EvalStep) {
  check_step(*step("bert_base_mrpc_v3-8_bf16", "v3-8", {"model_config.layers=2"}, GraphKind::kEval));
}

TEST(HloExport, Families) {
  check_step(*step("gpt2_causal_lm_v3-8", "v3-8", {"model_config.layers=2"}));
  check_step(*step("roberta_base_sst2_v2-8", "v2-8", {"model_config.layers=2"}));
  check_step(*step("t5_small_v3-8", "v3-8", {"model_config.layers=2", "max_length=64", "max_target_length=32"}));
  check_step(*step("vit_base_v4-8", "v4-8", {"per_device_batch_size=1"}));  // ViT takes no model_config
  check_step(*step("llama3_8b_v6e-8", "v6e-8",
                   {"model_config.layers=2", "model_config.hidden=256", "model_config.heads=4",
                    "model_config.intermediate=512", "model_config.vocab=1000", "max_length=64"}));
}

TEST(HloExport, FsdpStepHasTheSliceUpdate) {
  check_step(*step("bert_large_fsdp_v3-32", "v3-32", {"model_config.layers=2"}));
}

TEST(HloExport, Kernels) {
  for (const std::string k : {"matmul", "layernorm", "softmax", "attention", "encoder_block"}) {
    models::KernelArgs a;
    a.kernel = k;
    if (k == "matmul") a.shape = {{"m", 64}, {"k", 32}, {"n", 16}};
    else if (k == "attention") a.shape = {{"heads", 2}, {"seq", 16}, {"head_dim", 8}};
    else if (k == "encoder_block") a.shape = {{"seq", 16}, {"hidden", 32}, {"heads", 2}, {"ffn", 64}};
    else a.shape = {{"rows", 8}, {"cols", 16}};
    a.precision = models::DotPrecision::kHighest;
    const Graph g = models::build_kernel(a);
    const Module m = export_and_parse(g);
    check_computation(m, m.entry_computation(), g);
  }
}

TEST(HloExport, EveryOpForm) {
  // The op forms a model may not use: relu, slice, concatenate, s32 compare, mixed types, dropout.
  Graph g;
  const int x = g.parameter("x [in]", {4, 6}, models::DType::kBF16);
  const int ids = g.parameter("ids", {4}, models::DType::kS32);
  const int r = g.ew(EwOp::kRelu, x);
  const int s = g.slice(r, 1, 2, 5);
  const int c = g.concatenate({s, s}, 1);
  const int f = g.convert(c, models::DType::kF32);
  const int mixed = g.ew(EwOp::kAdd, f, c);  // bf16 operand of an f32 add: converted
  const int half = g.ew(EwOp::kMul, mixed, g.constant(0.5, models::DType::kBF16));
  g.set_materialize(half);  // written with an opt-barrier its users read
  const int eq = g.ew(EwOp::kCmpEq, ids, g.constant(3, models::DType::kS32));
  const int d = g.dropout_mask(half, 0.1);
  const int mx = g.reduce(g.ew(EwOp::kMul, half, d), 1, models::ReduceOp::kMax);
  const int sc = g.scatter_add(g.transpose(g.broadcast(mx, {4, 4}, {0}), {1, 0}), ids, 10);
  g.mark_output(sc);
  g.mark_output(eq);
  const Module m = export_and_parse(g);
  check_computation(m, m.entry_computation(), g);
  const Computation& e = m.entry_computation();
  EXPECT_EQ(e.params[0].first, "x__in_.0");
  const Instruction& sl = *e.find(hlo_instruction_name(g.node(s)));
  const auto ranges = slice_attr(m, sl).value();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[1].start, 2);
  EXPECT_EQ(ranges[1].limit, 5);
  EXPECT_EQ(int_list_attr(m, *e.find(hlo_instruction_name(g.node(c))), "dimensions"), std::vector<int64_t>{1});
  EXPECT_EQ(direction_attr(m, *e.find(hlo_instruction_name(g.node(eq)) + ".cmp")), "EQ");
  EXPECT_EQ(direction_attr(m, *e.find(hlo_instruction_name(g.node(d)) + ".keep")), "GT");
  const Instruction& bar = *e.find(hlo_instruction_name(g.node(half)) + ".mat");
  EXPECT_EQ(bar.opcode, "opt-barrier");
  EXPECT_EQ(e.instructions[e.find(hlo_instruction_name(g.node(mx)))->operands[0]].operand_names[0], bar.name);
  ASSERT_NE(m.find("max.f32"), nullptr);
  ASSERT_NE(m.find("add.f32"), nullptr);
  EXPECT_EQ(string_attr(m, *e.find(hlo_instruction_name(g.node(sc))), "to_apply"), "add.f32");
}

}  // namespace
}  // namespace tpusim::hlo
