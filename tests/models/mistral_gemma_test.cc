// Mistral and Gemma on the Llama builder (models/llama.h): the presets' graphs hold exactly the
// published parameter counts (Gemma's LM head tied to the embedding table); Mistral's sliding window
// masks key j for query i >= j + 4096 (eager: in the score bias, checked on its values; flash: in the
// kernel's attributes) and only where it masks anything; Gemma scales its embeddings by sqrt(hidden)
// and gates its MLP with the tanh GELU; MaxText's GPT-3 adds learned positions, biases and LayerNorm.
#include <gtest/gtest.h>

#include <cmath>

#include "base/config_error.h"
#include "models/families.h"
#include "models/layers.h"
#include "models/llama.h"
#include "tests/models/graph_eval.h"

namespace tpusim::models {
namespace {

ModelArch preset(const std::string& name) { return find_model_preset(name).value(); }

const Node* named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes())
    if (n.name == name) return &n;
  return nullptr;
}

TEST(MistralGemma, ParameterCountsMatchThePublishedOnes) {
  const std::pair<const char*, uint64_t> cases[] = {{"mistralai/Mistral-7B-v0.1", 7241732096u},
                                                    {"google/gemma-2b", 2506172416u},
                                                    {"google/gemma-7b", 8537680896u}};
  for (const auto& [name, count] : cases) {
    const ModelArch p = preset(name);
    const ModelGraph m = make_model(p)->build_forward({.batch = 1, .seq = 8, .dtype = DType::kBF16});
    EXPECT_EQ(count_parameters(m.graph), count) << name;
    EXPECT_EQ(model_parameters(p), count) << name;
    // As a workload resolves it (no override given): the same architecture, Gemma's head size kept.
    EXPECT_EQ(model_parameters(with_overrides(p, {})), count) << name;
  }
  EXPECT_EQ(with_overrides(preset("google/gemma-7b"), {}).head_dim, 256);
}

TEST(MistralGemma, SlidingWindowMasksOnlyBeyondTheWindow) {
  // The bias on its values: a window of 3 over 6 positions.
  Graph g;
  std::vector<int> params, inputs;
  const int bias = layers::causal_bias({g, params, inputs, DType::kF32, std::nullopt, DotPrecision::kDefault, false}, 6, "m", 3);
  const test::Tensor b = test::evaluate(g, {}, bias).at(bias);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      const bool masked = j > i || i >= j + 3;
      EXPECT_EQ(b.v[size_t(i * 6 + j)] < -1e30, masked) << i << "," << j;
    }
  // Mistral's 4,096 keys: nothing to mask at 4,096 tokens; the flash kernel and the eager bias get it at 8,192.
  ModelArch a = preset("mistralai/Mistral-7B-v0.1");
  a.layers = 1;
  for (int64_t s : {4096, 8192}) {
    const ModelGraph eager = make_model(a)->build_forward({.batch = 1, .seq = s, .dtype = DType::kBF16});
    EXPECT_EQ(named(eager.graph, "model.sliding_mask") != nullptr, s > 4096) << s;
    const ModelGraph flash =
        make_model(a)->build_forward({.batch = 1, .seq = s, .dtype = DType::kBF16, .flash_attention = true});
    for (const Node& n : flash.graph.nodes()) {
      if (n.kind == OpKind::kAttention) {
        EXPECT_EQ(n.attention.window, s > 4096 ? 4096 : 0) << s;
      }
    }
  }
}

TEST(MistralGemma, GemmaTiesScalesAndGates) {
  ModelArch a = preset("google/gemma-2b");
  a.layers = 1;
  const ModelGraph m = make_model(a)->build_forward({.batch = 1, .seq = 8, .dtype = DType::kBF16});
  const Node* scale = named(m.graph, "model.embed_scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_NEAR(m.graph.node(scale->inputs[1]).constant, std::sqrt(2048.0), 1e-9);
  const Node* head = named(m.graph, "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(m.graph.node(head->inputs[1]).name, "model.embed_tokens.weight");  // the table itself
  EXPECT_EQ(named(m.graph, "lm_head.weight"), nullptr);
  bool tanh = false;  // gelu_pytorch_tanh in the gated MLP
  for (const Node& n : m.graph.nodes())
    tanh = tanh || (n.kind == OpKind::kElementwise && n.ew == EwOp::kTanh && n.name.find(".mlp.act_fn") != std::string::npos);
  EXPECT_TRUE(tanh);
  // The LM head is the table: tensor parallelism over the vocabulary is not modelled for it.
  EXPECT_THROW(make_model(a)->build_forward({.batch = 1, .seq = 8, .dtype = DType::kBF16, .tensor = 2}), ConfigError);
}

// MaxText's gpt3-175b: per layer 3 (H H + H) query/key/value, H H + H out, H I + I and I H + H MLP, two
// LayerNorms (4 H): 1,812,099,072; 96 layers, the tied table (50,304 H), learned positions (16,384 H)
// and the final LayerNorm (2 H): 174,780,997,632.
TEST(Gpt3, ParameterCountLearnedPositionsBiasesLayerNorm) {
  const ModelArch p = preset("gpt3-175b");
  EXPECT_EQ(model_parameters(p), 174780997632u);
  ModelArch a = p;
  a.layers = 1;
  const ModelGraph m = make_model(a)->build_forward({.batch = 1, .seq = 16, .dtype = DType::kBF16});
  EXPECT_EQ(count_parameters(m.graph), model_parameters(a));
  EXPECT_NE(named(m.graph, "model.embed_positions.weight"), nullptr);
  EXPECT_NE(named(m.graph, "model.layers.0.self_attn.q_proj.bias"), nullptr);
  EXPECT_NE(named(m.graph, "model.layers.0.mlp.down_proj.bias"), nullptr);
  EXPECT_NE(named(m.graph, "model.norm.bias"), nullptr);  // LayerNorm, not RMSNorm
  EXPECT_EQ(named(m.graph, "rope.cos"), nullptr);         // no rotary tables
  EXPECT_EQ(named(m.graph, "model.layers.0.mlp.up_proj.weight"), nullptr);  // one gelu, not gated
  const Node* head = named(m.graph, "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(m.graph.node(head->inputs[1]).name, "model.embed_tokens.weight");  // logits_via_embedding
}

}  // namespace
}  // namespace tpusim::models
