#include "models/vit.h"

#include "models/stack.h"

namespace tpusim::models {

namespace {

// google/vit-base-patch16-224 config.json: hidden_dropout_prob and attention_probs_dropout_prob 0.0,
// layer_norm_eps 1e-12, hidden_act "gelu" (the exact erf form), qkv_bias true.
constexpr double kDropout = 0.0;
constexpr double kLayerNormEps = 1e-12;

// ViTLayer (pre-norm): x + attention(layernorm_before(x)), then + MLP(layernorm_after(.)).
BlockSpec vit_block() {
  const std::string sa = ".attention.attention";
  return {.pre_norm = true, .norm_eps = kLayerNormEps, .attention_dropout = kDropout,
          .self = {".layernorm_before", ".attention.output.dropout", kDropout, ".attention_residual"},
          .mlp = {".layernorm_after", ".output.dropout", kDropout, ".output.residual"},
          .self_attn = {sa, sa + ".query", sa + ".key", sa + ".value", ".attention.output.dense"},
          .ffn = {.in = ".intermediate.dense", .act = ".intermediate.gelu", .out = ".output.dense"}};
}

class VitBuilder final : public StackBuilder {
 public:
  VitBuilder(const ModelArch& a, const HeadOptions& h, const StepShape& s)
      : StackBuilder(a, s), num_labels_(h.num_labels), S_(vit_seq(a)), N_(vit_patches(a)),
        K_(a.channels * a.patch_size * a.patch_size) {
    stacks_ = {{.embed_unit = "vit.embeddings", .layer_prefix = "vit.encoder.layer.", .layers = a.layers, .length = S_,
                .final_norm = "vit.layernorm"}};
    blocks_ = {vit_block()};
  }

 private:
  // s32 row ids: b * S + offset + j for b < B, j < n (rows of the [B*S, H] hidden states).
  int rows(int64_t n, int64_t offset, const std::string& name) {
    int b = g().ew(EwOp::kMul, g().iota({B_, n}, 0, DType::kS32), g().constant(double(S_), DType::kS32), name + ".batch");
    int j = g().ew(EwOp::kAdd, g().iota({B_, n}, 1, DType::kS32), g().constant(double(offset), DType::kS32), name + ".slot");
    return g().reshape(g().ew(EwOp::kAdd, b, j, name), {B_ * n});
  }

  // ViTEmbeddings: patch projection, [CLS] prepended, position embeddings, dropout -> [B*S, H].
  int embed(size_t) override {
    const std::string p = "vit.embeddings";
    int pixels = input("pixel_values", {B_, N_, K_}, t_);
    const std::string proj = p + ".patch_embeddings.projection";
    const int64_t ch = arch_.channels, ps = arch_.patch_size;
    int w = g().reshape(weight(proj + ".weight", {H_, ch, ps, ps}), {H_, K_});  // Conv2d weight as [H, C*p*p]
    int patches = layers::linear_w(cx(), g().reshape(pixels, {B_ * N_, K_}), w, H_, proj);  // [B*N, H]
    int cls = weight(p + ".cls_token", {1, 1, H_});
    int pos = weight(p + ".position_embeddings", {1, S_, H_});
    // torch.cat((cls_tokens, embeddings), dim=1): each operand copied into its rows of [B*S, H].
    int cls_rows = g().broadcast(g().reshape(cls, {H_}), {B_, H_}, {1});
    int x = g().ew(EwOp::kAdd, g().scatter_add(patches, rows(N_, 1, p + ".patch_rows"), B_ * S_, p + ".cat_patches"),
                   g().scatter_add(cls_rows, rows(1, 0, p + ".cls_rows"), B_ * S_, p + ".cat_cls"), p + ".cat");
    x = g().ew_bcast(EwOp::kAdd, g().reshape(x, {B_, S_, H_}), g().reshape(pos, {S_, H_}), {1, 2}, p + ".add_position");
    return dropout(g().reshape(x, {B_ * S_, H_}), kDropout, p + ".dropout");
  }

  // classifier(sequence_output[:, 0, :]) and the loss (Hugging Face: MSE for one label, else cross-entropy).
  void head(int seq_out) override {
    int cls = g().gather(seq_out, rows(1, 0, "vit.cls_token_rows"), "vit.cls_token");
    out_.logits = dense(cls, H_, num_labels_, "classifier");
    classification_loss(num_labels_);
  }

  const int64_t num_labels_, S_, N_, K_;
};

ModelGraph build_vit(const ModelArch& a, const HeadOptions& h, const StepShape& s) {
  check_batch(s);
  require(a.patch_size >= 1 && a.image_size % a.patch_size == 0, "image_size", a.image_size,
          "must be a multiple of patch_size (" + std::to_string(a.patch_size) + ")");
  require(s.seq == vit_seq(a), "seq", s.seq,
          "must be (image_size / patch_size)^2 + 1 = " + std::to_string(vit_seq(a)) + " for " + a.name);
  check_heads_divide_hidden(a);
  require(h.num_labels >= 1, "num_labels", h.num_labels, "must be at least 1");
  check_float(s);
  return VitBuilder(a, h, s).build();
}

}  // namespace

int64_t vit_patches(const ModelArch& a) {
  const int64_t side = a.patch_size > 0 ? a.image_size / a.patch_size : 0;
  return side * side;
}
int64_t vit_seq(const ModelArch& a) { return vit_patches(a) + 1; }

uint64_t vit_classification_parameters(const ModelArch& a, int64_t num_labels) {
  const uint64_t H = uint64_t(a.hidden), L = uint64_t(num_labels);
  const uint64_t pooler = a.pooler ? H * H + H : 0;
  return vision_encoder_parameters(a) - pooler + H * L + L;
}

const Family& vit_family() {
  static const Family f{
      .id = ModelFamily::kVit,
      .name = "vit",
      // Hugging Face hub config.json of google/vit-base-patch16-224 (image_size 224, patch_size 16,
      // num_channels 3, qkv_bias true). The hub checkpoint is ViTForImageClassification (1000 ImageNet
      // classes, no pooler: 86,567,656); counted here as ViTModel with its pooler, like the text encoders.
      .presets = {{.name = "google/vit-base-patch16-224", .family = ModelFamily::kVit, .counted_class = "ViTModel",
                   .layers = 12, .hidden = 768, .heads = 12, .intermediate = 3072, .image_size = 224, .patch_size = 16,
                   .channels = 3, .pooler = true}},
      .heads = {Head::kImageClassification},
      .modules = {{{Head::kImageClassification, "ViTForImageClassification"}},
                  {{"vit", "ViTModel"},
                   {"vit.embeddings", "ViTEmbeddings"},
                   {"vit.embeddings.patch_embeddings", "ViTPatchEmbeddings"},
                   {"vit.embeddings.patch_embeddings.projection", "Conv2d"},
                   {"vit.encoder", "ViTEncoder"},
                   {"vit.encoder.layer", "ModuleList"},
                   {"vit.encoder.layer.*", "ViTLayer"},
                   {"**.layernorm", "LayerNorm"},
                   {"**.layernorm_before", "LayerNorm"},
                   {"**.layernorm_after", "LayerNorm"},
                   {"**.attention.attention", "ViTSelfAttention"},
                   {"**.attention", "ViTAttention"},
                   {"**.attention.output", "ViTSelfOutput"},
                   {"**.output", "ViTOutput"},
                   {"**.intermediate", "ViTIntermediate"}},
                  "Linear"},  // query, key, value, dense, classifier
      .parameters = vision_encoder_parameters,
      .build = build_vit,
  };
  return f;
}

}  // namespace tpusim::models
