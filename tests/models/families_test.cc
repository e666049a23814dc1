// The model family registry: the presets' parameter counts from the closed form against the published
// counts of the Hugging Face classes, name lookup, the "not simulated yet" rule, the module-class
// tables, model_config's overrides, and docs/models.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "base/config_error.h"
#include "models/bert.h"
#include "models/families.h"

namespace tpusim::models {
namespace {

ModelArch preset(const std::string& name) {
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
      // The Llama-2 and Llama-3.1 model cards' configs (Hugging Face's LlamaForCausalLM counts).
      {"meta-llama/Llama-2-13b-hf", 13015864320},
      {"meta-llama/Llama-2-70b-hf", 68976648192},
      {"meta-llama/Llama-3.1-8B", 8030261248},
      {"meta-llama/Llama-3.1-70B", 70553706496},
      {"gpt3-175b", 174780997632},  // MaxText's gpt3-175b.yml (tests/models/mistral_gemma_test.cc derives it)
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
  for (const ModelArch& b : bert_family().presets) {
    const uint64_t classifier = uint64_t(b.hidden * 2 + 2);  // 2 labels
    EXPECT_EQ(model_parameters(preset(b.name)) + classifier, expected_parameters(b, Head::kSequenceClassification))
        << b.name;
  }
}

// Architecture features change the count as they should.
TEST(ModelPresets, ArchitectureFeatures) {
  // ALBERT: one shared layer, however many times it is applied.
  ModelArch a = preset("albert-base-v2");
  const uint64_t albert = model_parameters(a);
  a.layers = 24;
  EXPECT_EQ(model_parameters(a), albert);
  // Grouped-query attention: Llama-3's 8 KV heads instead of 32 save 2 * 24 * 128 * 4096 per layer.
  ModelArch l = preset("meta-llama/Meta-Llama-3-8B");
  const uint64_t gqa = model_parameters(l);
  l.kv_heads = l.heads;
  EXPECT_EQ(model_parameters(l) - gqa, uint64_t(32) * 2 * 24 * 128 * 4096);
  // An untied head: one more vocab x hidden matrix.
  ModelArch g = preset("gpt2");
  const uint64_t tied = model_parameters(g);
  g.tied_embeddings = false;
  EXPECT_EQ(model_parameters(g) - tied, uint64_t(50257) * 768);
  // BART's learned positions have 2 extra rows per stack.
  ModelArch b = preset("facebook/bart-large");
  const uint64_t bart = model_parameters(b);
  b.position_offset = 0;
  EXPECT_EQ(bart - model_parameters(b), uint64_t(2) * 2 * 1024);
  // ViT: 224/16 = 14 x 14 patches + [CLS] position rows; the patch embedding is 3*16*16 -> 768.
  ModelArch v = preset("google/vit-base-patch16-224");
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
    if (!family(p.family).own_head_dim) {  // T5's d_kv and Gemma's 256 are fields of their own
      EXPECT_EQ(p.head_dim * p.heads, p.hidden) << p.name;
    }
  }
  // Every family's presets are listed, as that family; every family is simulated today.
  for (const Family* f : families()) {
    EXPECT_FALSE(f->heads.empty()) << f->name;
    for (const ModelArch& p : f->presets) {
      EXPECT_TRUE(names.count(p.name)) << p.name;
      EXPECT_EQ(p.family, f->id) << p.name;
    }
  }
  EXPECT_EQ(simulated_family_names(), (std::vector<std::string>{"bert", "roberta", "distilbert", "albert", "gpt2", "llama",
                                                                "mistral", "gemma", "gpt3", "t5", "bart", "vit"}));
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
  // find_preset: any family's preset, or bad input with "did you mean".
  EXPECT_EQ(find_preset("google-t5/t5-small").family, ModelFamily::kT5);
  try {
    find_preset("t5-smal");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("did you mean 't5-small'"), std::string::npos) << err.what();
  }
}

// The module-class tables: the classes a wrapping policy may name are the tables' own, containers
// aside, and the patterns match as documented.
TEST(ModelFamilies, ModuleClassTablesAreConsistent) {
  for (const Family* f : families()) {
    const auto& known = f->modules.classes();
    EXPECT_EQ(std::count(known.begin(), known.end(), "ModuleList"), 0) << f->name;
    EXPECT_EQ(std::set<std::string>(known.begin(), known.end()).size(), known.size()) << f->name;  // once each
    for (Head h : f->heads) EXPECT_NE(std::find(known.begin(), known.end(), f->modules.class_of("", h)), known.end());
  }
  EXPECT_EQ(family(ModelFamily::kGpt2).modules.classes(),
            (std::vector<std::string>{"GPT2LMHeadModel", "GPT2Model", "GPT2Block", "Embedding", "LayerNorm",
                                      "GPT2Attention", "GPT2MLP", "Linear", "Conv1D"}));
  EXPECT_TRUE(path_matches("bert.encoder.layer.*", "bert.encoder.layer.11"));
  EXPECT_FALSE(path_matches("bert.encoder.layer.*", "bert.encoder.layer.11.output"));
  EXPECT_TRUE(path_matches("**.LayerNorm", "LayerNorm"));
  EXPECT_TRUE(path_matches("**.LayerNorm", "bert.embeddings.LayerNorm"));
  EXPECT_TRUE(path_matches("**.*_embeddings", "bert.embeddings.word_embeddings"));
  EXPECT_FALSE(path_matches("**.*_embeddings", "bert.embeddings"));
  EXPECT_TRUE(path_matches("decoder.**.layer.1", "decoder.block.3.layer.1"));
  EXPECT_FALSE(path_matches("decoder.**.layer.1", "encoder.block.3.layer.1"));
  const auto t5 = make_model(preset("t5-small"));
  EXPECT_EQ(t5->module_class("decoder.block.0.layer.1"), "T5LayerCrossAttention");
  EXPECT_EQ(t5->module_class("encoder.block.0.layer.1"), "T5LayerFF");
  EXPECT_EQ(t5->module_class("encoder.block"), "ModuleList");
  EXPECT_EQ(make_model(preset("albert-base-v2"))->module_class("albert.encoder.albert_layer_groups.0.albert_layers.0#3"),
            "AlbertLayer");  // a shared layer's l-th application
}

// model_config's overrides, one rule per family trait.
TEST(ModelFamilies, OverridesFollowTheFamilyRules) {
  // Grouped-query attention keeps its query heads per key/value head; head_dim follows.
  ModelArch l = with_overrides(preset("meta-llama/Meta-Llama-3-8B"), {.hidden = 256, .heads = 8});
  EXPECT_EQ(l.kv_heads, 2);
  EXPECT_EQ(l.head_dim, 32);
  // An encoder–decoder's decoder gets the encoder's layer count; T5 keeps d_kv unless hidden or heads change.
  ModelArch t = with_overrides(preset("t5-small"), {.layers = 2, .intermediate = 100});
  EXPECT_EQ(t.decoder_layers, 2);
  EXPECT_EQ(t.head_dim, 64);
  EXPECT_EQ(with_overrides(preset("t5-small"), {.hidden = 256}).head_dim, 32);
  // ALBERT's own embedding width stays; another's follows hidden.
  EXPECT_EQ(with_overrides(preset("albert-base-v2"), {.hidden = 256, .heads = 4}).embedding_size, 128);
  EXPECT_EQ(with_overrides(preset("roberta-base"), {.hidden = 256, .heads = 4}).embedding_size, 256);
  // custom: a BERT architecture from the overrides alone.
  const ModelArch c = with_overrides(custom_arch(), {.layers = 2, .hidden = 64, .heads = 2, .intermediate = 128, .vocab = 100});
  EXPECT_EQ(c.family, ModelFamily::kBert);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.max_position, 512);
  EXPECT_EQ(model_parameters(c), expected_parameters(c, Head::kSequenceClassification) - (64 * 2 + 2));
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
