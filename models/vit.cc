#include "models/vit.h"

#include <cmath>
#include <memory>

#include "base/config_error.h"
#include "models/layers.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

void check(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Builds one ViT graph. The Linear, LayerNorm and GELU forms are those of models/bert.cc (the same
// PyTorch modules; ViT's GELU is hidden_act "gelu", the exact erf form).
class VitBuilder {
 public:
  VitBuilder(const VitConfig& cfg, const StepShape& s)
      : cfg_(cfg), s_(s), t_(s.dtype), B_(s.batch), S_(vit_seq(cfg.arch)), N_(vit_patches(cfg.arch)),
        K_(cfg.arch.channels * cfg.arch.patch_size * cfg.arch.patch_size), H_(cfg.arch.hidden),
        nh_(cfg.arch.heads), hd_(cfg.arch.hidden / cfg.arch.heads) {}

  ModelGraph build() {
    int x = embeddings();
    add_unit(out_, "vit.embeddings", 0);
    for (int64_t l = 0; l < cfg_.arch.layers; ++l) {
      const std::string name = "vit.encoder.layer." + std::to_string(l);
      const int first = int(g().nodes().size());
      x = layer(x, name);
      add_unit(out_, name, first, /*layer=*/true);
    }
    const int heads_first = int(g().nodes().size());
    head(layer_norm(x, "vit.layernorm"));
    add_unit(out_, "heads", heads_first);
    out_.modules = std::make_shared<VitModel>(cfg_);
    mark_outputs(out_, s_.training);
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }
  // The shared layer pieces (models/layers.h) over this graph.
  layers::LayerContext cx() { return {g(), out_.params, out_.inputs, t_, s_.param_dtype, s_.precision, s_.training}; }
  int stored_weight(const std::string& name, Dims shape) { return layers::stored_weight(cx(), name, std::move(shape)); }
  int compute(int x) { return layers::compute(cx(), x); }
  int weight(const std::string& name, Dims shape) { return layers::weight(cx(), name, std::move(shape)); }
  int input(const std::string& name, Dims shape, DType t) { return layers::input(cx(), name, std::move(shape), t); }
  int c(double v) { return layers::constant(cx(), v); }
  int linear_w(int x, int w, int64_t out, const std::string& name) { return layers::linear_w(cx(), x, w, out, name); }
  int linear(int x, int64_t in, int64_t out, const std::string& name) { return layers::linear(cx(), x, in, out, name); }
  int layer_norm(int x, const std::string& name) { return layers::layer_norm(cx(), x, cfg_.layer_norm_eps, name); }
  int dropout(int x, double rate, const std::string& name) { return layers::dropout(cx(), x, rate, name); }
  int gelu(int x, const std::string& name) { return layers::gelu(cx(), x, name); }

  // s32 row ids: b * S + offset + j for b < B, j < n (rows of the [B*S, H] hidden states).
  int rows(int64_t n, int64_t offset, const std::string& name) {
    int b = g().ew(EwOp::kMul, g().iota({B_, n}, 0, DType::kS32), g().constant(double(S_), DType::kS32), name + ".batch");
    int j = g().ew(EwOp::kAdd, g().iota({B_, n}, 1, DType::kS32), g().constant(double(offset), DType::kS32), name + ".slot");
    return g().reshape(g().ew(EwOp::kAdd, b, j, name), {B_ * n});
  }

  // ViTEmbeddings: patch projection, [CLS] prepended, position embeddings, dropout -> [B*S, H].
  int embeddings() {
    const std::string p = "vit.embeddings";
    int pixels = input("pixel_values", {B_, N_, K_}, t_);
    const std::string proj = p + ".patch_embeddings.projection";
    const int64_t ch = cfg_.arch.channels, ps = cfg_.arch.patch_size;
    int w = g().reshape(weight(proj + ".weight", {H_, ch, ps, ps}), {H_, K_});  // Conv2d weight as [H, C*p*p]
    int patches = linear_w(g().reshape(pixels, {B_ * N_, K_}), w, H_, proj);     // [B*N, H]
    int cls = weight(p + ".cls_token", {1, 1, H_});
    int pos = weight(p + ".position_embeddings", {1, S_, H_});
    // torch.cat((cls_tokens, embeddings), dim=1): each operand copied into its rows of [B*S, H].
    int cls_rows = g().broadcast(g().reshape(cls, {H_}), {B_, H_}, {1});
    int x = g().ew(EwOp::kAdd, g().scatter_add(patches, rows(N_, 1, p + ".patch_rows"), B_ * S_, p + ".cat_patches"),
                   g().scatter_add(cls_rows, rows(1, 0, p + ".cls_rows"), B_ * S_, p + ".cat_cls"), p + ".cat");
    x = g().ew_bcast(EwOp::kAdd, g().reshape(x, {B_, S_, H_}), g().reshape(pos, {S_, H_}), {1, 2}, p + ".add_position");
    return dropout(g().reshape(x, {B_ * S_, H_}), cfg_.hidden_dropout, p + ".dropout");
  }

  // ViTLayer (pre-norm): x + attention(layernorm_before(x)), then + MLP(layernorm_after(.)).
  int layer(int x, const std::string& p) {
    const std::string sa = p + ".attention.attention";
    auto heads = [&](int y) { return g().reshape(y, {B_, S_, nh_, hd_}); };
    int h = layer_norm(x, p + ".layernorm_before");
    int q = heads(linear(h, H_, H_, sa + ".query"));
    int k = heads(linear(h, H_, H_, sa + ".key"));
    int v = heads(linear(h, H_, H_, sa + ".value"));
    int s = g().dot(q, k, {{0, 2}, {0, 2}, {3}, {3}}, s_.precision, sa + ".scores");  // [B, heads, S, S]
    s = g().ew(EwOp::kMul, s, c(1.0 / std::sqrt(double(hd_))), sa + ".scale");
    int probs = dropout(stable_softmax(g(), s, 3, sa + ".softmax"), cfg_.attention_dropout, sa + ".dropout");
    int ctx = g().dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, s_.precision, sa + ".context");
    ctx = g().reshape(g().transpose(ctx, {0, 2, 1, 3}), {B_ * S_, H_});
    const std::string ao = p + ".attention.output";
    int a = dropout(linear(ctx, H_, H_, ao + ".dense"), cfg_.hidden_dropout, ao + ".dropout");
    x = g().ew(EwOp::kAdd, a, x, p + ".attention_residual");
    int f = gelu(linear(layer_norm(x, p + ".layernorm_after"), H_, cfg_.arch.intermediate, p + ".intermediate.dense"),
                 p + ".intermediate.gelu");
    int o = dropout(linear(f, cfg_.arch.intermediate, H_, p + ".output.dense"), cfg_.hidden_dropout, p + ".output.dropout");
    return g().ew(EwOp::kAdd, o, x, p + ".output.residual");
  }

  // classifier(sequence_output[:, 0, :]) and the loss (Hugging Face: MSE for one label, else cross-entropy).
  void head(int seq_out) {
    int cls = g().gather(seq_out, rows(1, 0, "vit.cls_token_rows"), "vit.cls_token");
    out_.logits = linear(cls, H_, cfg_.num_labels, "classifier");
    if (cfg_.num_labels == 1) {
      int labels = input("labels", {B_}, t_);
      out_.loss = mse_loss(g(), g().reshape(out_.logits, {B_}), labels, "loss");
    } else {
      int labels = input("labels", {B_}, DType::kS32);
      out_.loss = cross_entropy(g(), out_.logits, labels, -1, "loss");
    }
  }

  const VitConfig& cfg_;
  const StepShape& s_;
  const DType t_;
  const int64_t B_, S_, N_, K_, H_, nh_, hd_;
  ModelGraph out_;
};

}  // namespace

int64_t vit_patches(const ModelPreset& p) {
  const int64_t side = p.patch_size > 0 ? p.image_size / p.patch_size : 0;
  return side * side;
}
int64_t vit_seq(const ModelPreset& p) { return vit_patches(p) + 1; }

const std::vector<std::string>& vit_module_classes() {
  static const std::vector<std::string> c = {
      "ViTForImageClassification", "ViTModel", "ViTEmbeddings", "ViTPatchEmbeddings", "ViTEncoder", "ViTLayer",
      "ViTAttention", "ViTSelfAttention", "ViTSelfOutput", "ViTIntermediate", "ViTOutput",
      "Linear", "Conv2d", "LayerNorm"};
  return c;
}

VitModel::VitModel(VitConfig cfg) : cfg_(std::move(cfg)) {}

std::string VitModel::module_class(const std::string& path) const {
  if (path.empty()) return "ViTForImageClassification";
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  if (path == "vit") return "ViTModel";
  if (path == "vit.embeddings") return "ViTEmbeddings";
  if (path == "vit.embeddings.patch_embeddings") return "ViTPatchEmbeddings";
  if (path == "vit.embeddings.patch_embeddings.projection") return "Conv2d";
  if (path == "vit.encoder") return "ViTEncoder";
  if (path == "vit.encoder.layer") return "ModuleList";
  if (parent == "vit.encoder.layer") return "ViTLayer";
  if (last == "layernorm" || last == "layernorm_before" || last == "layernorm_after") return "LayerNorm";
  if (last == "attention") return ends_with(parent, ".attention") ? "ViTSelfAttention" : "ViTAttention";
  if (last == "output") return ends_with(parent, ".attention") ? "ViTSelfOutput" : "ViTOutput";
  if (last == "intermediate") return "ViTIntermediate";
  return "Linear";  // query, key, value, dense, classifier
}

ModelGraph VitModel::build_forward(const StepShape& s) const {
  const ModelPreset& a = cfg_.arch;
  check(s.batch >= 1, "batch", s.batch, "must be at least 1");
  check(a.patch_size >= 1 && a.image_size % a.patch_size == 0, "image_size", a.image_size,
        "must be a multiple of patch_size (" + std::to_string(a.patch_size) + ")");
  check(s.seq == vit_seq(a), "seq", s.seq,
        "must be (image_size / patch_size)^2 + 1 = " + std::to_string(vit_seq(a)) + " for " + a.name);
  check(a.heads >= 1 && a.hidden % a.heads == 0, "heads", a.heads, "must divide hidden (" + std::to_string(a.hidden) + ")");
  check(cfg_.num_labels >= 1, "num_labels", cfg_.num_labels, "must be at least 1");
  if (!is_float(s.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(s.dtype), "must be f32 or bf16", ""});
  return VitBuilder(cfg_, s).build();
}

uint64_t vit_classification_parameters(const VitConfig& cfg) {
  const uint64_t H = uint64_t(cfg.arch.hidden), L = uint64_t(cfg.num_labels);
  const uint64_t pooler = cfg.arch.pooler ? H * H + H : 0;
  return model_parameters(cfg.arch) - pooler + H * L + L;
}

}  // namespace tpusim::models
