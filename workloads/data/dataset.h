// Datasets for the training driver: a multiset of per-example token lengths, where it comes from
// (a measured histogram in configs/datasets/*.json or a synthetic spec), and the seeded epoch order.
//
// Only lengths matter to the simulator: they decide padded shapes (B, S), hence FLOPs, bytes and the
// number of XLA compilations. Token ids are never modelled.
//
// Determinism: every random choice goes through SplitMix64 below, implemented here with integer
// arithmetic only, so an epoch order or a synthetic dataset is identical byte for byte on every
// platform and standard library (std::shuffle and std::*_distribution are implementation-defined).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/config_error.h"

namespace tpusim::data {

// ---- Portable randomness -------------------------------------------------------------------------

// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
// reference code by S. Vigna, prng.di.unimi.it/splitmix64.c). Passes BigCrush; 64-bit state.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n), unbiased (rejection of the top partial range). n must be > 0.
  uint64_t below(uint64_t n);
  // Uniform in [0, 1) with 53 random bits: exact in IEEE double, so portable.
  double unit();

 private:
  uint64_t state_;
};

// The SplitMix64 output function applied to x + golden ratio: a 64-bit bijective mixer.
uint64_t mix64(uint64_t x);

// Independent seeds from one run seed: mix64(mix64(mix64(run_seed) ^ stream) ^ index).
// Streams keep the epoch shuffles and synthetic datasets from sharing random numbers.
inline constexpr uint64_t kEpochStream = 0x65706f6368ULL;  // "epoch"
inline constexpr uint64_t kSynthStream = 0x73796e7468ULL;  // "synth"
inline constexpr uint64_t kTargetStream = 0x746172676574ULL;  // "target": pairing seq2seq targets with sources
uint64_t derive_seed(uint64_t run_seed, uint64_t stream, uint64_t index);

// ---- Datasets -------------------------------------------------------------------------------------

// A multiset of untruncated per-example token lengths (including [CLS]/[SEP]). Example i has length
// lengths()[i]; for a histogram the canonical order is ascending length, so example ids are stable.
class Dataset {
 public:
  Dataset() = default;
  // In memory (tests, drivers that build their own). Every length must be >= 1.
  Dataset(std::string name, std::vector<uint32_t> lengths);
  static Dataset from_histogram(std::string name, const std::map<uint32_t, uint64_t>& length_to_count);

  const std::string& name() const { return name_; }
  const std::vector<uint32_t>& lengths() const { return lengths_; }
  size_t size() const { return lengths_.size(); }
  bool empty() const { return lengths_.empty(); }
  uint64_t total_tokens() const { return total_tokens_; }
  double mean_length() const;  // 0 for an empty dataset
  uint32_t max_length() const { return max_length_; }
  std::map<uint32_t, uint64_t> histogram() const;

  // Sequence-to-sequence pairs (task seq2seq): example i's untruncated target length is
  // target_lengths()[i]; empty for a dataset of single sequences.
  const std::vector<uint32_t>& target_lengths() const { return target_lengths_; }
  bool has_targets() const { return !target_lengths_.empty(); }
  // This dataset as sources, each example paired with a target length drawn from `targets`
  // independently of its source length: a seeded permutation of the targets when both have the same
  // size (each target length used once), otherwise a seeded draw with replacement.
  Dataset with_targets(const Dataset& targets, uint64_t run_seed) const;

 private:
  std::string name_;
  std::vector<uint32_t> lengths_;
  std::vector<uint32_t> target_lengths_;
  uint64_t total_tokens_ = 0;
  uint32_t max_length_ = 0;
};

// A dataset reference as written in a workload config:
//   <key>                   a key of a length table, e.g. glue_mrpc/train/bert-base-cased
//   fixed:N[:COUNT]         COUNT examples of exactly N tokens
//   uniform:MIN-MAX[:COUNT] lengths uniform on the integers [MIN, MAX]
//   normal:MEAN,STD[:COUNT] lengths ~ normal(MEAN, STD), rounded, clipped to [1, clip_max_tokens]
//   PATH[#FIELD], file:PATH the user's own file of lengths (workloads/data/dataset_file.h says which
//                           references are paths and which formats are read)
//   images:COUNT            COUNT images (task image_classification): every example is one image of
//                           DatasetOptions::image_tokens tokens (the vision model's fixed sequence)
// A synthetic spec without COUNT is an endless stream; its count then comes from
// DatasetOptions::default_count (the driver passes steps x global batch).
struct DatasetRef {
  enum class Kind { kTable, kFixed, kUniform, kNormal, kFile, kImages };
  Kind kind = Kind::kTable;
  std::string text;                // as written
  std::string key;                 // kTable
  uint32_t length = 0;             // kFixed
  uint32_t min = 0, max = 0;       // kUniform, inclusive
  double mean = 0, stddev = 0;     // kNormal
  std::optional<uint64_t> count;   // synthetic kinds and kImages
  std::string path, field;         // kFile: the file, and the field or column named by #FIELD ("" = by name)
};

// Where a value came from (the workload file, its YAML path and line), for error messages.
struct ErrorWhere {
  std::string file = {};
  std::string yaml_path = {};
  int line = 0;

  ErrorWhere at(std::string_view field) const;  // yaml_path + "." + field
  ConfigError error(std::string value, std::string rule, std::string suggestion = {}) const;
};

// Syntax only; table keys are checked against the tables by load_dataset().
DatasetRef parse_dataset_ref(std::string_view text, const ErrorWhere& where = {});

// Largest example count of any dataset (the lengths are held in memory, 4 bytes per example).
inline constexpr uint64_t kMaxExamples = 100'000'000;

std::string default_datasets_dir();  // TPUSIM_SOURCE_DIR "/configs/datasets"

struct DatasetOptions {
  std::string datasets_dir = default_datasets_dir();  // every *.json in it is a length table
  uint64_t seed = 0;                                   // the run seed (synthetic kinds)
  std::optional<uint64_t> default_count = std::nullopt; // COUNT for a synthetic spec that omits it
  uint32_t clip_max_tokens = 512;                      // upper clip of normal: (BERT positions)
  uint32_t image_tokens = 0;  // tokens per image of an images: dataset (ViT: patches + [CLS]); 0: a text task
};

// Length tables: {"<key>": {"<length>": count, ...}, ...}; keys starting with '_' are comments.
// `origin` names the file in errors. Parsing is separate from file reading so that an embedded copy
// of a table can be used.
using LengthTables = std::map<std::string, std::map<uint32_t, uint64_t>>;
LengthTables parse_length_tables(const std::string& json_text, const std::string& origin);
// All tables of every *.json in `dir` (sorted by file name); a key defined twice is an error.
LengthTables load_length_tables(const std::string& dir);
std::vector<std::string> known_dataset_keys(const std::string& dir);

Dataset load_dataset(std::string_view ref, const DatasetOptions& options = {}, const ErrorWhere& where = {});
Dataset load_dataset(const DatasetRef& ref, const DatasetOptions& options = {}, const ErrorWhere& where = {});
// Same, against tables already in memory (no file access).
Dataset load_dataset(const DatasetRef& ref, const LengthTables& tables, const DatasetOptions& options,
                     const ErrorWhere& where = {});

// ---- Epoch order ----------------------------------------------------------------------------------

// A permutation of [0, n): Fisher-Yates driven by SplitMix64(derive_seed(run_seed, kEpochStream, epoch)).
// Like Accelerate's SeedableRandomSampler (seed + epoch), every process computes the same order; the
// values differ from torch.randperm's, which the simulator has no reason to reproduce.
std::vector<uint32_t> epoch_order(size_t n, uint64_t run_seed, uint64_t epoch);
// Evaluation (and shuffle=False) order: 0, 1, ..., n-1.
std::vector<uint32_t> sequential_order(size_t n);

}  // namespace tpusim::data
