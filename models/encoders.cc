#include "models/encoders.h"

#include "models/bert_like.h"

namespace tpusim::models {

namespace {

// Each family's BertLikeSpec, from its config.json: RoBERTa layer_norm_eps 1e-5 (BERT's 1e-12
// elsewhere); ALBERT v2 hidden and attention dropout 0 (classifier_dropout_prob 0.1); DistilBERT
// seq_classif_dropout 0.2; dropout 0.1 otherwise.
BertLikeSpec roberta_spec() {
  return {.base = "roberta", .layer_prefix = "roberta.encoder.layer.", .positions_from_mask = true,
          .block = {.norm_eps = 1e-5, .attention_dropout = 0.1,
                    .self = {".attention.output.LayerNorm", ".attention.output.dense.dropout", 0.1,
                             ".attention.output.LayerNorm.residual"},
                    .mlp = {".output.LayerNorm", ".output.dense.dropout", 0.1, ".output.LayerNorm.residual"},
                    .self_attn = {".attention", ".attention.self.query", ".attention.self.key", ".attention.self.value",
                                  ".attention.output.dense"},
                    .ffn = {.in = ".intermediate.dense", .act = ".intermediate.dense.act", .out = ".output.dense"}},
          // RobertaClassificationHead on the <s> token; no pooler.
          .classifier = {.first_token = "first_token", .dropout_in = "classifier.dropout_in", .dense = "classifier.dense",
                         .activation_name = "classifier.activation", .dropout = "classifier.dropout",
                         .out = "classifier.out_proj"},
          .masked_lm = {"lm_head.dense", "lm_head.layer_norm", "lm_head.bias"}};
}

// MultiHeadSelfAttention scales q by 1/sqrt(d); out_lin's output goes to the residual without dropout
// (TransformerBlock.forward). No pooler: pre_classifier + ReLU + dropout + classifier.
BertLikeSpec distilbert_spec() {
  return {.base = "distilbert", .layer_prefix = "distilbert.transformer.layer.",
          .block = {.scale = layers::ScoreScale::kQuery, .attention_dropout = 0.1,
                    .self = {.norm = ".sa_layer_norm", .add = ".sa_layer_norm.residual"},
                    .mlp = {".output_layer_norm", ".ffn.lin2.dropout", 0.1, ".output_layer_norm.residual"},
                    .self_attn = {".attention", ".attention.q_lin", ".attention.k_lin", ".attention.v_lin",
                                  ".attention.out_lin"},
                    .ffn = {.in = ".ffn.lin1", .act = ".ffn.lin1.act", .out = ".ffn.lin2"}},
          .classifier = {.first_token = "first_token", .dense = "pre_classifier", .activation = EwOp::kRelu,
                         .activation_name = "pre_classifier.relu", .dropout = "dropout", .dropout_rate = 0.2,
                         .out = "classifier"},
          .masked_lm = {"vocab_transform", "vocab_layer_norm", "vocab_projector.bias"}};
}

// The one shared AlbertLayer (albert_layer_groups.0.albert_layers.0), applied `layers` times; AlbertPooler.
BertLikeSpec albert_spec() {
  return {.base = "albert", .layer_prefix = "albert.encoder.albert_layer_groups.0.albert_layers.", .token_types = true,
          .factorized = true, .hidden_dropout = 0.0,
          .block = {.self = {".attention.LayerNorm", ".attention.dense.dropout", 0.0, ".attention.LayerNorm.residual"},
                    .mlp = {".full_layer_layer_norm", ".ffn_output.dropout", 0.0, ".full_layer_layer_norm.residual"},
                    .self_attn = {".attention", ".attention.query", ".attention.key", ".attention.value",
                                  ".attention.dense"},
                    .ffn = {.in = ".ffn", .act = ".ffn.act", .out = ".ffn_output"}},
          .classifier = {.first_token = "albert.pooler.first_token", .dense = "albert.pooler",
                         .activation_name = "albert.pooler_activation", .dropout = "dropout", .out = "classifier"},
          .masked_lm = {"predictions.dense", "predictions.LayerNorm", "predictions.bias"}};
}

// Usable sequence length: RoBERTa's positions start at row 2, so S <= max_position - 2.
ModelGraph build_roberta(const ModelArch& a, const HeadOptions& h, const StepShape& s) {
  check_bert_like(a, h, s, a.max_position - 2, "the position rows of " + a.name);
  return BertLikeBuilder(a, h, s, roberta_spec()).build();
}
ModelGraph build_distilbert(const ModelArch& a, const HeadOptions& h, const StepShape& s) {
  check_bert_like(a, h, s, a.max_position, "the position rows of " + a.name);
  return BertLikeBuilder(a, h, s, distilbert_spec()).build();
}
ModelGraph build_albert(const ModelArch& a, const HeadOptions& h, const StepShape& s) {
  check_bert_like(a, h, s, a.max_position, "the position rows of " + a.name);
  return BertLikeBuilder(a, h, s, albert_spec()).build();
}

}  // namespace

const Family& roberta_family() {
  static const Family f{
      .id = ModelFamily::kRoberta,
      .name = "roberta",
      .organisations = {"FacebookAI"},
      // Hugging Face hub config.json of FacebookAI/roberta-base and of FacebookAI/roberta-large. 514
      // positions: RoBERTa's position ids start after padding_idx 1, so 512 tokens use rows 2..513.
      .presets = {{.name = "roberta-base", .family = ModelFamily::kRoberta, .counted_class = "RobertaModel",
                   .layers = 12, .hidden = 768, .heads = 12, .intermediate = 3072, .vocab = 50265, .max_position = 514,
                   .type_vocab = 1, .pooler = true},
                  {.name = "roberta-large", .family = ModelFamily::kRoberta, .counted_class = "RobertaModel",
                   .layers = 24, .hidden = 1024, .heads = 16, .intermediate = 4096, .vocab = 50265,
                   .max_position = 514, .type_vocab = 1, .pooler = true}},
      .heads = {Head::kSequenceClassification, Head::kMaskedLm},
      .modules = {{{Head::kSequenceClassification, "RobertaForSequenceClassification"},
                   {Head::kMaskedLm, "RobertaForMaskedLM"}},
                  {{"**.LayerNorm", "LayerNorm"},
                   {"**.*layer_norm", "LayerNorm"},
                   {"**.*_embeddings", "Embedding"},
                   {"lm_head", "RobertaLMHead"},
                   {"roberta", "RobertaModel"},
                   {"roberta.embeddings", "RobertaEmbeddings"},
                   {"roberta.encoder", "RobertaEncoder"},
                   {"roberta.encoder.layer", "ModuleList"},
                   {"roberta.encoder.layer.*", "RobertaLayer"},
                   {"classifier", "RobertaClassificationHead"},
                   {"**.attention", "RobertaAttention"},
                   {"**.self", "RobertaSelfAttention"},
                   {"**.attention.output", "RobertaSelfOutput"},
                   {"**.output", "RobertaOutput"},
                   {"**.intermediate", "RobertaIntermediate"}},
                  "Linear"},
      .parameters = text_encoder_parameters,
      .build = build_roberta,
  };
  return f;
}

const Family& distilbert_family() {
  static const Family f{
      .id = ModelFamily::kDistilBert,
      .name = "distilbert",
      .organisations = {"distilbert"},
      // Hugging Face hub config.json of distilbert/distilbert-base-uncased (n_layers, dim, n_heads,
      // hidden_dim; learned positions, sinusoidal_pos_embds false; no token types, no pooler).
      .presets = {{.name = "distilbert-base-uncased", .family = ModelFamily::kDistilBert,
                   .counted_class = "DistilBertModel", .layers = 6, .hidden = 768, .heads = 12, .intermediate = 3072,
                   .vocab = 30522, .max_position = 512}},
      .heads = {Head::kSequenceClassification, Head::kMaskedLm},
      .modules = {{{Head::kSequenceClassification, "DistilBertForSequenceClassification"},
                   {Head::kMaskedLm, "DistilBertForMaskedLM"}},
                  {{"**.LayerNorm", "LayerNorm"},
                   {"**.*layer_norm", "LayerNorm"},
                   {"**.*_embeddings", "Embedding"},
                   {"distilbert", "DistilBertModel"},
                   {"distilbert.embeddings", "Embeddings"},
                   {"distilbert.transformer", "Transformer"},
                   {"distilbert.transformer.layer", "ModuleList"},
                   {"distilbert.transformer.layer.*", "TransformerBlock"},
                   {"**.attention", "MultiHeadSelfAttention"},
                   {"**.ffn", "FFN"}},
                  "Linear"},
      .parameters = text_encoder_parameters,
      .build = build_distilbert,
  };
  return f;
}

namespace {

// Hugging Face hub config.json of albert/albert-base-v2 and of albert/albert-xxlarge-v2 (embedding_size
// 128, num_hidden_groups 1, inner_group_num 1: one layer's parameters shared by all 12; hidden_act gelu_new).
ModelArch albert_preset(const std::string& name, int64_t hidden, int64_t heads) {
  return {.name = name, .family = ModelFamily::kAlbert, .counted_class = "AlbertModel", .layers = 12, .hidden = hidden,
          .heads = heads, .intermediate = 4 * hidden, .vocab = 30000, .max_position = 512, .type_vocab = 2,
          .embedding_size = 128, .shared_layers = true, .pooler = true, .activation = Activation::kGeluNew};
}

}  // namespace

const Family& albert_family() {
  static const Family f{
      .id = ModelFamily::kAlbert,
      .name = "albert",
      .organisations = {"albert"},
      .presets = {albert_preset("albert-base-v2", 768, 12), albert_preset("albert-xxlarge-v2", 4096, 64)},
      .heads = {Head::kSequenceClassification, Head::kMaskedLm},
      .modules = {{{Head::kSequenceClassification, "AlbertForSequenceClassification"},
                   {Head::kMaskedLm, "AlbertForMaskedLM"}},
                  {{"**.LayerNorm", "LayerNorm"},
                   {"**.*layer_norm", "LayerNorm"},
                   {"**.*_embeddings", "Embedding"},
                   {"predictions", "AlbertMLMHead"},
                   {"albert", "AlbertModel"},
                   {"albert.embeddings", "AlbertEmbeddings"},
                   {"albert.encoder", "AlbertTransformer"},
                   {"albert.encoder.albert_layer_groups", "ModuleList"},
                   {"**.albert_layers", "ModuleList"},
                   {"albert.encoder.albert_layer_groups.*", "AlbertLayerGroup"},
                   {"**.albert_layers.*", "AlbertLayer"},
                   {"**.attention", "AlbertAttention"}},
                  "Linear"},
      .parameters = text_encoder_parameters,
      .build = build_albert,
  };
  return f;
}

uint64_t encoder_masked_lm_parameters(const ModelArch& a) {
  const uint64_t H = uint64_t(a.hidden), E = uint64_t(a.embedding_size ? a.embedding_size : a.hidden);
  const uint64_t V = uint64_t(a.vocab), pooler = a.pooler ? H * H + H : 0;  // the MLM classes have no pooler
  const uint64_t width = a.family == ModelFamily::kAlbert ? E : H;  // the transform's output width
  // transform dense (H -> width), its LayerNorm, the decoder's bias (its weight is the word embedding)
  return text_encoder_parameters(a) - pooler + (H * width + width) + 2 * width + V;
}

uint64_t encoder_classification_parameters(const ModelArch& a, int64_t num_labels) {
  const uint64_t H = uint64_t(a.hidden), L = uint64_t(num_labels);
  uint64_t n = text_encoder_parameters(a);  // the base class, with its pooler
  if (a.family == ModelFamily::kRoberta) return n - (H * H + H) + (H * H + H) + (H * L + L);  // head dense replaces the pooler
  if (a.family == ModelFamily::kDistilBert) return n + (H * H + H) + (H * L + L);  // pre_classifier, classifier
  return n + (H * L + L);  // ALBERT: its pooler is in the base count; the classifier
}

}  // namespace tpusim::models
