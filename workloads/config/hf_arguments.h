// Hugging Face TrainingArguments / Accelerate config names in a `kind: training` workload. A user
// pastes what they already write (`per_device_train_batch_size: 8`, `bf16: true`, `optim:
// adamw_torch`, Accelerate's `mixed_precision: bf16`, ...) and the loader rewrites it to tpusim's own
// keys before the schema parses the tree. One table (hf_keys()) classifies every TrainingArguments
// field (transformers 4.4x) and every Accelerate config-file key as
//   alias        rewritten to a tpusim key (the node keeps the file and line the user wrote),
//   ignored      accepted, no effect on simulated time, listed in report.json `workload.ignored_keys`,
//   unsupported  changes time in a way tpusim does not model: exit 2 when set to anything but its
//                "off" value (false, null, "", [], "no"), with the reason and a suggestion;
// and drives the rewrite, the docs table (docs/config-workload.md) and did-you-mean.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "config/tree.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

enum class HfKeyKind { Alias, Ignored, Unsupported };

struct HfKey {
  std::string name;    // as TrainingArguments / the Accelerate config file spell it
  HfKeyKind kind = HfKeyKind::Ignored;
  std::string target;  // Alias: the tpusim key(s) it writes ("per_device_batch_size")
  std::string rule;    // Alias: how the value maps; Ignored/Unsupported: why
  std::string origin;  // "Trainer", "Accelerate" or "Trainer, Accelerate"
};

// Every known name, in table order.
const std::vector<HfKey>& hf_keys();
const HfKey* find_hf_key(const std::string& name);

// What the rewrite did: the names it accepted without effect and, for every tpusim key an alias
// wrote, the name(s) the user wrote it as (errors found later name those).
struct HfRewrite {
  std::vector<std::string> ignored_keys;                     // sorted, as written ("fsdp_config.backward_prefetch")
  std::map<std::string, std::vector<std::string>> written_as;  // "per_device_batch_size" -> {"per_device_train_batch_size"}
};

// Rewrites the top level of a training workload's tree in place. `native_keys` are the training
// schema's keys: a key that is neither one of them nor in hf_keys() is an error whose did-you-mean
// searches both. Throws ConfigError (file, line, the key as written) for unsupported values and for
// an alias and a tpusim key (or two aliases) that say different things.
HfRewrite rewrite_hf_arguments(config::Node& root, const std::vector<std::string>& native_keys);

// `tpusim run --training-args FILE`: applies a TrainingArguments-style file (YAML or JSON, e.g.
// training_args.json or Accelerate's default_config.yaml) on top of the workload tree `root`: every
// setting the file makes replaces the workload's, however either spells it (an alias or the tpusim
// key). A value that is only a Trainer default meaning "off" (`bf16: false`, `fsdp: ""`, `max_steps:
// -1`, null) sets nothing, so it leaves the workload's setting. The rewrite itself runs afterwards.
void apply_training_args(config::Node& root, const config::Node& args, const std::vector<std::string>& native_keys);

// The Markdown reference of hf_keys() (part of docs/config-workload.md's generated section).
std::string hf_arguments_markdown();

// Accelerate `num_processes` against the slice: tpusim runs one process per device (workloads/
// framework.h). Throws ConfigError naming the key's file and line when they differ. Defined in
// hf_processes.cc (it needs the hardware model).
void check_num_processes(const HwConfig& hw, const WorkloadConfig& w);
// A kernel's chip and core exist in the slice (ConfigError naming the key where it was written).
void check_kernel_placement(const HwConfig& hw, const WorkloadConfig& w);

}  // namespace tpusim
