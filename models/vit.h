// ViT graphs as Hugging Face's ViTForImageClassification computes them (google/vit-base-patch16-224),
// for one batch B; the sequence length is fixed by the image: S = (image_size / patch_size)^2 + 1.
//
// The patch embedding is a Conv2d with kernel = stride = patch, i.e. one linear map of each
// channels x patch x patch block: it is built as a matmul [B*N, C*p*p] x [C*p*p, H] + bias (N patches),
// the Conv2d weight [H, C, p, p] viewed as [H, C*p*p]. The [CLS] token (a parameter) is prepended and
// the learned position embeddings (S rows) added; the concatenation is two scatter-adds of rows into
// the [B*S, H] hidden states (XLA's concatenate: a copy of each operand into its slot). Then pre-norm
// encoder layers (layernorm_before, attention, residual, layernorm_after, MLP with exact GELU,
// residual), the final LayerNorm, and the classifier on the [CLS] row (no pooler:
// ViTForImageClassification builds ViTModel with add_pooling_layer=False).
//
// Per-step inputs (role kInput): pixel_values [B, N, C*p*p] (float, the compute dtype: torch_xla
// moves the normalized float tensor; the patch layout is the one XLA's convolution reads, the same
// bytes as [B, C, image, image]); labels [B] (s32; float with num_labels == 1: regression, MSE).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/model.h"
#include "models/model_presets.h"

namespace tpusim::models {

struct VitConfig {
  ModelPreset arch;             // a ViT preset (family kVit): layers, hidden, heads, intermediate, image/patch/channels
  int64_t num_labels = 1000;    // classifier outputs (1000: the ImageNet head of the hub checkpoint)
  double layer_norm_eps = 1e-12;
  double hidden_dropout = 0.0;     // hidden_dropout_prob of google/vit-base-patch16-224
  double attention_dropout = 0.0;  // attention_probs_dropout_prob
};

// Patches per image, (image_size / patch_size)^2, and the sequence length S = patches + 1.
int64_t vit_patches(const ModelPreset& p);
int64_t vit_seq(const ModelPreset& p);

const std::vector<std::string>& vit_module_classes();

// ViTForImageClassification behind the model interface. build_forward throws ConfigError unless
// shape.seq == vit_seq(arch) (the image size is the preset's: Hugging Face raises for another size
// unless interpolate_pos_encoding, which tpusim does not model).
// units: "vit.embeddings", each "vit.encoder.layer.L" (flagged `layer`), and "heads" (final
// LayerNorm, classifier, loss).
class VitModel : public Model {
 public:
  explicit VitModel(VitConfig cfg);
  std::string name() const override { return cfg_.arch.name; }
  const std::vector<std::string>& module_classes() const override { return vit_module_classes(); }
  std::string module_class(const std::string& path) const override;
  ModelGraph build_forward(const StepShape& shape) const override;
  const VitConfig& config() const { return cfg_; }

 private:
  VitConfig cfg_;
};

// Closed-form trainable parameters of ViTForImageClassification: model_parameters(arch) counts
// ViTModel with its pooler; the classification model has no pooler and adds Linear(H, num_labels).
uint64_t vit_classification_parameters(const VitConfig& cfg);

}  // namespace tpusim::models
