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

#include "models/family.h"

namespace tpusim::models {

// The ViT family (models/family.h): google/vit-base-patch16-224 (layers, hidden, heads, intermediate,
// image, patch and channels); head image_classification (ViTForImageClassification, `num_labels`
// outputs). The graph's shape.seq must be vit_seq(arch) (the image size is the preset's: Hugging Face
// raises for another size unless interpolate_pos_encoding, which tpusim does not model). units:
// "vit.embeddings", each "vit.encoder.layer.L" (flagged `layer`), and "heads" (final LayerNorm,
// classifier, loss).
const Family& vit_family();

// Patches per image, (image_size / patch_size)^2, and the sequence length S = patches + 1.
int64_t vit_patches(const ModelArch& a);
int64_t vit_seq(const ModelArch& a);

// Closed-form trainable parameters of ViTForImageClassification: model_parameters(arch) counts
// ViTModel with its pooler; the classification model has no pooler and adds Linear(H, num_labels).
uint64_t vit_classification_parameters(const ModelArch& a, int64_t num_labels);

}  // namespace tpusim::models
