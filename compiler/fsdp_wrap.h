// FSDP wrapping policies: which modules of the model are FSDP units, as torch_xla's auto-wrap
// policies decide it (torch_xla/distributed/fsdp/wrap.py, what Trainer's fsdp_config selects):
//   * transformer_auto_wrap_policy (`fsdp_wrap_layer_classes`): every module of a listed class;
//   * size_based_auto_wrap_policy (`fsdp_min_num_params`): bottom-up, a module whose parameters not
//     already in a wrapped descendant reach N (recursing only into modules of >= N parameters;
//     ModuleLists are never wrapped);
// with the model's remaining parameters in the root unit, which torch_xla (after fairscale) does not
// reshard after the forward pass: gathered once for the whole step. The module tree is Hugging
// Face's BertForSequenceClassification / BertForPreTraining, read off the state_dict names of the
// graph's parameters (models/bert.h); the word embeddings tied to the MLM decoder belong to
// BertEmbeddings only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::models {
class Graph;
}

namespace tpusim::compiler {

// Module classes of the BERT models, for fsdp_wrap_layer_classes (header-only: the config check uses it).
inline const std::vector<std::string>& fsdp_module_classes() {
  static const std::vector<std::string> c = {
      "BertForSequenceClassification", "BertForPreTraining", "BertModel", "BertEmbeddings", "BertEncoder",
      "BertLayer", "BertAttention", "BertSelfAttention", "BertSelfOutput", "BertIntermediate", "BertOutput",
      "BertPooler", "BertPreTrainingHeads", "BertLMPredictionHead", "BertPredictionHeadTransform",
      "Linear", "Embedding", "LayerNorm"};
  return c;
}

struct FsdpWrapPolicy {
  uint64_t min_num_params = 0;             // size based; 0 = off
  std::vector<std::string> layer_classes;  // transformer based; empty = off
  bool custom() const { return min_num_params > 0 || !layer_classes.empty(); }
};

struct FsdpWrapUnit {
  std::string name;         // module path ("bert.encoder.layer.3"), "root" for the root unit
  std::vector<int> params;  // trainable parameter nodes, in graph order
  bool whole_step = false;  // the root unit: one gather for forward and backward
};

// The units of a custom policy over the graph's trainable parameters `params`, in the order of
// their first parameter (the root unit last if it holds any). Throws std::invalid_argument for a
// policy that is not custom.
std::vector<FsdpWrapUnit> fsdp_wrap_units(const models::Graph& g, const std::vector<int>& params,
                                          const FsdpWrapPolicy& policy);

}  // namespace tpusim::compiler
