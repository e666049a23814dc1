#include "models/bert_presets.h"

#include "base/config_error.h"
#include "config/suggest.h"
#include "models/model_presets.h"

namespace tpusim::models {

const std::vector<BertConfig>& bert_presets() {
  // {name, layers, hidden, heads, intermediate, vocab}; 512 positions and 2 token types for all.
  static const std::vector<BertConfig> presets = {
      {.name = "bert-base-uncased", .layers = 12, .hidden = 768, .heads = 12, .intermediate = 3072, .vocab = 30522},
      {.name = "bert-base-cased", .layers = 12, .hidden = 768, .heads = 12, .intermediate = 3072, .vocab = 28996},
      {.name = "bert-large-uncased", .layers = 24, .hidden = 1024, .heads = 16, .intermediate = 4096, .vocab = 30522},
      {.name = "bert-large-cased", .layers = 24, .hidden = 1024, .heads = 16, .intermediate = 4096, .vocab = 28996},
      // google/bert_uncased_L-2_H-128_A-2 ("BERT-Tiny" of Turc et al., 2019): for tests.
      {.name = "bert-tiny", .layers = 2, .hidden = 128, .heads = 2, .intermediate = 512, .vocab = 30522},
  };
  return presets;
}

std::vector<std::string> bert_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : bert_presets()) names.push_back(p.name);
  return names;
}

BertConfig find_preset(const std::string& name) {
  std::string key = name;
  for (const char* prefix : {"google-bert/", "google/"})
    if (key.rfind(prefix, 0) == 0) key = key.substr(std::string(prefix).size());
  for (const auto& p : bert_presets())
    if (p.name == key) return p;
  // Not a BERT preset: a preset of a family not simulated yet, or unknown (models/model_presets.h).
  if (auto e = unsimulated_model_error(name)) throw ConfigError(*e);
  // A preset of another simulated family (GPT-2, ViT) where a BERT architecture was asked for.
  std::vector<std::string> names;
  for (const auto& p : bert_presets()) names.push_back(p.name);
  throw ConfigError({"", "model", 0, name, "is not a BERT preset (BERT presets: " + config::join(names) + ")", ""});
}

}  // namespace tpusim::models
