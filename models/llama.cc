#include "models/llama.h"

#include <cmath>
#include <string_view>
#include <utility>

#include "base/config_error.h"
#include "models/losses.h"
#include "models/sharding.h"
#include "models/stack.h"

namespace tpusim::models {

namespace {

// Llama-2 and Llama-3 config.json: rms_norm_eps 1e-5, attention_dropout 0.0 (no dropout anywhere).
constexpr double kRmsNormEps = 1e-5;

// LlamaDecoderLayer: x + self_attn(input_layernorm(x)), then + mlp(post_attention_layernorm(.)), the
// MLP down_proj(silu(gate_proj(x)) * up_proj(x)), projections without biases.
BlockSpec llama_block() {
  return {.pre_norm = true, .materialize = true, .norm_eps = kRmsNormEps,
          .projection = layers::Projection::kLinearNoBias,
          .self = {.norm = ".input_layernorm", .add = ".attn_residual"},
          .mlp = {.norm = ".post_attention_layernorm", .add = ".mlp_residual"},
          .ffn = {.in = ".mlp.gate_proj", .act = ".mlp.act_fn", .out = ".mlp.down_proj", .up = ".mlp.up_proj",
                  .gate = ".mlp.gate_up"}};
}

class LlamaBuilder final : public StackBuilder {
 public:
  // Under sequence parallelism (s.mesh[kSequence] = n > 1) the graph is one replica's block of S / n
  // tokens (build_llama checks that n divides S).
  LlamaBuilder(const ModelArch& a, const StepShape& s)
      : StackBuilder(a, s), S_(s.seq / s.mesh[MeshAxis::kSequence]), nh_(a.heads), kvh_(a.kv_heads) {
    if (a.head_dim) head_dim_ = a.head_dim;  // config.json head_dim (hidden / heads unless given)
    stacks_ = {{.embed_unit = "model.embed_tokens", .layer_prefix = "model.layers.", .layers = a.layers, .length = S_,
                .final_norm = "model.norm"}};
    blocks_ = {llama_block()};
    if (a.biases) blocks_[0].projection = layers::Projection::kLinear;  // GPT-3: every projection has a bias
  }

 private:
  // embed_tokens(input_ids) -> [B*S, H]; the score biases (finfo.min where key j > query i, and where
  // attention_mask is 0: transformers' causal mask for eager attention) and LlamaRotaryEmbedding's cos
  // and sin [S, hd] (see models/llama.h for why they are inputs).
  // Under tensor parallelism the table is this replica's rows of the vocabulary (MaxText: `vocab` on
  // the tensor axis): the lookup a partial sum over the axis, all-reduced (compiler/step/sharding_rules.h).
  // Learned positions (GPT-3: MaxText's trainable_position_size) are added to the rows; rotary ones
  // are applied in attention.
  int embed(size_t) override {
    const int ids = input("input_ids", {B_, S_}, DType::kS32);
    const int mask = input("attention_mask", {B_, S_}, DType::kS32);
    wte_ = weight("model.embed_tokens.weight", {arch_.vocab / shape_.tensor, H_});
    int x = g().reshape(g().gather(wte_, ids, "model.embed_tokens"), {B_ * S_, H_});
    // A split stream: the lookup's partial sums reduce-scattered to the replica's columns, which
    // the learned positions' table then holds too (its columns split over the axis).
    if (sharded_stream()) x = scatter_columns(x, "model.embed_tokens.reduce_scatter");
    const int64_t W = stream_width();
    if (arch_.positions == PositionKind::kLearned) {
      const int wpe = weight("model.embed_positions.weight", {arch_.max_position, W});
      const int pos = g().gather(wpe, g().iota({S_}, 0, DType::kS32), "model.embed_positions");  // [S, W]
      x = g().reshape(g().ew_bcast(EwOp::kAdd, g().reshape(x, {B_, S_, W}), pos, {1, 2}, "model.add_positions"),
                      {B_ * S_, W});
    }
    // Gemma: hidden_states * normalizer, normalizer = sqrt(hidden_size) in the activations' dtype.
    if (arch_.scaled_embeddings) x = g().ew(EwOp::kMul, x, c(std::sqrt(double(H_))), "model.embed_scale");
    if (!shape_.flash_attention) {  // flash attention masks inside its kernel
      causal_ = layers::causal_bias(cx(), S_, "model", window());
      padding_ = layers::padding_bias(cx(), mask, "model");
    }
    if (rotary_positions()) {
      cos_ = input("rope.cos", {S_, head_dim_}, t_);
      sin_ = input("rope.sin", {S_, head_dim_}, t_);
    }
    return x;
  }

  // apply_rotary_pos_emb on x [B, S, n, hd]: x cos + rotate_half(x) sin, the tables broadcast over
  // batch and heads. rotate_half = concat(-x2, x1) of the halves x1 = x[..., :hd/2], x2 = x[..., hd/2:].
  int rotary(int x, const std::string& name) {
    const int64_t half = head_dim_ / 2;
    int x1 = g().slice(x, 3, 0, half, name + ".x1");
    int x2 = g().slice(x, 3, half, head_dim_, name + ".x2");
    int rot = g().concatenate({g().ew(EwOp::kNeg, x2, -1, name + ".neg_x2"), x1}, 3, name + ".rotate_half");
    int a = g().ew_bcast(EwOp::kMul, x, cos_, {1, 3}, name + ".cos");
    int b = g().ew_bcast(EwOp::kMul, rot, sin_, {1, 3}, name + ".sin");
    return g().ew(EwOp::kAdd, a, b, name);
  }

  // LlamaAttention (eager) on h [B*S, H]. Groups G = heads / kv_heads.
  int attention(size_t, int h, int, const std::string& p, bool) override {
    const std::string at = p + ".self_attn";
    const int64_t G = nh_ / kvh_, hd = head_dim_;
    int q = g().reshape(dense(h, H_, nh_ * hd, at + ".q_proj"), {B_, S_, nh_, hd});
    int k = g().reshape(dense(h, H_, kvh_ * hd, at + ".k_proj"), {B_, S_, kvh_, hd});
    int v = g().reshape(dense(h, H_, kvh_ * hd, at + ".v_proj"), {B_, S_, kvh_, hd});
    if (rotary_positions()) {
      q = rotary(q, at + ".rotary_q");
      k = rotary(k, at + ".rotary_k");
    }
    // Query head h = kv * G + g: [B, S, kvh, G, hd] -> [B, kvh, G*S, hd], the G query heads of a key/value
    // head one after another as rows of its dots (the lane dim stays minor; the statistics of the
    // softmax are [B, kvh, G*S], not padded along a G of 1 to the sublanes).
    if (shape_.flash_attention) return flash_attention(q, k, v, at);
    int qg = g().reshape(g().transpose(g().reshape(q, {B_, S_, kvh_, G, hd}), {0, 2, 3, 1, 4}), {B_, kvh_, G * S_, hd});
    // scores[b, kv, (g, i), j] = q·k / sqrt(hd) + causal[i, j] + padding[b, j]
    int s = g().dot(qg, k, {{0, 1}, {0, 2}, {3}, {3}}, shape_.precision, at + ".scores");
    s = g().reshape(g().ew(EwOp::kMul, s, c(1.0 / std::sqrt(double(hd))), at + ".scale"), {B_, kvh_, G, S_, S_});
    s = g().ew_bcast(EwOp::kAdd, s, causal_, {3, 4}, at + ".causal_mask");
    s = g().ew_bcast(EwOp::kAdd, s, padding_, {0, 4}, at + ".padding_mask");
    int probs = stable_softmax(g(), g().reshape(s, {B_, kvh_, G * S_, S_}), 3, at + ".softmax");
    int ctx = g().dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, shape_.precision, at + ".context");  // [B, kvh, G*S, hd]
    ctx = g().reshape(g().transpose(g().reshape(ctx, {B_, kvh_, G, S_, hd}), {0, 3, 1, 2, 4}), {B_ * S_, nh_ * hd});
    return row_parallel(ctx, nh_ * hd, H_, at + ".o_proj");
  }

  // Flash attention (MaxText's splash attention, PyTorch/XLA's Pallas flash_attention) on q [B, S, nh,
  // hd], k and v [B, S, kvh, hd]: the heads moved before the sequence ([B, heads, S, hd], a transpose
  // each), one causal attention kernel (no [S, S] tensor), the context moved back. The padding mask
  // is not applied: the kernels take packed sequences (MaxText's segment ids) and no padding bias,
  // so flash attention is for unpadded data (padding: max_length of fixed-length examples).
  // Under sequence parallelism each replica's queries are its tokens of the sequence, and its keys
  // and values the whole sequence's, all-gathered along the sequence axis (MaxText: `kv_length`
  // unsharded at the kernel; the gradients reduce-scattered back: models/autodiff.cc). The causal
  // mask skips the key blocks after a query block (q_offset: where its queries sit among the keys).
  // Load-balanced (MaxText's context_parallel_load_balance), replica i holds chunks i and 2n - 1 - i
  // of 2n: one kernel call per chunk, the same work on every replica; the graph is replica 0's.
  // Else its tokens are the i-th block, the replicas' work differs and the step waits for the one
  // with the most: the graph is that replica's, the last block's.
  int flash_attention(int q, int k, int v, const std::string& at) {
    const int64_t hd = head_dim_;
    auto heads_first = [&](int x) { return g().transpose(x, {0, 2, 1, 3}); };
    AttentionAttrs a;
    a.causal = true;
    a.window = window();
    a.block_q = shape_.flash_block_q;
    a.block_kv = shape_.flash_block_kv;
    a.scale = 1.0 / std::sqrt(double(hd));
    int keys = heads_first(k), values = heads_first(v);
    const int queries = heads_first(q);
    int ctx = -1;
    if (const int64_t n = shape_.mesh[MeshAxis::kSequence]; n > 1) {
      CollectiveAttrs gather;
      gather.op = CollectiveOp::kAllGather;
      gather.replicas = shape_.mesh.devices();
      gather.groups = axis_groups(shape_.mesh, MeshAxis::kSequence);
      gather.dim = 2;
      gather.axis = MeshAxis::kSequence;
      keys = g().collective(keys, gather, at + ".k_all_gather");
      values = g().collective(values, gather, at + ".v_all_gather");
      if (shape_.sequence_load_balance) {
        const int64_t half = S_ / 2;  // chunk 0 and chunk 2n - 1 of replica 0
        AttentionAttrs last = a;
        last.q_offset = (2 * n - 1) * half;
        const int first = g().attention(g().slice(queries, 2, 0, half, at + ".chunk0"), keys, values, a, at + ".attention").out;
        const int second =
            g().attention(g().slice(queries, 2, half, S_, at + ".chunk1"), keys, values, last, at + ".attention.mirror").out;
        ctx = g().concatenate({first, second}, 2, at + ".attention.chunks");
      } else {
        a.q_offset = (n - 1) * S_;
      }
    }
    if (ctx < 0) ctx = g().attention(queries, keys, values, a, at + ".attention").out;
    return row_parallel(g().reshape(g().transpose(ctx, {0, 2, 1, 3}), {B_ * S_, nh_ * hd}), nh_ * hd, H_, at + ".o_proj");
  }

  // lm_head (Linear(H, vocab, bias=False), untied): logits [B*S, vocab]; CrossEntropyLoss(ignore_index
  // = -100), the mean over the positions that have a label.
  // Under tensor parallelism the logits are this replica's share of the vocabulary (MaxText: `vocab`
  // on the tensor axis): the loss's row maximum and sums become partial over it (models/losses.h).
  void head(int x) override {
    if (sharded_stream()) x = gather_columns(x, "model.norm.all_gather");
    // Tied (Gemma, GPT-3): the logits are x times the embedding table, transposed (under tensor
    // parallelism this replica's rows: its share of the vocabulary, as untied).
    out_.logits = arch_.tied_embeddings ? g().dot(x, wte_, {{}, {}, {1}, {1}}, shape_.precision, "lm_head")
                                        : layers::project(cx(), x, H_, arch_.vocab / shape_.tensor,
                                                          layers::Projection::kLinearNoBias, "lm_head");
    token_loss(S_, {"loss.ignored", "loss.neg_ignored", "loss.weights"});
  }

  bool rotary_positions() const { return arch_.positions == PositionKind::kRotary; }
  // Mistral's sliding window where it masks anything at this length (0: none).
  int64_t window() const { return arch_.sliding_window > 0 && arch_.sliding_window < S_ ? arch_.sliding_window : 0; }

  const int64_t S_, nh_, kvh_;
  int wte_ = -1;
  int causal_ = -1, padding_ = -1, cos_ = -1, sin_ = -1;
};

// MaxText's logical axis rules for the tensor axis on Hugging Face's weight names (Linear weights are
// [out, in]): the column-parallel projections split their outputs (query and key/value heads, the
// MLP width, the vocabulary), the row-parallel ones (o_proj, down_proj) their inputs, whose products
// are then partial sums over the axis (all-reduced where the residual stream reads them whole:
// Megatron-LM's two all-reduces per layer forward and two backward); the column-parallel biases
// split with their outputs, the row-parallel ones whole (added after the sum). The embedding table's
// rows are split over the vocabulary (its lookup all-reduced once), norms and learned positions stay
// whole on every tensor replica.
// With the stream split along the hidden dimension (MaxText's activation_embed and norm on the
// tensor axis) the norms' weights and biases, the row-parallel biases and the learned positions'
// columns split with it.
void shard_over_tensor(ModelGraph& m, bool sharded_stream) {
  static const std::pair<std::string_view, int> kSplits[] = {
      {".q_proj.weight", 0}, {".k_proj.weight", 0},    {".v_proj.weight", 0},   {".o_proj.weight", 1},
      {".gate_proj.weight", 0}, {".up_proj.weight", 0}, {".down_proj.weight", 1}, {"lm_head.weight", 0},
      {".q_proj.bias", 0},   {".k_proj.bias", 0},      {".v_proj.bias", 0},     {".gate_proj.bias", 0},
      {".up_proj.bias", 0},  {"model.embed_tokens.weight", 0}};
  static const std::pair<std::string_view, int> kStreamSplits[] = {
      {"layernorm.weight", 0}, {"layernorm.bias", 0}, {"model.norm.weight", 0}, {"model.norm.bias", 0},
      {".o_proj.bias", 0},     {".down_proj.bias", 0}, {"model.embed_positions.weight", 1}};
  auto ends_with = [](const std::string& name, std::string_view suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (int p : m.params) {
    const std::string& name = m.graph.node(p).name;
    for (const auto& [suffix, dim] : kSplits)
      if (ends_with(name, suffix)) m.graph.set_sharding(p, TensorSharding::split_along(dim, MeshAxis::kTensor));
    if (sharded_stream)
      for (const auto& [suffix, dim] : kStreamSplits)
        if (ends_with(name, suffix)) m.graph.set_sharding(p, TensorSharding::split_along(dim, MeshAxis::kTensor));
  }
}

ModelGraph build_llama(const ModelArch& a, const HeadOptions&, const StepShape& s) {
  check_batch(s);
  check_seq(s.seq, a.max_position, "max_position_embeddings of " + a.name);
  require(a.heads >= 1, "heads", a.heads, "must be at least 1");
  require(a.kv_heads >= 1 && a.heads % a.kv_heads == 0, "kv_heads", a.kv_heads,
          "must divide heads (" + std::to_string(a.heads) + "): each key/value head serves a group of query heads");
  const int64_t hd = a.head_dim ? a.head_dim : a.hidden / a.heads;  // q_proj is [heads * hd, hidden]
  require(hd >= 2 && hd % 2 == 0, "head_dim", hd, "must be even (rotate_half splits the head dimension in halves)");
  check_float(s);
  if (const int64_t n = s.mesh[MeshAxis::kSequence]; n > 1) {
    const int64_t blocks = s.sequence_load_balance ? 2 * n : n;
    require(s.seq % blocks == 0, "seq", s.seq,
            "must be divisible by " + std::to_string(blocks) + (s.sequence_load_balance ? " (twice the mesh's sequence axis: each replica takes two equal chunks)" : " (the mesh's sequence axis: each replica takes an equal block)"));
    if (!s.flash_attention)
      throw ConfigError({"", "attention", 0, "eager",
                         "sequence parallelism is modelled with flash attention only (its keys and values gathered "
                         "for the kernel)",
                         "write attention: flash"});
  }
  if (s.tensor <= 1) return LlamaBuilder(a, s).build();
  // One tensor replica's share: the heads, key/value heads, MLP width and logits divided by T.
  const int64_t T = s.tensor;
  auto divides = [&](const char* key, int64_t v, const char* what) {
    require(v % T == 0, key, v, "must be divisible by the mesh's tensor axis (" + std::to_string(T) + "): " + what);
  };
  divides("heads", a.heads, "each tensor replica computes whole attention heads");
  divides("kv_heads", a.kv_heads, "each tensor replica holds whole key/value heads (fewer key/value heads than the "
                                  "tensor axis, replicated as MaxText does, are not modelled)");
  divides("intermediate", a.intermediate, "the MLP is split column- and row-wise");
  divides("vocab", a.vocab, "the embedding table and the logits are split over the vocabulary");
  if (s.tensor_activations_sharded)
    divides("hidden", a.hidden, "the activations between the blocks are split along it (tensor_activations: sharded)");
  ModelArch local = a;
  local.heads /= T;
  local.kv_heads /= T;
  local.intermediate /= T;
  local.head_dim = hd;
  ModelGraph m = LlamaBuilder(local, s).build();
  shard_over_tensor(m, s.tensor_activations_sharded);
  return m;
}

// Llama config.json: rope, rms_norm_eps 1e-5, hidden_act silu with gate_proj/up_proj,
// tie_word_embeddings false, no biases; head_dim = hidden / heads (128 in every preset).
struct LlamaShape {
  int64_t layers, hidden, heads, kv_heads, intermediate, vocab, max_position;
};
ModelArch llama_preset(const std::string& name, LlamaShape x, ModelFamily family = ModelFamily::kLlama,
                       const std::string& counted = "LlamaForCausalLM") {
  return {.name = name, .family = family, .counted_class = counted, .layers = x.layers,
          .hidden = x.hidden, .heads = x.heads, .kv_heads = x.kv_heads, .intermediate = x.intermediate, .vocab = x.vocab,
          .max_position = x.max_position, .tied_embeddings = false, .biases = false, .norm = NormKind::kRmsNorm,
          .activation = Activation::kSwiGlu, .positions = PositionKind::kRotary};
}

// Mistral config.json: Llama's architecture with sliding_window 4096 (each query attends to the last
// 4,096 keys), rope theta 10000.
ModelArch mistral_preset(const std::string& name, LlamaShape x, int64_t window) {
  ModelArch a = llama_preset(name, x, ModelFamily::kMistral, "MistralForCausalLM");
  a.sliding_window = window;
  return a;
}

// Gemma config.json: head_dim 256 (heads need not divide hidden), hidden_activation gelu_pytorch_tanh
// in a gated MLP (GeGLU), tie_word_embeddings true, the embeddings scaled by sqrt(hidden_size).
// GemmaRMSNorm scales by (1 + weight): one add on each norm's weight vector, not modelled.
ModelArch gemma_preset(const std::string& name, LlamaShape x) {
  ModelArch a = llama_preset(name, x, ModelFamily::kGemma, "GemmaForCausalLM");
  a.head_dim = 256;
  a.activation = Activation::kGeGlu;
  a.tied_embeddings = true;
  a.scaled_embeddings = true;
  return a;
}

// MaxText's gpt3-175b (MaxText/configs/models/gpt3-175b.yml; decoder_block gpt3): 96 layers,
// base_emb_dim 12288, 96 query and key/value heads of head_dim 128, base_mlp_dim 49152 with one gelu
// (jax.nn.gelu: the tanh approximation; not gated), vocab_size 50304, learned positions
// (trainable_position_size 16384), logits_via_embedding (tied), LayerNorm (epsilon 1e-5) and
// projections with biases (Gpt3LayerNorm, DenseGeneral use_bias), enable_dropout false. Its fused
// query/key/value projection is the three projections here (the same FLOPs). 174,780,997,632 parameters.
ModelArch gpt3_preset(const std::string& name, LlamaShape x) {
  ModelArch a = llama_preset(name, x, ModelFamily::kGpt3, "Gpt3ForCausalLM");
  a.tied_embeddings = true;
  a.biases = true;
  a.norm = NormKind::kLayerNorm;
  a.activation = Activation::kGeluNew;
  a.positions = PositionKind::kLearned;
  return a;
}

// A family of Llama-shaped decoders on this builder whose classes are named `prefix`... (LlamaForCausalLM,
// LlamaDecoderLayer, ...; norms `norm_class`, default prefix + "RMSNorm"): head causal_lm, the decoder
// parameter count.
Family decoder_family(ModelFamily id, std::string name, const std::string& prefix, std::vector<ModelArch> presets,
                      bool own_head_dim = false, std::string norm_class = "") {
  if (norm_class.empty()) norm_class = prefix + "RMSNorm";
  return {.id = id,
          .name = std::move(name),
          .presets = std::move(presets),
          .heads = {Head::kCausalLm},
          .modules = {{{Head::kCausalLm, prefix + "ForCausalLM"}},
                      {{"model", prefix + "Model"},
                       {"model.layers", "ModuleList"},
                       {"model.layers.*", prefix + "DecoderLayer"},
                       {"model.embed_tokens", "Embedding"},
                       {"**.input_layernorm", norm_class},
                       {"**.post_attention_layernorm", norm_class},
                       {"model.norm", norm_class},
                       {"**.self_attn", prefix + "Attention"},
                       {"**.mlp", prefix + "MLP"},
                       {"**.rotary_emb", prefix + "RotaryEmbedding"}},
                      "Linear"},  // q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, lm_head
          .own_head_dim = own_head_dim,
          .parameters = decoder_only_parameters,
          .build = build_llama};
}

}  // namespace

const Family& llama_family() {
  // Hugging Face hub config.json of each (num_hidden_layers, hidden_size, num_attention_heads,
  // num_key_value_heads: grouped-query attention below num_attention_heads, intermediate_size,
  // vocab_size, max_position_embeddings). Llama-3.1's rope_scaling (rope_type llama3, factor 8,
  // original_max_position_embeddings 8192) rescales the rotary frequencies for its 131,072
  // positions: it changes the cos/sin tables' values, which the host computes (models/llama.h),
  // not the work of a step.
  static const Family f =
      decoder_family(ModelFamily::kLlama, "llama", "Llama",
                     {llama_preset("meta-llama/Llama-2-7b-hf", {32, 4096, 32, 32, 11008, 32000, 4096}),
                      llama_preset("meta-llama/Llama-2-13b-hf", {40, 5120, 40, 40, 13824, 32000, 4096}),
                      llama_preset("meta-llama/Llama-2-70b-hf", {80, 8192, 64, 8, 28672, 32000, 4096}),
                      llama_preset("meta-llama/Meta-Llama-3-8B", {32, 4096, 32, 8, 14336, 128256, 8192}),
                      llama_preset("meta-llama/Llama-3.1-8B", {32, 4096, 32, 8, 14336, 128256, 131072}),
                      llama_preset("meta-llama/Llama-3.1-70B", {80, 8192, 64, 8, 28672, 128256, 131072})});
  return f;
}

const Family& mistral_family() {
  static const Family f = decoder_family(
      ModelFamily::kMistral, "mistral", "Mistral",
      {mistral_preset("mistralai/Mistral-7B-v0.1", {32, 4096, 32, 8, 14336, 32000, 32768}, 4096)});
  return f;
}

const Family& gemma_family() {
  // own_head_dim: 256, not hidden / heads (gemma-7b: 3072 / 16 = 192).
  static const Family f = decoder_family(ModelFamily::kGemma, "gemma", "Gemma",
                                         {gemma_preset("google/gemma-2b", {18, 2048, 8, 1, 16384, 256000, 8192}),
                                          gemma_preset("google/gemma-7b", {28, 3072, 16, 16, 24576, 256000, 8192})},
                                         /*own_head_dim=*/true);
  return f;
}

const Family& gpt3_family() {
  // MaxText's GPT-3 (no Hugging Face class): its decoder block on this builder, with the Llama
  // builder's module names (model.layers.L.self_attn.q_proj, ...; the MLP's in-projection is
  // mlp.gate_proj, its out-projection mlp.down_proj) and classes Gpt3DecoderLayer, ..., LayerNorm.
  static const Family f = decoder_family(ModelFamily::kGpt3, "gpt3", "Gpt3",
                                         {gpt3_preset("gpt3-175b", {96, 12288, 96, 96, 49152, 50304, 16384})},
                                         /*own_head_dim=*/false, "LayerNorm");
  return f;
}

}  // namespace tpusim::models
