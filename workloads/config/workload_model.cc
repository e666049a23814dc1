// The workload's model: the preset it names with model_config applied, and the Model (models/model.h)
// the step builder builds from it. Declared in workload_config.h.
#include <algorithm>

#include "base/config_error.h"
#include "models/bart.h"
#include "models/bert.h"
#include "models/bert_presets.h"
#include "models/encoders.h"
#include "models/gpt2.h"
#include "models/llama.h"
#include "models/model_presets.h"
#include "models/t5.h"
#include "models/vit.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

models::BertConfig resolve_model(const TrainingWorkload& t) {
  models::BertConfig c;
  const auto preset = t.model == "custom" ? std::nullopt : models::find_model_preset(t.model);
  if (t.model == "custom") {
    c.name = "custom";
  } else if (preset && models::is_encoder_family(preset->family)) {  // RoBERTa, DistilBERT, ALBERT: the shared fields
    c = {.name = preset->name, .layers = preset->layers, .hidden = preset->hidden, .heads = preset->heads,
         .intermediate = preset->intermediate, .vocab = preset->vocab, .max_position = preset->max_position,
         .type_vocab = preset->type_vocab};
  } else {
    c = models::find_preset(t.model);
  }
  const ModelConfig& m = t.model_config;
  if (m.layers) c.layers = m.layers;
  if (m.hidden) c.hidden = m.hidden;
  if (m.heads) c.heads = m.heads;
  if (m.intermediate) c.intermediate = m.intermediate;
  if (m.vocab) c.vocab = m.vocab;
  if (m.max_position) c.max_position = m.max_position;
  c.num_labels = t.num_labels;
  return c;
}

bool is_gpt2_model(const TrainingWorkload& t) {
  const auto p = models::find_model_preset(t.model);
  return p && p->family == models::ModelFamily::kGpt2;
}

bool is_seq2seq_model(const TrainingWorkload& t) {
  const auto p = models::find_model_preset(t.model);
  return p && (p->family == models::ModelFamily::kT5 || p->family == models::ModelFamily::kBart);
}

bool is_llama_model(const TrainingWorkload& t) {
  const auto p = models::find_model_preset(t.model);
  return p && p->family == models::ModelFamily::kLlama;
}

models::ModelPreset resolve_model_preset(const TrainingWorkload& t) {
  if (const auto v = models::find_model_preset(t.model); v && v->family == models::ModelFamily::kVit) return *v;
  if (!is_gpt2_model(t) && !is_llama_model(t) && !is_seq2seq_model(t)) {
    const models::BertConfig c = resolve_model(t);
    const auto preset = t.model == "custom" ? std::nullopt : models::find_model_preset(t.model);
    if (!preset || !models::is_encoder_family(preset->family)) return models::bert_model_preset(c);
    models::ModelPreset p = *preset;
    p.layers = c.layers, p.hidden = c.hidden, p.heads = c.heads, p.intermediate = c.intermediate, p.vocab = c.vocab;
    p.max_position = c.max_position, p.head_dim = c.heads ? c.hidden / c.heads : 0, p.kv_heads = c.heads;
    if (p.family != models::ModelFamily::kAlbert) p.embedding_size = c.hidden;
    return p;
  }
  models::ModelPreset p = *models::find_model_preset(t.model);
  const ModelConfig& m = t.model_config;
  if (m.layers && p.decoder_layers) p.decoder_layers = m.layers;  // T5Config: num_decoder_layers defaults to num_layers
  if (m.layers) p.layers = m.layers;
  if (m.hidden) p.hidden = m.hidden;
  // Grouped-query attention (Llama-3) keeps the preset's heads per key/value head.
  if (m.heads) p.kv_heads = std::max<int64_t>(1, m.heads / (p.heads / p.kv_heads)), p.heads = m.heads;
  if (m.intermediate) p.intermediate = m.intermediate;
  if (m.vocab) p.vocab = m.vocab;
  if (m.max_position) p.max_position = m.max_position;
  p.embedding_size = p.hidden;
  if (m.hidden || m.heads || p.family != models::ModelFamily::kT5) p.head_dim = p.heads ? p.hidden / p.heads : 0;  // T5 keeps d_kv
  return p;
}

std::unique_ptr<models::Model> make_model(const TrainingWorkload& t) {
  if (t.choices.task == Task::kImageClassification) {
    models::VitConfig v;
    v.arch = *models::find_model_preset(t.model);  // the schema checked it is a ViT preset
    v.num_labels = t.num_labels;
    return std::make_unique<models::VitModel>(v);
  }
  if (is_gpt2_model(t)) return std::make_unique<models::Gpt2Model>(resolve_model_preset(t));
  if (is_llama_model(t)) return std::make_unique<models::LlamaModel>(resolve_model_preset(t));
  if (is_seq2seq_model(t)) {
    const models::ModelPreset p = resolve_model_preset(t);
    if (p.family == models::ModelFamily::kBart) return std::make_unique<models::BartModel>(p);
    return std::make_unique<models::T5Model>(p);
  }
  const models::ModelPreset p = resolve_model_preset(t);
  if (models::is_encoder_family(p.family)) {
    return std::make_unique<models::EncoderModel>(p, int64_t(t.num_labels), t.choices.task == Task::kMaskedLm
                                                                                ? models::EncoderHead::kMaskedLm
                                                                                : models::EncoderHead::kSequenceClassification);
  }
  const models::BertHead head =
      t.choices.task == Task::kMaskedLm ? models::BertHead::kMaskedLm : models::BertHead::kSequenceClassification;
  return std::make_unique<models::BertModel>(resolve_model(t), head, int64_t(t.max_predictions_per_seq));
}

uint32_t image_tokens(const TrainingWorkload& t) {
  if (t.choices.task != Task::kImageClassification) return 0;
  return uint32_t(models::vit_seq(*models::find_model_preset(t.model)));
}

uint64_t base_model_parameters(const TrainingWorkload& t) { return models::model_parameters(resolve_model_preset(t)); }

}  // namespace tpusim
