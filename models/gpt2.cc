#include "models/gpt2.h"

#include "models/layers.h"
#include "models/stack.h"

namespace tpusim::models {

namespace {

// GPT-2 config.json (all three presets): attn_pdrop, embd_pdrop, resid_pdrop 0.1; layer_norm_epsilon 1e-5.
constexpr double kDropout = 0.1;
constexpr double kLayerNormEps = 1e-5;

// Pre-LayerNorm decoder blocks (ln_1, attention, residual; ln_2, MLP c_fc -> gelu_new -> c_proj,
// residual) of Conv1D projections.
BlockSpec gpt2_block() {
  return {.pre_norm = true, .materialize = true, .norm_eps = kLayerNormEps, .projection = layers::Projection::kConv1D,
          .attention_dropout = kDropout,
          .self = {".ln_1", ".attn.resid_dropout", kDropout, ".attn_residual"},
          .mlp = {".ln_2", ".mlp.dropout", kDropout, ".mlp_residual"},
          .self_attn = {.scope = ".attn", .o = ".attn.c_proj", .dropout = ".attn_dropout"},
          .ffn = {.in = ".mlp.c_fc", .act = ".mlp.act", .out = ".mlp.c_proj"}};
}

class Gpt2Builder final : public StackBuilder {
 public:
  Gpt2Builder(const ModelArch& a, const StepShape& s) : StackBuilder(a, s) {
    stacks_ = {{.embed_unit = "transformer.embeddings", .layer_prefix = "transformer.h.", .layers = a.layers,
                .length = s.seq, .final_norm = "transformer.ln_f"}};
    blocks_ = {gpt2_block()};
  }

 private:
  // wte(input_ids) + wpe(position_ids) -> dropout -> [B*S, H]; the score biases every block adds
  // (finfo.min where masked, as GPT2Attention's torch.where with mask_value = finfo.min and the model's
  // extended attention mask): causal [S, S] where key j > query i, padding [B, S] where attention_mask is 0.
  int embed(size_t) override {
    const int64_t S = shape_.seq;
    const int ids = input("input_ids", {B_, S}, DType::kS32);
    const int mask = input("attention_mask", {B_, S}, DType::kS32);
    wte_ = stored_weight("transformer.wte.weight", {arch_.vocab, H_});
    int wpe = stored_weight("transformer.wpe.weight", {arch_.max_position, H_});
    int words = compute(g().gather(wte_, ids, "transformer.wte"));                          // [B, S, H]
    int pos = compute(g().gather(wpe, g().iota({S}, 0, DType::kS32), "transformer.wpe"));  // [S, H]
    int x = g().ew_bcast(EwOp::kAdd, words, pos, {1, 2}, "transformer.add_position");
    x = dropout(g().reshape(x, {B_ * S, H_}), kDropout, "transformer.drop");
    embed_unit_end_ = next();
    self_biases_[0] = {{layers::causal_bias(cx(), S, "transformer"), {2, 3}, "causal_mask"},
                       {layers::padding_bias(cx(), mask, "transformer"), {0, 3}, "padding_mask"}};
    return x;
  }

  // Rows [k*H, (k+1)*H) of c_attn's [H, 3H] weight (and its bias) as the query, key or value
  // projection: a weight-sized regroup and row pick; the three dots do the fused Conv1D's FLOPs.
  int qkv_part(int w3, int b3, int x, int k, const std::string& name) {
    int part = g().full(double(k), {1}, DType::kS32);
    int w = g().reshape(g().gather(w3, part, name + ".weight"), {H_, H_});
    int b = g().reshape(g().gather(b3, part, name + ".bias"), {H_});
    return g().reshape(layers::conv1d(cx(), x, w, b, name), {B_, shape_.seq, arch_.heads, head_dim_});
  }

  // GPT2Attention: the fused c_attn's weight [H, 3H] viewed as [H, 3, H] and regrouped to [3, H, H],
  // its bias [3H] as [3, H]; then the shared core and c_proj.
  int attention(size_t, int h, int, const std::string& p, bool) override {
    const std::string at = p + ".attn";
    int w3 = g().transpose(g().reshape(weight(at + ".c_attn.weight", {H_, 3 * H_}), {H_, 3, H_}), {1, 0, 2});
    int b3 = g().reshape(weight(at + ".c_attn.bias", {3 * H_}), {3, H_});
    int q = qkv_part(w3, b3, h, 0, at + ".c_attn.query");
    int k = qkv_part(w3, b3, h, 1, at + ".c_attn.key");
    int v = qkv_part(w3, b3, h, 2, at + ".c_attn.value");
    const int ctx = layers::attend(cx(), attention_spec(0, 0, blocks_[0].self_attn, p), q, k, v, self_biases_[0]);
    return dense(ctx, H_, H_, at + ".c_proj");
  }

  // lm_head (Linear(H, vocab, bias=False), its weight wte): logits [B*S, vocab] for every position;
  // CrossEntropyLoss(ignore_index=-100), the mean over the positions that have a label.
  void head(int x) override {
    out_.logits = g().dot(x, compute(wte_), {{}, {}, {1}, {1}}, shape_.precision, "lm_head");
    token_loss(shape_.seq, {"loss.ignored", "loss.neg_ignored", "loss.weights"});
  }

  int wte_ = -1;
};

ModelGraph build_gpt2(const ModelArch& a, const HeadOptions&, const StepShape& s) {
  check_batch(s);
  check_seq(s.seq, a.max_position, "n_positions of " + a.name);
  check_heads_divide_hidden(a);
  check_float(s);
  return Gpt2Builder(a, s).build();
}

// Hugging Face hub config.json of openai-community/gpt2, of openai-community/gpt2-medium and of
// openai-community/gpt2-large (n_layer, n_embd, n_head; n_inner null = 4 n_embd; n_positions 1024;
// activation_function gelu_new; LM head tied to wte).
ModelArch gpt2_preset(const std::string& name, int64_t layers, int64_t hidden, int64_t heads) {
  return {.name = name, .family = ModelFamily::kGpt2, .counted_class = "GPT2LMHeadModel", .layers = layers,
          .hidden = hidden, .heads = heads, .intermediate = 4 * hidden, .vocab = 50257, .max_position = 1024,
          .activation = Activation::kGeluNew};
}

}  // namespace

const Family& gpt2_family() {
  static const Family f{
      .id = ModelFamily::kGpt2,
      .name = "gpt2",
      .organisations = {"openai-community"},
      .presets = {gpt2_preset("gpt2", 12, 768, 12), gpt2_preset("gpt2-medium", 24, 1024, 16),
                  gpt2_preset("gpt2-large", 36, 1280, 20)},
      .heads = {Head::kCausalLm},
      .modules = {{{Head::kCausalLm, "GPT2LMHeadModel"}},
                  {{"transformer", "GPT2Model"},
                   {"transformer.h", "ModuleList"},
                   {"transformer.h.*", "GPT2Block"},
                   {"transformer.wte", "Embedding"},
                   {"transformer.wpe", "Embedding"},
                   {"**.ln_*", "LayerNorm"},
                   {"**.attn", "GPT2Attention"},
                   {"**.mlp", "GPT2MLP"},
                   {"lm_head", "Linear"}},
                  "Conv1D"},  // c_attn, c_proj, c_fc
      .parameters = decoder_only_parameters,
      .build = build_gpt2,
  };
  return f;
}

}  // namespace tpusim::models
