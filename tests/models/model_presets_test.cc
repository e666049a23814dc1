// The model presets of every family: parameter counts from the closed form against the published
// counts of the Hugging Face classes, name lookup, the "not simulated yet" rule, and docs/models.md.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "base/config_error.h"
#include "models/bert.h"
#include "models/model_presets.h"

namespace tpusim::models {
namespace {

ModelPreset preset(const std::string& name) {
  const auto p = find_model_preset(name);
  if (!p) throw std::runtime_error("no preset " + name);
  return *p;
}

// Published counts (Hugging Face `model.num_parameters()` of the class named): the figures and
// the Llama-3 model card's.
TEST(ModelPresets, PublishedParameterCountsExact) {
  const std::vector<std::pair<std::string, uint64_t>> cases = {
      {"roberta-base", 124645632},               // RobertaModel, pooler included
      {"distilbert-base-uncased", 66362880},     // DistilBertModel
      {"gpt2", 124439808},                       // GPT2LMHeadModel, tied head once (= GPT2Model)
      {"meta-llama/Llama-2-7b-hf", 6738415616},  // LlamaForCausalLM, untied head
      {"meta-llama/Meta-Llama-3-8B", 8030261248},
      {"t5-small", 60506624},                    // T5ForConditionalGeneration, tied head
      {"bert-base-uncased", 109482240},          // BertModel
      {"roberta-large", 355359744},
      {"gpt2-medium", 354823168},
      {"gpt2-large", 774030080},
      {"albert-base-v2", 11683584},              // AlbertModel
      {"t5-base", 222903552},
      {"facebook/bart-large", 406291456},        // BartModel
  };
  for (const auto& [name, count] : cases) EXPECT_EQ(model_parameters(preset(name)), count) << name;
}

// The rest against the commonly quoted size (within 1%).
TEST(ModelPresets, OtherCountsPlausible) {
  const std::vector<std::pair<std::string, double>> cases = {
      {"albert-xxlarge-v2", 223e6}, {"google/vit-base-patch16-224", 86.6e6}, {"bert-large-uncased", 335e6}};
  for (const auto& [name, quoted] : cases) {
    const double n = double(model_parameters(preset(name)));
    EXPECT_LT(std::abs(n - quoted) / quoted, 0.01) << name << ": " << n;
  }
}

// A BERT preset's BertModel count plus the classifier is what the training graph holds
// (expected_parameters, itself checked against the graph in bert_test.cc).
TEST(ModelPresets, BertCountMatchesTrainingGraphCount) {
  for (const BertConfig& b : bert_presets()) {
    const uint64_t classifier = uint64_t(b.hidden * b.num_labels + b.num_labels);
    EXPECT_EQ(model_parameters(preset(b.name)) + classifier, expected_parameters(b, BertHead::kSequenceClassification))
        << b.name;
  }
}

// Architecture features change the count as they should.
TEST(ModelPresets, ArchitectureFeatures) {
  // ALBERT: one shared layer, however many times it is applied.
  ModelPreset a = preset("albert-base-v2");
  const uint64_t albert = model_parameters(a);
  a.layers = 24;
  EXPECT_EQ(model_parameters(a), albert);
  // Grouped-query attention: Llama-3's 8 KV heads instead of 32 save 2 * 24 * 128 * 4096 per layer.
  ModelPreset l = preset("meta-llama/Meta-Llama-3-8B");
  const uint64_t gqa = model_parameters(l);
  l.kv_heads = l.heads;
  EXPECT_EQ(model_parameters(l) - gqa, uint64_t(32) * 2 * 24 * 128 * 4096);
  // An untied head: one more vocab x hidden matrix.
  ModelPreset g = preset("gpt2");
  const uint64_t tied = model_parameters(g);
  g.tied_embeddings = false;
  EXPECT_EQ(model_parameters(g) - tied, uint64_t(50257) * 768);
  // BART's learned positions have 2 extra rows per stack.
  ModelPreset b = preset("facebook/bart-large");
  const uint64_t bart = model_parameters(b);
  b.position_offset = 0;
  EXPECT_EQ(bart - model_parameters(b), uint64_t(2) * 2 * 1024);
  // ViT: 224/16 = 14 x 14 patches + [CLS] position rows; the patch embedding is 3*16*16 -> 768.
  ModelPreset v = preset("google/vit-base-patch16-224");
  const uint64_t vit = model_parameters(v);
  v.image_size = 384;
  EXPECT_EQ(model_parameters(v) - vit, uint64_t(24 * 24 - 14 * 14) * 768);
}

TEST(ModelPresets, RegistryIsConsistent) {
  std::set<std::string> names;
  for (const auto& p : model_presets()) {
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate " << p.name;
    EXPECT_FALSE(p.counted_class.empty()) << p.name;
    EXPECT_GT(p.layers, 0) << p.name;
    EXPECT_EQ(p.heads % p.kv_heads, 0) << p.name;
    if (p.family != ModelFamily::kT5) {
      EXPECT_EQ(p.head_dim * p.heads, p.hidden) << p.name;
    }
  }
  // Every BERT preset is listed; every family is simulated today.
  for (const auto& n : bert_preset_names()) EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(simulated_family_names(), (std::vector<std::string>{"bert", "roberta", "distilbert", "albert", "gpt2", "llama",
                                                                "t5", "bart", "vit"}));
}

TEST(ModelPresets, NamesWithHubOrganisation) {
  EXPECT_EQ(preset("openai-community/gpt2").name, "gpt2");
  EXPECT_EQ(preset("google-bert/bert-base-uncased").name, "bert-base-uncased");
  EXPECT_EQ(preset("FacebookAI/roberta-base").name, "roberta-base");
  EXPECT_EQ(preset("google-t5/t5-small").name, "t5-small");
  EXPECT_FALSE(find_model_preset("someone/gpt2"));
  EXPECT_FALSE(find_model_preset("Llama-2-7b-hf"));  // the name is meta-llama/...
}

TEST(ModelPresets, EveryFamilySimulated) {
  EXPECT_FALSE(unsimulated_model_error("bert-tiny"));
  EXPECT_FALSE(unsimulated_model_error("google-bert/bert-base-cased"));
  EXPECT_FALSE(unsimulated_model_error("google/vit-base-patch16-224"));
  EXPECT_FALSE(unsimulated_model_error("openai-community/gpt2"));
  EXPECT_FALSE(unsimulated_model_error("google-t5/t5-small"));
  EXPECT_FALSE(unsimulated_model_error("facebook/bart-large"));
  EXPECT_FALSE(unsimulated_model_error("meta-llama/Llama-2-7b-hf"));
  // Every preset's family is simulated today: no preset gets the not-yet-simulated error.
  for (const auto& p : model_presets()) EXPECT_FALSE(unsimulated_model_error(p.name)) << p.name;
  // find_preset (the BERT graph builder's lookup) names the BERT presets for another family's.
  try {
    find_preset("t5-small");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("is not a BERT preset"), std::string::npos) << err.what();
  }
}

TEST(ModelPresets, UnknownNameSuggestsAcrossAllFamilies) {
  const auto e = unsimulated_model_error("robreta-base");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->suggestion, "did you mean 'roberta-base'?");
  for (const auto& n : model_preset_names()) EXPECT_NE(e->rule.find(n), std::string::npos) << n;
  EXPECT_EQ(unsimulated_model_error("bert-base-uncase")->suggestion, "did you mean 'bert-base-uncased'?");
}

TEST(ModelPresets, DocsTableIsCurrent) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/docs/models.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find(model_presets_markdown()), std::string::npos)
      << path << " lacks the current presets table; paste `build/tpusim models --markdown` into it:\n"
      << model_presets_markdown();
}

TEST(ModelPresets, Thousands) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1000), "1,000");
  EXPECT_EQ(with_thousands(6738415616), "6,738,415,616");
}

}  // namespace
}  // namespace tpusim::models
