#include "models/bart.h"

#include "models/stack.h"

namespace tpusim::models {

namespace {

// facebook/bart-large config.json: dropout 0.1, attention_dropout 0.0, activation_dropout 0.0,
// activation_function gelu; nn.LayerNorm's default eps 1e-5.
constexpr double kDropout = 0.1;
constexpr double kAttentionDropout = 0.0;
constexpr double kNormEps = 1e-5;

// Post-LN layers: x = LN(x + dropout(self_attn(x))), in the decoder then LN(x + dropout(encoder_attn(x,
// memory))), and LN(x + dropout(fc2(gelu(fc1(x))))); projections with biases, queries scaled by head_dim^-0.5.
BlockSpec bart_block() {
  auto attention = [](const std::string& scope) {
    return layers::AttentionNames{scope, scope + ".q_proj", scope + ".k_proj", scope + ".v_proj", scope + ".out_proj",
                                  ".attn_dropout"};
  };
  return {.residual_first = true, .norm_eps = kNormEps, .attention_dropout = kAttentionDropout,
          .self = {".self_attn_layer_norm", ".self_attn.dropout", kDropout, ".self_attn.residual"},
          .cross = {".encoder_attn_layer_norm", ".encoder_attn.dropout", kDropout, ".encoder_attn.residual"},
          .mlp = {".final_layer_norm", ".ffn_dropout", kDropout, ".ffn_residual"},
          .self_attn = attention(".self_attn"), .cross_attn = attention(".encoder_attn"),
          .ffn = {.in = ".fc1", .act = ".activation_fn", .out = ".fc2"}};
}

class BartBuilder final : public StackBuilder {
 public:
  BartBuilder(const ModelArch& a, const StepShape& s) : StackBuilder(a, s) {
    head_dim_ = a.head_dim;
    stacks_ = {{.embed_unit = "model.encoder.embed", .layer_prefix = "model.encoder.layers.", .layers = a.layers,
                .length = s.seq},
               {.embed_unit = "model.decoder.embed", .layer_prefix = "model.decoder.layers.", .layers = a.decoder_layers,
                .length = s.target}};
    blocks_ = {bart_block(), bart_block()};
  }

 private:
  // shared(ids) + embed_positions(arange(L) + 2) -> layernorm_embedding -> dropout: [B*L, H]; the
  // encoder's padding bias (its self-attention and the decoder's cross-attention), the decoder's causal one.
  int embed(size_t stack) override {
    const bool encoder = stack == 0;
    const std::string name = encoder ? "model.encoder" : "model.decoder";
    const int64_t L = stacks_[stack].length;
    const int ids = input(encoder ? "input_ids" : "decoder_input_ids", {B_, L}, DType::kS32);
    if (shared_ < 0) shared_ = stored_weight("model.shared.weight", {arch_.vocab, H_});
    int words = compute(g().gather(shared_, ids, name + ".embed_tokens"));  // [B, L, H]
    const int table = weight(name + ".embed_positions.weight", {arch_.max_position + arch_.position_offset, H_});
    int rows = g().ew(EwOp::kAdd, g().iota({L}, 0, DType::kS32), g().constant(double(arch_.position_offset), DType::kS32),
                      name + ".position_ids");
    int pos = g().gather(table, rows, name + ".embed_positions");  // [L, H]
    int x = g().ew_bcast(EwOp::kAdd, words, pos, {1, 2}, name + ".add_positions");
    x = dropout(norm(g().reshape(x, {B_ * L, H_}), name + ".layernorm_embedding"), kDropout, name + ".dropout");
    if (encoder) {
      const int padding = layers::padding_bias(cx(), input("attention_mask", {B_, L}, DType::kS32), name);
      self_biases_[0] = cross_biases_ = {{padding, {0, 3}, "padding_mask"}};
    } else {
      self_biases_[1] = {{layers::causal_bias(cx(), L, name), {2, 3}, "causal_mask"}};
    }
    return x;
  }

  // lm_head (tied to model.shared) + final_logits_bias (a zero buffer, see models/bart.h);
  // CrossEntropyLoss(ignore_index=-100) over the labelled target positions.
  void head(int y) override {
    int logits = g().dot(y, compute(shared_), {{}, {}, {1}, {1}}, shape_.precision, "lm_head");
    out_.logits = g().ew_bcast(EwOp::kAdd, logits, g().full(0.0, {arch_.vocab}, t_), {1}, "final_logits_bias");
    token_loss(shape_.target, {"loss.ignored", "loss.neg_ignored", "loss.weights"});
  }

  int shared_ = -1;
};

ModelGraph build_bart(const ModelArch& a, const HeadOptions&, const StepShape& s) {
  check_batch(s);
  check_seq(s.seq, a.max_position, "max_position_embeddings of " + a.name);
  check_seq(s.target, a.max_position, "max_position_embeddings of " + a.name, "max_target_length");
  check_heads_divide_hidden(a);
  check_float(s);
  return BartBuilder(a, s).build();
}

}  // namespace

const Family& bart_family() {
  static const Family f{
      .id = ModelFamily::kBart,
      .name = "bart",
      // Hugging Face hub config.json of facebook/bart-large (encoder_layers, decoder_layers, d_model,
      // encoder_ffn_dim; BartLearnedPositionalEmbedding has max_position_embeddings + 2 rows, the offset
      // fairseq kept; layernorm_embedding per stack; no final stack LayerNorm; LM head tied to `shared`;
      // final_logits_bias is a buffer). BartForConditionalGeneration holds the same parameters.
      .presets = {{.name = "facebook/bart-large", .family = ModelFamily::kBart, .counted_class = "BartModel",
                   .layers = 12, .decoder_layers = 12, .hidden = 1024, .heads = 16, .intermediate = 4096,
                   .vocab = 50265, .max_position = 1024, .position_offset = 2}},
      .heads = {Head::kSeq2Seq},
      .modules = {{{Head::kSeq2Seq, "BartForConditionalGeneration"}},
                  {{"model", "BartModel"},
                   {"model.encoder", "BartEncoder"},
                   {"model.decoder", "BartDecoder"},
                   {"**.layers", "ModuleList"},
                   {"model.encoder.layers.*", "BartEncoderLayer"},
                   {"model.decoder.layers.*", "BartDecoderLayer"},
                   {"**.self_attn", "BartAttention"},
                   {"**.encoder_attn", "BartAttention"},
                   {"**.embed_positions", "BartLearnedPositionalEmbedding"},
                   {"**.shared", "Embedding"},
                   {"**.embed_tokens", "Embedding"},
                   {"**.*_layer_norm", "LayerNorm"},
                   {"**.layernorm_embedding", "LayerNorm"}},
                  "Linear"},  // q_proj, k_proj, v_proj, out_proj, fc1, fc2, lm_head
      .parameters = encoder_decoder_parameters,
      .build = build_bart,
  };
  return f;
}

}  // namespace tpusim::models
