// BERT graphs: presets, exact parameter counts of the published models, gradient shapes, the
// training step's matmul FLOPs against docs/sources.md's closed form, and gradients of a miniature
// BERT against finite differences.
#include <gtest/gtest.h>

#include <set>

#include "base/config_error.h"
#include "models/bert.h"
#include "models/families.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

BertGraph build(const std::string& preset, Head head, int64_t b, int64_t s) {
  BertGraphOptions o;
  o.head = head;
  o.batch = b;
  o.seq = s;
  return build_bert(find_preset(preset), o);
}

// BertForSequenceClassification with 2 labels, `sum(p.numel() for p in model.parameters())`:
// published for base-uncased (109,483,778), base-cased and large-uncased; large-cased and tiny
// (BertModel 4,385,920 + 258 for the head) from the closed form of docs/models.md.
TEST(BertPresets, ParameterCountsMatchPublishedModels) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"bert-base-uncased", 109483778}, {"bert-base-cased", 108311810}, {"bert-large-uncased", 335143938},
      {"bert-large-cased", 333581314},  {"bert-tiny", 4386178},
  };
  for (const auto& [name, count] : cases) {
    BertGraph m = build(name, Head::kSequenceClassification, 1, 8);
    EXPECT_EQ(count_parameters(m.graph), count) << name;
    EXPECT_EQ(expected_parameters(find_preset(name), Head::kSequenceClassification), count) << name;
  }
}

// BertForPreTraining: the tied decoder weight counts once; + transform, LayerNorm, decoder bias, NSP.
TEST(BertPresets, PreTrainingParameterCount) {
  BertGraph m = build("bert-base-uncased", Head::kMaskedLm, 1, 32);
  EXPECT_EQ(count_parameters(m.graph), 110106428u);
  EXPECT_EQ(expected_parameters(find_preset("bert-base-uncased"), Head::kMaskedLm), 110106428u);
}

TEST(BertPresets, UnknownPresetListsKnownNames) {
  try {
    find_preset("bert-base-uncase");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    for (const auto& p : bert_family().presets) EXPECT_NE(msg.find(p.name), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean 'bert-base-uncased'"), std::string::npos) << msg;
  }
  EXPECT_EQ(find_preset("google-bert/bert-large-cased").vocab, 28996);
}

TEST(BertGraph, RejectsBadShapes) {
  const ModelArch cfg = find_preset("bert-tiny");
  EXPECT_THROW(build_bert(cfg, {.batch = 2, .seq = 513}), ConfigError);
  EXPECT_THROW(build_bert(cfg, {.batch = 0, .seq = 16}), ConfigError);
  EXPECT_THROW(build_bert(cfg, {.head = Head::kMaskedLm, .batch = 2, .seq = 16, .max_predictions_per_seq = 17}),
               ConfigError);
}

TEST(BertGraph, HuggingFaceNamesAndRoles) {
  BertGraph m = build("bert-tiny", Head::kSequenceClassification, 2, 16);
  std::set<std::string> names;
  for (int p : m.params) {
    EXPECT_EQ(m.graph.node(p).role, ParamRole::kTrainable);
    names.insert(m.graph.node(p).name);
  }
  EXPECT_EQ(names.size(), m.params.size());  // no duplicates
  for (const char* n : {"bert.embeddings.word_embeddings.weight", "bert.embeddings.LayerNorm.bias",
                        "bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.1.output.LayerNorm.weight",
                        "bert.encoder.layer.1.attention.output.dense.bias", "bert.pooler.dense.weight", "classifier.bias"})
    EXPECT_TRUE(names.count(n)) << n;
  // 5 embedding tensors + 16 per layer + 2 pooler + 2 classifier (HF: len(list(model.parameters()))).
  EXPECT_EQ(m.params.size(), 5u + 16u * 2 + 2 + 2);
  EXPECT_TRUE(m.graph.node(m.loss).shape.empty());
  EXPECT_EQ(m.graph.node(m.logits).shape, (Dims{2, 2}));
  for (int i : m.inputs) EXPECT_EQ(m.graph.node(i).role, ParamRole::kInput);
}

TEST(BertGraph, EvaluationGraphHasNoDropout) {
  BertGraphOptions o{.batch = 2, .seq = 16, .training = false};
  BertGraph m = build_bert(find_preset("bert-tiny"), o);
  for (const auto& n : m.graph.nodes()) EXPECT_FALSE(n.kind == OpKind::kElementwise && n.ew == EwOp::kDropoutMask);
  BertGraph t = build("bert-tiny", Head::kSequenceClassification, 2, 16);
  int masks = 0;
  for (const auto& n : t.graph.nodes()) masks += n.kind == OpKind::kElementwise && n.ew == EwOp::kDropoutMask;
  EXPECT_EQ(masks, 1 + 2 * 3 + 1);  // embeddings, 3 per layer (attention probs, two outputs), classifier
}

TEST(BertGraph, GradientShapesEqualParameterShapes) {
  for (Head head : {Head::kSequenceClassification, Head::kMaskedLm}) {
    for (DType t : {DType::kF32, DType::kBF16}) {
      BertTrainingStep s = build_training_step(find_preset("bert-tiny"),
                                               {.head = head, .batch = 2, .seq = 16, .max_predictions_per_seq = 3, .dtype = t},
                                               OptimizerConfig{});
      ASSERT_EQ(s.grads.grads.size(), s.model.params.size());
      for (size_t i = 0; i < s.model.params.size(); ++i) {
        const Node& p = s.model.graph.node(s.model.params[i]);
        const Node& gr = s.model.graph.node(s.grads.grads[i]);
        EXPECT_EQ(gr.shape, p.shape) << p.name;
        EXPECT_EQ(gr.dtype, p.dtype) << p.name;
        // Every parameter influences the loss, so no gradient is a zero fill.
        EXPECT_FALSE(gr.kind == OpKind::kBroadcast && gr.inputs.size() == 1 &&
                     s.model.graph.node(gr.inputs[0]).kind == OpKind::kConstant)
            << p.name;
      }
    }
  }
}

// docs/sources.md: per layer and step 3·(24·B·S·H² + 4·B·S²·H) matmul FLOPs (forward + both backward
// dots of every encoder matmul); bert-base at B=32, S=128 is ≈2.15 TFLOP.
TEST(BertFlops, TrainingStepMatchesClosedForm) {
  const ModelArch cfg = find_preset("bert-base-uncased");
  const uint64_t B = 32, S = 128, H = 768, L = 12;
  BertTrainingStep s = build_training_step(cfg, {.batch = int64_t(B), .seq = int64_t(S)}, OptimizerConfig{});
  uint64_t encoder = 0, total = 0;
  int encoder_dots = 0;
  for (const auto& n : s.model.graph.nodes()) {
    if (n.kind != OpKind::kDot) continue;
    total += dot_flops(s.model.graph, n);
    if (n.name.rfind("bert.encoder.layer.", 0) == 0) {
      encoder += dot_flops(s.model.graph, n);
      ++encoder_dots;
    }
  }
  const uint64_t per_layer = 3 * (24 * B * S * H * H + 4 * B * S * S * H);
  EXPECT_EQ(encoder, L * per_layer);
  EXPECT_EQ(encoder, 2145336164352u);
  EXPECT_EQ(encoder_dots, int(L) * 8 * 3);  // 6 Linear + 2 attention dots, each forward + 2 backward
  // Outside the encoder: pooler Linear(H, H) and classifier Linear(H, 2) on B rows, 3 dots each.
  EXPECT_EQ(total - encoder, 3 * (2 * B * H * H + 2 * B * H * 2));
}

// A miniature BERT (1 layer, hidden 8, 2 heads) in double precision: every parameter's gradient
// against central finite differences, both heads, with padding in the attention mask.
class MiniBert : public ::testing::TestWithParam<Head> {};

TEST_P(MiniBert, GradientsMatchFiniteDifferences) {
  ModelArch cfg{.name = "mini", .layers = 1, .hidden = 8, .heads = 2, .intermediate = 12, .vocab = 11,
                .max_position = 5, .type_vocab = 2};
  const int64_t B = 2, S = 4, P = 2;
  BertGraph m = build_bert(cfg, {.head = GetParam(), .batch = B, .seq = S, .max_predictions_per_seq = P,
                                 .num_labels = 3, .training = false});
  Gradients gr = build_backward(m.graph, m.loss, m.params);
  std::map<int, test::Tensor> in;
  for (int i : m.inputs) {
    const Node& n = m.graph.node(i);
    std::vector<double> v;
    if (n.name == "input_ids") v = {1, 5, 7, 0, 2, 10, 3, 0};
    if (n.name == "token_type_ids") v = {0, 0, 1, 1, 0, 1, 1, 0};
    if (n.name == "attention_mask") v = {1, 1, 1, 1, 1, 1, 1, 0};
    if (n.name == "labels") v = {2, 0};
    if (n.name == "masked_lm_positions") v = {1, 3, S + 0, S + 2};  // rows of [B*S, H]
    if (n.name == "masked_lm_ids") v = {4, 9, 6, 1};
    if (n.name == "masked_lm_weights") v = {1, 1, 1, 0};
    if (n.name == "next_sentence_labels") v = {1, 0};
    ASSERT_EQ(int64_t(v.size()), num_elements(n.shape)) << n.name;
    in[i] = {n.shape, v};
  }
  test::expect_gradients_match(m.graph, m.loss, gr, test::random_inputs(m.graph, in, 7), 6);
}

INSTANTIATE_TEST_SUITE_P(Heads, MiniBert,
                         ::testing::Values(Head::kSequenceClassification, Head::kMaskedLm));

}  // namespace
}  // namespace tpusim::models

namespace tpusim::models {
namespace {

// BERT behind the model interface (models/model.h): the same graph as build_bert, its units (the
// layers flagged), and its module tree as Hugging Face nests it.
TEST(BertModel, ImplementsTheModelInterface) {
  const auto m = make_model(find_preset("bert-tiny"), {.head = Head::kMaskedLm, .max_predictions_per_seq = 20});
  const ModelGraph g = m->build_forward({.batch = 2, .seq = 16});
  const BertGraph b = build_bert(find_preset("bert-tiny"),
                                 {.head = Head::kMaskedLm, .batch = 2, .seq = 16, .max_predictions_per_seq = 16});
  EXPECT_EQ(g.graph.nodes().size(), b.graph.nodes().size());  // P capped at S = 16
  EXPECT_EQ(g.params, b.params);
  EXPECT_EQ(count_parameters(g.graph), expected_parameters(find_preset("bert-tiny"), Head::kMaskedLm));
  ASSERT_EQ(g.units.size(), size_t(find_preset("bert-tiny").layers) + 2);
  EXPECT_EQ(g.units.front().name, "bert.embeddings");
  EXPECT_FALSE(g.units.front().layer);
  EXPECT_EQ(g.units[1].name, "bert.encoder.layer.0");
  EXPECT_TRUE(g.units[1].layer);
  EXPECT_FALSE(g.units.back().layer);
  ASSERT_TRUE(g.modules);
  EXPECT_EQ(g.modules->module_class(""), "BertForPreTraining");
  EXPECT_EQ(make_model(find_preset("bert-tiny"))->module_class(""),
            "BertForSequenceClassification");
  EXPECT_EQ(m->module_class("bert.encoder.layer"), "ModuleList");
  EXPECT_EQ(m->module_class("bert.encoder.layer.1"), "BertLayer");
  EXPECT_EQ(m->module_class("bert.encoder.layer.1.attention.output"), "BertSelfOutput");
  EXPECT_EQ(m->module_class("bert.encoder.layer.1.output"), "BertOutput");
  EXPECT_EQ(m->module_class("bert.embeddings.word_embeddings"), "Embedding");
  // Every class the tree answers is one a wrap policy may name.
  for (const auto& p : g.params) {
    std::string path = g.graph.node(p).name;
    while (true) {
      const size_t dot = path.rfind('.');
      path = dot == std::string::npos ? "" : path.substr(0, dot);
      const std::string c = m->module_class(path);
      if (c != "ModuleList") {
        const auto& known = m->module_classes();
        EXPECT_NE(std::find(known.begin(), known.end(), c), known.end()) << path << " " << c;
      }
      if (path.empty()) break;
    }
  }
}

}  // namespace
}  // namespace tpusim::models
