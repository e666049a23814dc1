// BERT model presets by Hugging Face hub name (architecture hyper-parameters from each model's
// config.json; the numbers also appear in docs/sources.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::models {

struct BertConfig {
  std::string name;
  int64_t layers = 0;        // num_hidden_layers
  int64_t hidden = 0;        // hidden_size
  int64_t heads = 0;         // num_attention_heads
  int64_t intermediate = 0;  // intermediate_size
  int64_t vocab = 0;         // vocab_size
  int64_t max_position = 512;  // max_position_embeddings
  int64_t type_vocab = 2;      // type_vocab_size
  int64_t num_labels = 2;      // sequence-classification head outputs (1 = regression)
  double hidden_dropout = 0.1;     // hidden_dropout_prob
  double attention_dropout = 0.1;  // attention_probs_dropout_prob
  double layer_norm_eps = 1e-12;
};

// All presets, in a stable order.
const std::vector<BertConfig>& bert_presets();
std::vector<std::string> bert_preset_names();

// The preset named `name` (a hub prefix such as "google-bert/" is accepted). Throws ConfigError
// naming the known presets, with "did you mean" for a near miss.
BertConfig find_preset(const std::string& name);

}  // namespace tpusim::models
