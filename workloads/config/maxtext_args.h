// MaxText's command line in a training workload (`tpusim run --maxtext-args`): a user pastes what
// they pass to MaxText's train.py (`model_name=llama3.1-8b per_device_batch_size=3
// max_target_length=8192 ici_fsdp_parallelism=-1 remat_policy=full attention=flash ...`, or a
// base.yml override file of `key: value` lines) and it becomes tpusim's keys through one table
// (maxtext_keys()), as --training-args does for Hugging Face's Trainer. Each MaxText key is
//   alias        rewritten to tpusim key(s), with its value mapped (model_name=llama3.1-8b ->
//                model: meta-llama/Llama-3.1-8B, fsdp_wrap_layer_classes: [LlamaDecoderLayer]);
//   ignored      accepted without effect on simulated time (run_name, base_output_directory, ...);
//   unsupported  changes time in a way tpusim does not model: exit 2 when set to anything but its
//                neutral value (dcn_fsdp_parallelism=2, ...).
// A key MaxText has that the table does not know is listed, not fatal: report.json
// `workload.ignored_keys` holds it as "maxtext:KEY", beside the ignored ones.
#pragma once
#include <string>
#include <vector>

#include "config/tree.h"

namespace tpusim {

enum class MaxTextKeyKind { Alias, Ignored, Unsupported };

struct MaxTextKey {
  std::string name;     // as MaxText's base.yml spells it
  MaxTextKeyKind kind = MaxTextKeyKind::Ignored;
  std::string target;   // Alias: the tpusim key(s) it writes
  std::string rule;     // Alias: how the value maps; Ignored / Unsupported: why
  std::string neutral;  // Unsupported: the value that means "not used" (accepted)
};

const std::vector<MaxTextKey>& maxtext_keys();

// The workload MaxText's defaults describe (base.yml: FSDP over the slice, full remat, bf16, AdamW,
// per_device_batch_size 12, max_target_length 2048, synthetic data) for `tpusim run --maxtext-args`
// without --workload; model_name must then be given. `steps` defaults to 10 here (MaxText's 150,001
// is a whole run).
std::string maxtext_base_workload();

// The MaxText arguments `arg`: a path to a file of `key=value` tokens or base.yml-style `key: value`
// lines, or the tokens inline ("model_name=llama2-7b steps=5"). Returns `origin` for errors.
std::string read_maxtext_args(const std::string& arg, std::string* origin);

// Writes the settings of `text` (MaxText `key=value` tokens or `key: value` lines, `#` comments)
// into the workload tree `root` as tpusim keys (each node keeps `origin` and the token's line), and
// returns the keys accepted without effect or not known ("maxtext:KEY", sorted). Throws ConfigError
// (origin, the MaxText key) for an unsupported setting or a value the alias cannot map.
std::vector<std::string> apply_maxtext_args(config::Node& root, const std::string& text, const std::string& origin);

// The Markdown reference of maxtext_keys() (part of docs/config-workload.md's generated section).
std::string maxtext_arguments_markdown();

}  // namespace tpusim
