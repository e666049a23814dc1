// The workload's model: the preset it names with model_config applied, and the Model (models/model.h)
// the step builder builds from it, both through the model family registry (models/families.h).
// Declared in workload_config.h.
#include "base/config_error.h"
#include "models/families.h"
#include "models/vit.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

models::Head model_head(Task task) {
  switch (task) {
    case Task::kSequenceClassification: return models::Head::kSequenceClassification;
    case Task::kMaskedLm: return models::Head::kMaskedLm;
    case Task::kImageClassification: return models::Head::kImageClassification;
    case Task::kCausalLm: return models::Head::kCausalLm;
    case Task::kSeq2seq: return models::Head::kSeq2Seq;
  }
  return models::Head::kSequenceClassification;
}

const models::Family* model_family(const TrainingWorkload& t) {
  if (t.model == "custom") return &models::family(models::ModelFamily::kBert);
  const auto preset = models::find_model_preset(t.model);
  return preset ? &models::family(preset->family) : nullptr;
}

bool uses_flash_attention(const TrainingWorkload& t) {
  if (t.attention != Attention::kAuto) return t.attention == Attention::kFlash;
  const models::Family* f = model_family(t);
  return t.framework == FrameworkKind::kJax && f && f->id == models::ModelFamily::kLlama;
}

models::ModelArch resolve_model_arch(const TrainingWorkload& t) {
  const ModelConfig& m = t.model_config;
  return models::with_overrides(t.model == "custom" ? models::custom_arch() : models::find_preset(t.model),
                                {.layers = m.layers, .hidden = m.hidden, .heads = m.heads,
                                 .intermediate = m.intermediate, .vocab = m.vocab, .max_position = m.max_position, .kv_heads = m.kv_heads, .head_dim = m.head_dim});
}

std::unique_ptr<models::Model> make_model(const TrainingWorkload& t) {
  return models::make_model(resolve_model_arch(t), {.head = model_head(t.task), .num_labels = t.num_labels,
                                                    .max_predictions_per_seq = t.max_predictions_per_seq});
}

uint32_t image_tokens(const TrainingWorkload& t) {
  if (t.task != Task::kImageClassification) return 0;
  return uint32_t(models::vit_seq(*models::find_model_preset(t.model)));
}

uint64_t base_model_parameters(const TrainingWorkload& t) { return models::model_parameters(resolve_model_arch(t)); }

}  // namespace tpusim
