#include "models/family.h"

#include <algorithm>
#include <memory>

#include "base/config_error.h"
#include "config/suggest.h"

namespace tpusim::models {

std::string head_name(Head h) {
  switch (h) {
    case Head::kSequenceClassification: return "sequence_classification";
    case Head::kMaskedLm: return "masked_lm";
    case Head::kCausalLm: return "causal_lm";
    case Head::kSeq2Seq: return "seq2seq";
    case Head::kImageClassification: return "image_classification";
  }
  return "?";
}

TransformerModel::TransformerModel(const Family& family, ModelArch arch, HeadOptions head)
    : arch_(with_derived_fields(std::move(arch))), head_(head), family_(&family) {
  const auto& heads = family_->heads;
  if (std::find(heads.begin(), heads.end(), head_.head) == heads.end()) {
    std::vector<std::string> names;
    for (Head h : heads) names.push_back(head_name(h));
    throw ConfigError({"", "task", 0, head_name(head_.head),
                       "is not a head of " + arch_.name + " (family " + family_->name + ": " + config::join(names) + ")", ""});
  }
  if (!family_->build)
    throw ConfigError({"", "model", 0, arch_.name, "(family " + family_->name + ") is not simulated yet", ""});
}

std::string TransformerModel::module_class(const std::string& path) const {
  return family_->modules.class_of(path, head_.head);
}

ModelGraph TransformerModel::build_forward(const StepShape& shape) const {
  if (shape.tensor > 1 && !llama_like(family_->id))
    throw ConfigError({"", "mesh.tensor", 0, std::to_string(shape.tensor),
                       "tensor parallelism is modelled for Llama-family models only (family " + family_->name + ")", ""});
  if (const uint32_t n = shape.mesh[MeshAxis::kSequence]; n > 1 && !llama_like(family_->id))
    throw ConfigError({"", "mesh.sequence", 0, std::to_string(n),
                       "sequence parallelism is modelled for Llama-family models only (family " + family_->name + ")", ""});
  ModelGraph m = family_->build(arch_, head_, shape);
  m.modules = std::make_shared<TransformerModel>(*this);
  return m;
}

uint64_t count_parameters(const Graph& g) {
  uint64_t n = 0;
  for (const auto& node : g.nodes())
    if (node.kind == OpKind::kParameter && node.role == ParamRole::kTrainable) n += uint64_t(num_elements(node.shape));
  return n;
}

}  // namespace tpusim::models
