// The one graph builder of every model family: embeddings -> N blocks -> final norm -> head, for an
// encoder-only (BERT, RoBERTa, DistilBERT, ALBERT, ViT), decoder-only (GPT-2, Llama) or encoder–decoder
// (T5, BART) stack. A family specializes StackBuilder: it says what its stacks and blocks are (StackSpec,
// BlockSpec: norm placement and kind, residual wiring, attention and MLP names and variants) and writes
// only what is its own: the embeddings, the head, and an attention variant where it has one (GPT-2's
// fused c_attn, Llama's grouped-query attention with rotary embeddings).
//
// Units (ModelGraph::units) follow the skeleton: a stack's embeddings (with what its blocks share, such
// as the attention masks) are one unit, each block is one (flagged `layer`), the heads one; the final
// norm of a stack opens the next unit (the decoder's embeddings, or the heads).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/attention.h"
#include "models/layers.h"
#include "models/model.h"
#include "models/model_arch.h"

namespace tpusim::models {

// One stack of blocks: an encoder, a decoder, or the one stack of a decoder-only or encoder-only model.
struct StackSpec {
  std::string embed_unit{};    // the unit of its embeddings
  std::string layer_prefix{};  // state_dict prefix of block l: layer_prefix + l
  int64_t layers = 0;
  int64_t length = 0;         // its sequence length (S; an encoder–decoder's decoder: T)
  bool shared = false;        // one block's parameters applied `layers` times (ALBERT): block 0's names, unit prefix#l
  std::string final_norm{};   // its final norm ("" none), and a dropout after it ("" none)
  std::string final_dropout{};
  double final_dropout_rate = 0;
};

// A residual sub-block, its names suffixes of the block's prefix: pre-norm x + dropout(f(norm(x))),
// post-norm norm(x + dropout(f(x))).
struct Residual {
  std::string norm{};
  std::string dropout{};  // on the branch, at rate `dropout_rate`
  double dropout_rate = 0;
  std::string add{};      // the residual add
};

// The MLP's names (suffixes of the block's prefix): in -> activation -> [dropout] -> out, or SwiGLU's
// down(act(gate(x)) * up(x)) with gate = `in` (gated activations: SwiGLU, GeGLU).
struct MlpNames {
  std::string in{}, act{}, out{};
  std::string dropout{};  // after the activation (T5's), at `dropout_rate`
  double dropout_rate = 0;
  std::string up{}, gate{};  // SwiGLU: the up projection and the product
};

struct BlockSpec {
  bool pre_norm = false;        // norm before each branch (GPT-2, Llama, T5, ViT) or after the add (BERT, BART)
  bool residual_first = false;  // the add reads x + branch (T5, BART) or branch + x
  // Pre-norm residual streams are materialized in HBM once per sub-block: no reduction ends their
  // fusion, so under compiler/plan/fusion.h's producer-into-consumer rule every consumer would recompute the
  // stream back to the first layer; XLA keeps it (its fusion stops duplicating a producer into
  // consumers once the fusion outgrows its operand limit).
  bool materialize = false;
  double norm_eps = 1e-12;      // of the architecture's NormKind
  layers::Projection projection = layers::Projection::kLinear;  // of attention and MLP
  layers::ScoreScale scale = layers::ScoreScale::kScores;       // where 1/sqrt(head_dim) applies
  double attention_dropout = 0;  // on the attention probabilities
  Residual self{}, cross{}, mlp{};  // `cross`: a decoder block's cross-attention
  layers::AttentionNames self_attn{}, cross_attn{};
  MlpNames ffn{};
};

class StackBuilder {
 public:
  StackBuilder(const ModelArch& arch, const StepShape& shape);
  virtual ~StackBuilder() = default;
  // The forward graph with the loss; ModelGraph::modules left unset.
  ModelGraph build();

 protected:
  // Stack i's embeddings as [B*L, H] rows, and what its blocks share (masks into self_biases_).
  virtual int embed(size_t stack) = 0;
  // Block l of stack i; `memory` is the encoder's output in a decoder (else -1). Default: the
  // sub-blocks of the stack's BlockSpec.
  virtual int block(size_t stack, int64_t l, int x, int memory, const std::string& prefix);
  // Self-attention (kv == h) or cross-attention on normed rows h. Default: layers::attention with the
  // BlockSpec's names and the stack's score biases.
  virtual int attention(size_t stack, int h, int kv, const std::string& prefix, bool cross);
  // The head and its loss on the last stack's output: sets out_.logits and out_.loss.
  virtual void head(int x) = 0;

  Graph& g() { return out_.graph; }
  int next() { return int(g().nodes().size()); }
  layers::LayerContext cx() {
    return {g(), out_.params, out_.inputs, t_, shape_.param_dtype, shape_.precision, shape_.training,
            arch_.shared_layers ? &by_name_ : nullptr};
  }
  int input(const std::string& name, Dims shape, DType t) { return layers::input(cx(), name, std::move(shape), t); }
  int stored_weight(const std::string& name, Dims shape) { return layers::stored_weight(cx(), name, std::move(shape)); }
  int weight(const std::string& name, Dims shape) { return layers::weight(cx(), name, std::move(shape)); }
  int compute(int x) { return layers::compute(cx(), x); }
  int c(double v) { return layers::constant(cx(), v); }
  // A projection of the blocks (quantized under StepShape::quantization).
  int dense(int x, int64_t in, int64_t out, const std::string& name, size_t stack = 0) {
    layers::LayerContext c = cx();
    if (shape_.quantization != DotPrecision::kDefault) c.precision = shape_.quantization;
    return layers::project(c, x, in, out, blocks_[stack].projection, name);
  }
  int norm(int x, const std::string& name, size_t stack = 0);
  // Tensor parallelism with the residual stream split along the hidden dimension
  // (StepShape::tensor_activations_sharded): the stream's rows are [rows, H / T] on each replica,
  // a pre-norm block's normed input all-gathered to [rows, H] for its projections (gather_columns),
  // and its row-parallel projection's partial sum reduce-scattered back (row_parallel). Else the
  // stream is whole and row_parallel is `dense`.
  bool sharded_stream() const { return shape_.tensor > 1 && shape_.tensor_activations_sharded; }
  int64_t stream_width() const { return sharded_stream() ? H_ / shape_.tensor : H_; }
  int gather_columns(int x, const std::string& name);
  int scatter_columns(int x, const std::string& name);
  int row_parallel(int x, int64_t in, int64_t out, const std::string& name, size_t stack = 0);
  int dropout(int x, double rate, const std::string& name) { return layers::dropout(cx(), x, rate, name); }
  int activation(int x, const std::string& name);
  int residual(size_t stack, int x, const std::string& prefix, const Residual& r, const std::function<int(int)>& branch);
  int mlp(size_t stack, int h, const std::string& prefix);
  // Attention's shape for rows of stack i (queries) against rows of stack `kv_stack` (keys, values).
  layers::AttentionSpec attention_spec(size_t stack, size_t kv_stack, const layers::AttentionNames& n,
                                       const std::string& prefix) const;

  // Sequence and image classification: MSE on [B] float labels for one output, else cross-entropy on
  // s32 labels (Hugging Face's ...ForSequenceClassification / ViTForImageClassification).
  void classification_loss(int64_t num_labels);
  // A token-level LM loss on logits [B*L, vocab]: CrossEntropyLoss(ignore_index=-100) on the s32
  // `labels` input [B, L], the mean over labelled positions; `names`: the ignored mask, its negation
  // and the weights.
  void token_loss(int64_t length, const std::array<std::string, 3>& names);

  const ModelArch& arch_;
  const StepShape& shape_;
  const DType t_;
  const int64_t B_, H_;
  int64_t head_dim_;                       // hidden / heads unless the family has its own (T5, BART)
  std::vector<StackSpec> stacks_;          // one, or encoder and decoder
  std::vector<BlockSpec> blocks_;          // per stack
  std::vector<std::vector<layers::ScoreBias>> self_biases_;  // per stack: added to its self-attention scores
  std::vector<layers::ScoreBias> cross_biases_;              // added to the decoder's cross-attention scores
  // Set by embed() where the embeddings unit ends before what the blocks share (GPT-2's masks are in
  // no unit): the node count at its end. -1: the unit takes every node embed() built.
  int embed_unit_end_ = -1;
  ModelGraph out_;

 private:
  int finish(size_t stack, int x);      // the stack's final norm and dropout
  std::map<std::string, int> by_name_;  // shared blocks: a parameter name seen before is the same node
};

// The checks every family makes on a step's shape; ConfigError (yaml_path = the key) on failure.
void require(bool ok, const std::string& key, int64_t value, const std::string& rule);
void check_batch(const StepShape& s);
// seq in [1, max]; `rows` names what bounds it ("max_position_embeddings of bert-base-uncased").
void check_seq(int64_t seq, int64_t max, const std::string& rows, const std::string& key = "seq");
void check_heads_divide_hidden(const ModelArch& a);
void check_float(const StepShape& s);

}  // namespace tpusim::models
