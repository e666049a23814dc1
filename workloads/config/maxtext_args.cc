// The MaxText key table and the rewrite (maxtext_args.h). Names and defaults: AI-Hypercomputer/maxtext
// MaxText/configs/base.yml and MaxText/configs/models/*.yml (the model_name presets).
#include "workloads/config/maxtext_args.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "base/config_error.h"

namespace tpusim {

namespace {

using config::Node;
using K = MaxTextKeyKind;

// MaxText model_name -> (Hugging Face preset, decoder layer class: the FSDP unit).
const std::map<std::string, std::pair<std::string, std::string>>& model_names() {
  static const std::map<std::string, std::pair<std::string, std::string>> m = {
      {"llama2-7b", {"meta-llama/Llama-2-7b-hf", "LlamaDecoderLayer"}},
      {"llama2-13b", {"meta-llama/Llama-2-13b-hf", "LlamaDecoderLayer"}},
      {"llama2-70b", {"meta-llama/Llama-2-70b-hf", "LlamaDecoderLayer"}},
      {"llama3-8b", {"meta-llama/Meta-Llama-3-8B", "LlamaDecoderLayer"}},
      {"llama3.1-8b", {"meta-llama/Llama-3.1-8B", "LlamaDecoderLayer"}},
      {"llama3.1-70b", {"meta-llama/Llama-3.1-70B", "LlamaDecoderLayer"}},
      {"mistral-7b", {"mistralai/Mistral-7B-v0.1", "MistralDecoderLayer"}},
      {"gemma-2b", {"google/gemma-2b", "GemmaDecoderLayer"}},
      {"gemma-7b", {"google/gemma-7b", "GemmaDecoderLayer"}},
      {"gpt3-175b", {"gpt3-175b", "Gpt3DecoderLayer"}},
  };
  return m;
}

std::string known_models() {
  std::string s;
  for (const auto& [k, v] : model_names()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

const std::vector<MaxTextKey>& maxtext_keys() {
  static const std::vector<MaxTextKey> t = {
      {"model_name", K::Alias, "model, fsdp_wrap_layer_classes",
       "the preset of that MaxText model (llama2-7b -> meta-llama/Llama-2-7b-hf, llama3.1-8b -> meta-llama/Llama-3.1-8B, "
       "mistral-7b, gemma-2b, gemma-7b, ...) and its decoder layer as the FSDP unit", ""},
      {"per_device_batch_size", K::Alias, "per_device_batch_size",
       "as is; a fraction where a tensor x sequence group shares its sequences (0.25 with ici_sequence_parallelism=4)", ""},
      {"max_target_length", K::Alias, "max_length, dataset.train", "the sequence length; synthetic data: fixed:N", ""},
      {"steps", K::Alias, "steps", "as is", ""},
      {"gradient_accumulation_steps", K::Alias, "gradient_accumulation_steps", "as is", ""},
      {"ici_data_parallelism", K::Alias, "mesh.data", "as is (-1: the rest)", ""},
      {"ici_fsdp_parallelism", K::Alias, "mesh.fsdp, sharding", "as is; not 1: sharding fsdp", ""},
      {"ici_sequence_parallelism", K::Alias, "mesh.sequence, sharding", "as is; not 1: sharding fsdp (the weights are split over it)", ""},
      {"ici_context_parallelism", K::Alias, "mesh.sequence, sharding", "as ici_sequence_parallelism (its newer name)", ""},
      {"context_parallel_load_balance", K::Alias, "context_parallel_load_balance", "as is", ""},
      {"ici_tensor_parallelism", K::Alias, "mesh.tensor", "as is", ""},
      {"dcn_data_parallelism", K::Alias, "dcn_mesh.data", "as is (-1: every slice)", ""},
      {"remat_policy", K::Alias, "remat_policy", "the same names (replaces the workload's fsdp_grad_ckpt)", ""},
      {"query_proj", K::Alias, "remat_tensors.query_proj", "device | offload | remat (remat_policy: custom)", ""},
      {"key_proj", K::Alias, "remat_tensors.key_proj", "likewise", ""},
      {"value_proj", K::Alias, "remat_tensors.value_proj", "likewise", ""},
      {"context", K::Alias, "remat_tensors.context", "likewise", ""},
      {"out_proj", K::Alias, "remat_tensors.out_proj", "likewise", ""},
      {"mlpwi", K::Alias, "remat_tensors.mlpwi", "likewise", ""},
      {"mlpwo", K::Alias, "remat_tensors.mlpwo", "likewise", ""},
      {"decoder_layer_input", K::Alias, "remat_tensors.decoder_layer_input", "device | offload (remat_policy: custom)", ""},
      {"attention", K::Alias, "attention", "flash and autoselected -> flash, dot_product -> eager", ""},
      {"sa_block_q", K::Alias, "sa_block_q", "as is", ""},
      {"sa_block_kv", K::Alias, "sa_block_kv", "as is", ""},
      {"quantization", K::Alias, "quantization", "'' -> none, int8, fp8", ""},
      {"dtype", K::Alias, "precision", "bfloat16 -> bf16, float32 -> fp32", ""},
      {"opt_type", K::Alias, "optimizer", "adamw and adam_pax -> adamw, sgd, adafactor", ""},
      {"base_emb_dim", K::Alias, "model_config.hidden", "as is", ""},
      {"base_num_query_heads", K::Alias, "model_config.heads", "as is", ""},
      {"base_num_kv_heads", K::Alias, "model_config.kv_heads", "as is", ""},
      {"base_mlp_dim", K::Alias, "model_config.intermediate", "as is", ""},
      {"base_num_decoder_layers", K::Alias, "model_config.layers", "as is", ""},
      {"head_dim", K::Alias, "model_config.head_dim", "as is", ""},
      {"vocab_size", K::Alias, "model_config.vocab", "as is", ""},
      {"logits_via_embedding", K::Alias, "model_config.tie_word_embeddings", "true / false", ""},
      {"ici_fsdp_transpose_parallelism", K::Unsupported, "", "the fsdp_transpose axis is not modelled", "1"},
      {"ici_expert_parallelism", K::Unsupported, "", "mixture of experts is not modelled", "1"},
      {"ici_pipeline_parallelism", K::Unsupported, "", "pipeline parallelism is not modelled", "1"},
      {"ici_tensor_transpose_parallelism", K::Unsupported, "", "the tensor_transpose axis is not modelled", "1"},
      {"dcn_fsdp_parallelism", K::Unsupported, "", "only data parallelism crosses slices here", "1"},
      {"dcn_fsdp_transpose_parallelism", K::Unsupported, "", "only data parallelism crosses slices here", "1"},
      {"dcn_sequence_parallelism", K::Unsupported, "", "only data parallelism crosses slices here", "1"},
      {"dcn_tensor_parallelism", K::Unsupported, "", "only data parallelism crosses slices here", "1"},
      {"dcn_expert_parallelism", K::Unsupported, "", "only data parallelism crosses slices here", "1"},
      {"dcn_pipeline_parallelism", K::Unsupported, "", "only data parallelism crosses slices here", "1"},
      {"num_experts", K::Unsupported, "", "mixture of experts is not modelled", "1"},
      {"dataset_type", K::Ignored, "", "the data: tpusim runs full-length synthetic sequences (packed, as MaxText packs)", ""},
      {"weight_dtype", K::Ignored, "", "the stored parameters' dtype follows `precision`", ""},
      {"scan_layers", K::Ignored, "", "a compile-time choice: the step's work is the same", ""},
      {"sa_block_kv_compute", K::Ignored, "", "the flash kernel's inner blocks: sa_block_q/sa_block_kv set its VMEM blocks", ""},
      {"sa_block_q_dkv", K::Ignored, "", "the backward's blocks follow the forward's here", ""},
      {"sa_block_kv_dkv", K::Ignored, "", "the backward's blocks follow the forward's here", ""},
      {"sa_block_kv_dkv_compute", K::Ignored, "", "the backward's blocks follow the forward's here", ""},
      {"sa_block_q_dq", K::Ignored, "", "the backward's blocks follow the forward's here", ""},
      {"sa_block_kv_dq", K::Ignored, "", "the backward's blocks follow the forward's here", ""},
      {"learning_rate", K::Ignored, "", "numerics, not time", ""},
      {"cosine_learning_rate_final_fraction", K::Ignored, "", "numerics, not time", ""},
      {"warmup_steps_fraction", K::Ignored, "", "numerics, not time", ""},
      {"learning_rate_schedule_steps", K::Ignored, "", "numerics, not time", ""},
      {"adam_b1", K::Ignored, "", "numerics, not time", ""},
      {"adam_b2", K::Ignored, "", "numerics, not time", ""},
      {"adam_eps", K::Ignored, "", "numerics, not time", ""},
      {"adam_eps_root", K::Ignored, "", "numerics, not time", ""},
      {"adam_weight_decay", K::Ignored, "", "numerics, not time", ""},
      {"gradient_clipping_threshold", K::Ignored, "", "numerics, not time", ""},
      {"init_weights_seed", K::Ignored, "", "numerics, not time", ""},
      {"data_shuffle_seed", K::Ignored, "", "numerics, not time", ""},
      {"run_name", K::Ignored, "", "bookkeeping", ""},
      {"base_output_directory", K::Ignored, "", "bookkeeping", ""},
      {"dataset_path", K::Ignored, "", "the data: synthetic sequences", ""},
      {"tokenizer_path", K::Ignored, "", "the data: synthetic sequences", ""},
      {"hardware", K::Ignored, "", "the hardware comes from --hw / hw:", ""},
      {"enable_checkpointing", K::Ignored, "", "checkpoint writes are not modelled", ""},
      {"async_checkpointing", K::Ignored, "", "checkpoint writes are not modelled", ""},
      {"checkpoint_period", K::Ignored, "", "checkpoint writes are not modelled", ""},
      {"load_parameters_path", K::Ignored, "", "checkpoint reads are not modelled", ""},
      {"enable_profiler", K::Ignored, "", "bookkeeping", ""},
      {"profiler", K::Ignored, "", "bookkeeping", ""},
      {"log_period", K::Ignored, "", "bookkeeping", ""},
      {"metrics_file", K::Ignored, "", "bookkeeping", ""},
      {"gcs_metrics", K::Ignored, "", "bookkeeping", ""},
      {"enable_goodput_recording", K::Ignored, "", "bookkeeping", ""},
      {"monitor_goodput", K::Ignored, "", "bookkeeping", ""},
      {"skip_first_n_steps_for_profiler", K::Ignored, "", "bookkeeping", ""},
  };
  return t;
}

std::string maxtext_base_workload() {
  return "kind: training\n"
         "task: causal_lm\n"
         "framework: jax\n"
         "dataset: {train: 'fixed:2048'}\n"
         "max_length: 2048\n"
         "padding: max_length\n"
         "per_device_batch_size: 12\n"
         "steps: 10\n"
         "optimizer: adamw\n"
         "precision: bf16\n"
         "sharding: fsdp\n"
         "mesh: {fsdp: -1}\n"
         "remat_policy: full\n"
         "attention: flash\n";
}

std::string read_maxtext_args(const std::string& arg, std::string* origin) {
  std::error_code ec;
  if (arg.find('=') == std::string::npos && std::filesystem::is_regular_file(arg, ec)) {
    *origin = arg;
    return config::read_file(arg, "pass a file of MaxText key=value arguments, or the arguments themselves");
  }
  *origin = "--maxtext-args";
  return arg;
}

namespace {

struct Token {
  std::string key, value;
  int line = 0;
};

std::string unquote(std::string v) {
  while (!v.empty() && std::isspace(uint8_t(v.back()))) v.pop_back();
  size_t a = 0;
  while (a < v.size() && std::isspace(uint8_t(v[a]))) ++a;
  v = v.substr(a);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}

// `key=value` tokens (whitespace-separated) and `key: value` lines; `#` starts a comment.
std::vector<Token> tokens_of(const std::string& text, const std::string& origin) {
  std::vector<Token> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const size_t colon = line.find(':'), eq = line.find('=');
    if (colon != std::string::npos && (eq == std::string::npos || colon < eq)) {  // base.yml style
      const std::string key = unquote(line.substr(0, colon));
      if (!key.empty()) out.push_back({key, unquote(line.substr(colon + 1)), n});
      continue;
    }
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      const size_t e = w.find('=');
      if (e == std::string::npos || e == 0)
        throw ConfigError({origin, w, n, w, "is not a MaxText key=value argument", "write key=value, e.g. steps=5"});
      out.push_back({w.substr(0, e), unquote(w.substr(e + 1)), n});
    }
  }
  return out;
}

Node scalar(const std::string& v, const std::string& origin, int line) {
  Node n;
  n.kind = Node::Kind::Scalar;
  n.scalar = v;
  n.file = origin;
  n.line = line;
  return n;
}

// Sets `path` (dotted) in `root` to `value`, creating the maps on the way.
void put(Node& root, const std::string& path, Node value) {
  const int line = value.line;
  config::parent_of(root, path, value.file, line).set(path.substr(path.rfind('.') + 1), std::move(value), line);
}

[[noreturn]] void bad(const std::string& origin, const Token& t, const std::string& rule, const std::string& hint) {
  throw ConfigError({origin, t.key, t.line, t.value, rule, hint});
}

std::string mapped(const Token& t, const std::string& origin, const std::map<std::string, std::string>& table) {
  if (auto it = table.find(t.value); it != table.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : table) known += (known.empty() ? "" : ", ") + (k.empty() ? "''" : k);
  bad(origin, t, "is not a value tpusim models for MaxText's " + t.key, "use one of: " + known);
}

void alias(Node& root, const Token& t, const MaxTextKey& k, const std::string& origin) {
  auto set = [&](const std::string& path, const std::string& v) { put(root, path, scalar(v, origin, t.line)); };
  if (t.key == "model_name") {
    const auto it = model_names().find(t.value);
    if (it == model_names().end())
      bad(origin, t, "is not a MaxText model tpusim has a preset for", "known: " + known_models());
    set("model", it->second.first);
    Node classes;
    classes.kind = Node::Kind::Sequence;
    classes.file = origin;
    classes.line = t.line;
    classes.items.push_back(scalar(it->second.second, origin, t.line));
    put(root, "fsdp_wrap_layer_classes", classes);
  } else if (t.key == "max_target_length") {
    set("max_length", t.value);
    const Node* d = root.find("dataset");
    const Node* train = d && d->is_map() ? d->find("train") : nullptr;
    if (!train || (train->kind == Node::Kind::Scalar && train->scalar.rfind("fixed:", 0) == 0)) set("dataset.train", "fixed:" + t.value);
  } else if (t.key == "remat_policy") {
    set("remat_policy", t.value);
    root.erase("fsdp_grad_ckpt");  // MaxText's one rematerialization setting replaces the workload's
  } else if (t.key == "ici_fsdp_parallelism") {
    set("mesh.fsdp", t.value);
    set("sharding", t.value == "1" ? "data_parallel" : "fsdp");
  } else if (t.key == "ici_sequence_parallelism" || t.key == "ici_context_parallelism") {
    set("mesh.sequence", t.value);  // and sharding fsdp (apply_maxtext_args, once every key is read)
  } else if (t.key == "context_parallel_load_balance") {
    set("context_parallel_load_balance",
        mapped(t, origin, {{"True", "true"}, {"true", "true"}, {"False", "false"}, {"false", "false"}}));
  } else if (t.key == "attention") {
    set("attention", mapped(t, origin, {{"flash", "flash"}, {"autoselected", "flash"}, {"dot_product", "eager"}}));
  } else if (t.key == "quantization") {
    set("quantization", mapped(t, origin, {{"", "none"}, {"int8", "int8"}, {"fp8", "fp8"}}));
  } else if (t.key == "dtype") {
    set("precision", mapped(t, origin, {{"bfloat16", "bf16"}, {"float32", "fp32"}}));
  } else if (t.key == "opt_type") {
    set("optimizer", mapped(t, origin, {{"adamw", "adamw"}, {"adam_pax", "adamw"}, {"sgd", "sgd"}, {"adafactor", "adafactor"}}));
  } else {
    set(k.target, t.value);
  }
}

}  // namespace

std::vector<std::string> apply_maxtext_args(Node& root, const std::string& text, const std::string& origin) {
  std::map<std::string, const MaxTextKey*> by_name;
  for (const MaxTextKey& k : maxtext_keys()) by_name[k.name] = &k;
  std::set<std::string> ignored;
  // model_name first: a later key may refine the preset (base_emb_dim, ...).
  std::vector<Token> tokens = tokens_of(text, origin);
  std::stable_partition(tokens.begin(), tokens.end(), [](const Token& t) { return t.key == "model_name"; });
  for (const Token& t : tokens) {
    const auto it = by_name.find(t.key);
    if (it == by_name.end()) {
      ignored.insert("maxtext:" + t.key);  // listed, not fatal: MaxText has many more keys
      continue;
    }
    const MaxTextKey& k = *it->second;
    if (k.kind == K::Ignored) {
      ignored.insert("maxtext:" + t.key);
    } else if (k.kind == K::Unsupported) {
      if (t.value != k.neutral) bad(origin, t, "is not modelled: " + k.rule, "remove it, or set it to " + k.neutral);
    } else {
      alias(root, t, k, origin);
    }
  }
  // A sequence axis shards the weights as the fsdp axis does (MaxText: `embed` over fsdp and sequence).
  if (const Node* sq = root.find("mesh"); sq && sq->is_map())
    if (const Node* n = sq->find("sequence"); n && n->kind == Node::Kind::Scalar && n->scalar != "1" && n->scalar != "0")
      put(root, "sharding", scalar("fsdp", n->file, n->line));
  // Without an fsdp axis there are no FSDP units: the layer class model_name gave is dropped.
  if (const Node* sh = root.find("sharding"); sh && sh->scalar == "data_parallel")
    if (const Node* w = root.find("fsdp_wrap_layer_classes"); w && w->file == origin) root.erase("fsdp_wrap_layer_classes");
  return {ignored.begin(), ignored.end()};
}

std::string maxtext_arguments_markdown() {
  std::string md = "### MaxText arguments (`--maxtext-args`)\n\n"
                   "`tpusim run --maxtext-args 'model_name=llama3.1-8b per_device_batch_size=1 max_target_length=8192 "
                   "ici_fsdp_parallelism=-1 remat_policy=full attention=flash'` (or a file of such tokens, or of "
                   "base.yml-style `key: value` lines) runs what MaxText's train.py would: without `--workload` from "
                   "MaxText's defaults (FSDP over the slice, full remat, bf16, AdamW, 12 sequences of 2,048 tokens per "
                   "device, synthetic data; 10 steps), with one on top of it. Keys not in this table are listed in "
                   "report.json `workload.ignored_keys` as `maxtext:KEY`, not refused.\n\n"
                   "| MaxText key | Kind | tpusim key | Rule |\n|---|---|---|---|\n";
  for (const MaxTextKey& k : maxtext_keys()) {
    const char* kind = k.kind == K::Alias ? "alias" : k.kind == K::Ignored ? "ignored" : "unsupported";
    const std::string rule = k.kind == K::Unsupported ? k.rule + " (accepted: `" + k.neutral + "`)" : k.rule;
    md += "| `" + k.name + "` | " + kind + " | " + (k.target.empty() ? "" : "`" + k.target + "`") + " | " + rule + " |\n";
  }
  return md + "\n";
}

}  // namespace tpusim
