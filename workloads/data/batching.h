// Batches as a Hugging Face Accelerate + PyTorch/XLA run forms them: truncation and padding of each
// batch (DataCollatorWithPadding / tokenizer padding), and sharding of the epoch across processes
// (Accelerate's BatchSamplerShard), with gradient accumulation and evaluation.
//
// Everything here is a pure function of (dataset, order, options): no randomness beyond the epoch
// order passed in (data::epoch_order), no I/O.
//
// Sharding, in one paragraph (derivation in batching.cc): a global batch is G consecutive examples of
// the epoch order, G = num_processes x b, where b is the per-process batch (batch_size, or
// batch_size / num_processes under split_batches). Process p takes the p-th contiguous slice of b.
// The last, incomplete global batch is dropped (drop_last), completed with examples from the start of
// the epoch (even_batches; gather_for_metrics later drops them), or left short (neither), in which
// case the last processes get fewer or no examples.
#pragma once
#include <compare>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/data/dataset.h"

namespace tpusim::data {

// ---- Padding --------------------------------------------------------------------------------------

struct PaddingSpec {
  enum class Kind {
    kMaxLength,   // padding="max_length": every batch is (B, max_length)
    kLongest,     // padding="longest" / DataCollatorWithPadding: S = longest example in the batch
    kMultipleOf,  // pad_to_multiple_of=M: S = longest rounded up to a multiple of M, capped at max_length
  };
  Kind kind = Kind::kMaxLength;
  uint32_t multiple = 0;  // kMultipleOf only

  static PaddingSpec max_length() { return {Kind::kMaxLength, 0}; }
  static PaddingSpec longest() { return {Kind::kLongest, 0}; }
  static PaddingSpec multiple_of(uint32_t m) { return {Kind::kMultipleOf, m}; }
  std::string to_string() const;  // "max_length" | "longest" | "multiple_of:M"
  bool operator==(const PaddingSpec&) const = default;
};

// "max_length" | "longest" | "multiple_of:M" (M >= 1). The YAML form {multiple_of: M} is mapped to
// this by the workload config loader.
PaddingSpec parse_padding(std::string_view text, const ErrorWhere& where = {});
// The workload schema reads `padding:` straight into a PaddingSpec (config/schema.h, TextValue).
inline void parse_config_text(std::string_view text, PaddingSpec& out, const ConfigErrorInfo& at) {
  out = parse_padding(text, {at.file, at.yaml_path, at.line});
}
inline std::string config_text(const PaddingSpec& p) { return p.to_string(); }

// Padded length S of a batch whose examples have the given (already truncated) lengths; 0 for an
// empty batch (a process without a batch at that step).
uint32_t padded_length(const std::vector<uint32_t>& truncated_lengths, const PaddingSpec& padding, uint32_t max_length);

// ---- Loader options ------------------------------------------------------------------------------

struct LoaderOptions {
  uint32_t num_processes = 1;   // one per TPU device: 8 on a v3-8 (a core each), 4 on a v4-8 (a chip each)
  // DataLoader batch_size as the user writes it: per process (split_batches=false, Trainer's
  // per_device_train_batch_size) or global (split_batches=true; must divide by num_processes).
  uint32_t batch_size = 0;
  bool split_batches = false;   // Accelerator(split_batches=...)
  bool even_batches = true;     // Accelerator(even_batches=...), Accelerate's default
  bool drop_last = false;       // DataLoader(drop_last=...), Trainer's dataloader_drop_last
  uint32_t gradient_accumulation_steps = 1;
  uint32_t max_length = 128;    // tokenizer truncation length, tokens
  // Task seq2seq: the targets' truncation length (run_summarization's max_target_length); the same
  // padding rule applies to the targets. 0: single sequences.
  uint32_t max_target_length = 0;
  PaddingSpec padding;

  uint32_t per_process_batch() const { return split_batches ? batch_size / num_processes : batch_size; }
  uint64_t global_batch() const { return uint64_t{per_process_batch()} * num_processes; }
};

// ConfigError for: num_processes, batch_size, gradient_accumulation_steps or max_length of 0;
// split_batches with batch_size not a multiple of num_processes; multiple_of 0. yaml_path is
// where.yaml_path + "." + the field name above.
void validate(const LoaderOptions& options, const ErrorWhere& where = {});

// ---- Plans ----------------------------------------------------------------------------------------

// One process's batch at one step. batch_size 0: the process has no batch at this step (possible only
// with even_batches=false, drop_last=false).
struct ProcessBatch {
  uint32_t batch_size = 0;       // B
  uint32_t padded_length = 0;    // S
  uint64_t real_tokens = 0;      // sum of truncated lengths
  uint64_t padded_tokens = 0;    // B*S - real_tokens
  uint32_t duplicates = 0;       // even_batches fill examples (gather_for_metrics drops them)
  std::vector<uint32_t> examples;  // dataset indices, in batch order
  std::vector<uint32_t> lengths;   // truncated lengths of those examples
  // Task seq2seq (the dataset has targets): the padded target length T and the truncated target
  // lengths; 0 and empty otherwise. real_tokens and padded_tokens count the sources.
  uint32_t target_padded_length = 0;
  std::vector<uint32_t> target_lengths;
};

struct Step {
  uint64_t index = 0;  // micro-step within the epoch, from 0
  // Gradients are all-reduced and the optimizer steps after this micro-step: the last of each group of
  // gradient_accumulation_steps, and the last micro-step of the epoch (Accelerate's GradientState
  // syncs at end_of_dataloader). Always false in evaluation.
  bool sync = false;
  std::vector<ProcessBatch> processes;  // num_processes entries
};

struct EpochPlan {
  LoaderOptions options;
  bool training = true;
  std::vector<Step> steps;
  uint64_t examples = 0;         // dataset examples (= order size)
  uint64_t consumed = 0;         // distinct examples that were in some batch
  uint64_t dropped = 0;          // examples dropped by drop_last
  uint64_t duplicates = 0;       // even_batches fill examples
  uint64_t optimizer_steps = 0;  // sync steps
  uint64_t real_tokens = 0;      // summed over every process batch (fill examples included)
  uint64_t padded_tokens = 0;
  bool uneven_last_step = false; // some process got a short or empty last batch

  uint64_t total_tokens() const { return real_tokens + padded_tokens; }
};

// Shards `order` (indices into `dataset`) under `options`. `training` selects sync flags.
EpochPlan plan_epoch(const Dataset& dataset, const std::vector<uint32_t>& order, const LoaderOptions& options,
                     bool training = true, const ErrorWhere& where = {});
// A training epoch: order = epoch_order(dataset.size(), run_seed, epoch).
EpochPlan plan_train_epoch(const Dataset& dataset, const LoaderOptions& options, uint64_t run_seed, uint64_t epoch,
                           const ErrorWhere& where = {});
// Evaluation: sequential order, batch_size = eval_batch_size (same convention as batch_size),
// drop_last=false, no gradient accumulation; num_processes, split_batches, even_batches, max_length and
// padding as in `train` (Accelerate pads the eval loader with the same even_batches rule).
EpochPlan plan_eval(const Dataset& dataset, const LoaderOptions& train, uint32_t eval_batch_size,
                    const ErrorWhere& where = {});

// Closed-form counts for an epoch of n examples, without building the plan (the plan agrees).
struct EpochCounts {
  uint64_t steps = 0;
  uint64_t dropped = 0;
  uint64_t duplicates = 0;
  uint64_t optimizer_steps = 0;
  std::vector<uint32_t> last_step_batch_sizes;  // B of each process at the last step (empty if no steps)
};
EpochCounts count_epoch(uint64_t n, const LoaderOptions& options, bool training = true);

// ---- Summaries -----------------------------------------------------------------------------------

// A padded input shape; every distinct one is a separate XLA compilation (per process).
struct Shape {
  uint32_t batch = 0;  // B
  uint32_t seq = 0;    // S
  auto operator<=>(const Shape&) const = default;
};

// Distinct (B, S) that `process` executes over the plan (steps where it has no batch are skipped).
std::set<Shape> distinct_shapes(const EpochPlan& plan, uint32_t process);
// Union over all processes.
std::set<Shape> distinct_shapes(const EpochPlan& plan);
// Distinct S values over all processes.
std::set<uint32_t> distinct_padded_lengths(const EpochPlan& plan);
// padded_tokens / (real_tokens + padded_tokens); 0 for an empty plan.
double padding_waste(const EpochPlan& plan);

}  // namespace tpusim::data
