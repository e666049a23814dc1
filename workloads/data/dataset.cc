#include "workloads/data/dataset.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/suggest.h"
#include "workloads/data/dataset_file.h"

namespace tpusim::data {

// ---- Portable randomness -------------------------------------------------------------------------

namespace {
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio, SplitMix64's increment

uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace

uint64_t SplitMix64::next() { return finalize(state_ += kGolden); }

uint64_t SplitMix64::below(uint64_t n) {
  // Reject the lowest (2^64 mod n) values so that every residue is equally likely.
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    const uint64_t r = next();
    if (r >= threshold) return r % n;
  }
}

double SplitMix64::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t mix64(uint64_t x) { return finalize(x + kGolden); }

uint64_t derive_seed(uint64_t run_seed, uint64_t stream, uint64_t index) {
  return mix64(mix64(mix64(run_seed) ^ stream) ^ index);
}

// ---- Dataset --------------------------------------------------------------------------------------

Dataset::Dataset(std::string name, std::vector<uint32_t> lengths) : name_(std::move(name)), lengths_(std::move(lengths)) {
  if (lengths_.size() > kMaxExamples) {
    throw ErrorWhere{}.error(name_, "has " + std::to_string(lengths_.size()) + " examples; at most " +
                                          std::to_string(kMaxExamples) + " are supported");
  }
  for (uint32_t len : lengths_) {
    if (len == 0) throw ErrorWhere{}.error(name_, "every example must have a length >= 1 token");
    total_tokens_ += len;
    max_length_ = std::max(max_length_, len);
  }
}

Dataset Dataset::with_targets(const Dataset& targets, uint64_t run_seed) const {
  if (targets.empty() || empty()) throw ErrorWhere{}.error(targets.name(), "a source/target pair needs examples on both sides");
  Dataset d = *this;
  d.name_ = name_ + " -> " + targets.name();
  d.target_lengths_.resize(size());
  if (targets.size() == size()) {
    const std::vector<uint32_t> perm = epoch_order(size(), run_seed ^ kTargetStream, 0);
    for (size_t i = 0; i < size(); ++i) d.target_lengths_[i] = targets.lengths()[perm[i]];
  } else {
    SplitMix64 rng(derive_seed(run_seed, kTargetStream, 0));
    for (size_t i = 0; i < size(); ++i) d.target_lengths_[i] = targets.lengths()[rng.below(targets.size())];
  }
  return d;
}

Dataset Dataset::from_histogram(std::string name, const std::map<uint32_t, uint64_t>& length_to_count) {
  uint64_t total = 0;
  for (const auto& [len, count] : length_to_count) total += count;
  if (total > kMaxExamples) {
    throw ErrorWhere{}.error(name, "has " + std::to_string(total) + " examples; at most " +
                                         std::to_string(kMaxExamples) + " are supported");
  }
  std::vector<uint32_t> lengths;
  lengths.reserve(total);
  for (const auto& [len, count] : length_to_count) lengths.insert(lengths.end(), count, len);  // ascending
  return Dataset(std::move(name), std::move(lengths));
}

double Dataset::mean_length() const {
  return lengths_.empty() ? 0.0 : static_cast<double>(total_tokens_) / static_cast<double>(lengths_.size());
}

std::map<uint32_t, uint64_t> Dataset::histogram() const {
  std::map<uint32_t, uint64_t> h;
  for (uint32_t len : lengths_) ++h[len];
  return h;
}

// ---- Reference syntax -----------------------------------------------------------------------------

namespace {

const char* const kSyntheticForms = "fixed:N[:COUNT], uniform:MIN-MAX[:COUNT], normal:MEAN,STD[:COUNT]";

[[noreturn]] void fail(const ErrorWhere& where, std::string_view value, std::string rule, std::string suggestion = {}) {
  throw where.error(std::string(value), std::move(rule), std::move(suggestion));
}

// Strict decimal: digits only (no sign, space or suffix), must fit in T.
template <class T>
std::optional<T> parse_uint(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  T v{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_real(std::string_view s) {
  if (s.empty() || s.front() == '+' || s.front() == ' ') return std::nullopt;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "body[:COUNT]" -> body, and COUNT checked into ref.count.
std::string_view split_count(std::string_view rest, DatasetRef& ref, const std::string& form, const ErrorWhere& where) {
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return rest;
  const std::string_view count_text = rest.substr(colon + 1);
  const auto count = parse_uint<uint64_t>(count_text);
  if (!count || *count == 0 || *count > kMaxExamples) {
    fail(where, ref.text,
         "must be " + form + ": COUNT '" + std::string(count_text) + "' is not an integer in [1, " +
             std::to_string(kMaxExamples) + "]");
  }
  ref.count = *count;
  return rest.substr(0, colon);
}

uint32_t parse_length(std::string_view s, const DatasetRef& ref, const std::string& form, const char* what,
                      const ErrorWhere& where) {
  const auto v = parse_uint<uint32_t>(s);
  if (!v || *v == 0) {
    fail(where, ref.text, "must be " + form + ": " + what + " '" + std::string(s) + "' is not an integer token count in [1, 4294967295]");
  }
  return *v;
}

}  // namespace

DatasetRef parse_dataset_ref(std::string_view text, const ErrorWhere& where) {
  DatasetRef ref;
  ref.text = std::string(text);
  if (text.empty()) fail(where, text, "is empty: a dataset reference is a length-table key, a file of lengths or one of " + std::string(kSyntheticForms));
  if (is_file_ref(text)) {
    ref.kind = DatasetRef::Kind::kFile;
    const LengthFileRef f = split_file_ref(text);
    ref.path = f.path;
    ref.field = f.field;
    if (ref.path.empty()) fail(where, text, "names no file", "write file:PATH, or a path ending in .json, .jsonl, .txt or .csv");
    return ref;
  }

  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    ref.kind = DatasetRef::Kind::kTable;
    ref.key = ref.text;
    return ref;
  }
  const std::string kind(text.substr(0, colon));
  const std::string_view rest = text.substr(colon + 1);
  if (kind == "images") {
    ref.kind = DatasetRef::Kind::kImages;
    const auto n = parse_uint<uint64_t>(rest);
    if (!n || *n == 0 || *n > kMaxExamples)
      fail(where, text, "must be images:COUNT with COUNT an integer in [1, " + std::to_string(kMaxExamples) + "] (images)",
           "e.g. images:50000");
    ref.count = *n;
  } else if (kind == "fixed") {
    const std::string form = "fixed:N[:COUNT]";
    ref.kind = DatasetRef::Kind::kFixed;
    ref.length = parse_length(split_count(rest, ref, form, where), ref, form, "N", where);
  } else if (kind == "uniform") {
    const std::string form = "uniform:MIN-MAX[:COUNT]";
    ref.kind = DatasetRef::Kind::kUniform;
    const std::string_view range = split_count(rest, ref, form, where);
    const size_t dash = range.find('-');
    if (dash == std::string_view::npos) fail(where, text, "must be " + form + ": the range needs a '-' (e.g. uniform:16-128:1000)");
    ref.min = parse_length(range.substr(0, dash), ref, form, "MIN", where);
    ref.max = parse_length(range.substr(dash + 1), ref, form, "MAX", where);
    if (ref.min > ref.max) fail(where, text, "must be " + form + " with MIN <= MAX");
  } else if (kind == "normal") {
    const std::string form = "normal:MEAN,STD[:COUNT]";
    ref.kind = DatasetRef::Kind::kNormal;
    const std::string_view params = split_count(rest, ref, form, where);
    const size_t comma = params.find(',');
    if (comma == std::string_view::npos) fail(where, text, "must be " + form + ": MEAN and STD are separated by ',' (e.g. normal:55,15:3668)");
    const auto mean = parse_real(params.substr(0, comma));
    const auto sd = parse_real(params.substr(comma + 1));
    if (!mean || *mean <= 0) fail(where, text, "must be " + form + ": MEAN must be a number > 0 (tokens)");
    if (!sd || *sd < 0) fail(where, text, "must be " + form + ": STD must be a number >= 0 (tokens)");
    ref.mean = *mean;
    ref.stddev = *sd;
  } else {
    const std::vector<std::string> kinds = {"fixed", "uniform", "normal", "images"};
    fail(where, text, "has an unknown synthetic kind '" + kind + "'", config::suggest(kind, kinds, "known kinds") + " (forms: " + kSyntheticForms + ")");
  }
  return ref;
}

// ---- Length tables --------------------------------------------------------------------------------

ErrorWhere ErrorWhere::at(std::string_view field) const {
  ErrorWhere w = *this;
  if (!w.yaml_path.empty()) w.yaml_path += '.';
  w.yaml_path += field;
  return w;
}

ConfigError ErrorWhere::error(std::string value, std::string rule, std::string suggestion) const {
  return ConfigError({file, yaml_path, line, std::move(value), std::move(rule), std::move(suggestion)});
}

std::string default_datasets_dir() { return std::string(TPUSIM_SOURCE_DIR) + "/configs/datasets"; }

LengthTables parse_length_tables(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError({origin, "", 0, "", std::string("is not valid JSON: ") + e.what(), ""});
  }
  if (!doc.is_object()) throw ConfigError({origin, "", 0, "", "must be a JSON object {\"<dataset key>\": {\"<length>\": count}}", ""});
  LengthTables tables;
  for (const auto& [key, hist] : doc.items()) {
    if (!key.empty() && key.front() == '_') continue;  // "_about" and other comments
    if (key.empty() || key.find(':') != std::string::npos) {
      throw ConfigError({origin, "", 0, key, "is not a valid dataset key (non-empty, no ':', which marks synthetic specs)", ""});
    }
    if (!hist.is_object()) throw ConfigError({origin, key, 0, "", "must be an object {\"<length>\": count}", ""});
    auto& table = tables[key];
    uint64_t examples = 0;
    for (const auto& [len_text, count] : hist.items()) {
      const auto len = parse_uint<uint32_t>(len_text);
      if (!len || *len == 0) {
        throw ConfigError({origin, key, 0, len_text, "length keys must be integers >= 1 (tokens)", ""});
      }
      if (!count.is_number_unsigned()) {
        throw ConfigError({origin, key + "." + len_text, 0, count.dump(), "must be a non-negative integer count of examples", ""});
      }
      const uint64_t c = count.get<uint64_t>();
      if (c > kMaxExamples || examples + c > kMaxExamples) {
        throw ConfigError({origin, key, 0, "", "has more than " + std::to_string(kMaxExamples) + " examples", ""});
      }
      examples += c;
      if (c > 0) table[*len] = c;
    }
    if (examples == 0) throw ConfigError({origin, key, 0, "", "has no examples", ""});
  }
  return tables;
}

LengthTables load_length_tables(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw ConfigError({dir, "", 0, "", "datasets directory not found",
                       "length tables ship in configs/datasets/ of the source tree (DatasetOptions::datasets_dir)"});
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // directory order is unspecified; make "defined twice" stable
  LengthTables all;
  std::map<std::string, std::string> defined_in;
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) throw ConfigError({f.string(), "", 0, "", "cannot be read", ""});
    std::stringstream ss;
    ss << in.rdbuf();
    for (auto& [key, table] : parse_length_tables(ss.str(), f.string())) {
      if (auto it = defined_in.find(key); it != defined_in.end()) {
        throw ConfigError({f.string(), "", 0, key, "is also defined in " + it->second, ""});
      }
      defined_in[key] = f.string();
      all[key] = std::move(table);
    }
  }
  return all;
}

std::vector<std::string> known_dataset_keys(const std::string& dir) {
  std::vector<std::string> keys;
  for (const auto& [key, table] : load_length_tables(dir)) keys.push_back(key);
  return keys;
}

// ---- Loading --------------------------------------------------------------------------------------

namespace {

uint64_t synthetic_count(const DatasetRef& ref, const DatasetOptions& options, const ErrorWhere& where) {
  if (ref.count) return *ref.count;
  if (!options.default_count) {
    fail(where, ref.text, "is an endless stream without an example count",
         "append ':COUNT' (e.g. '" + ref.text + ":1000'), or let the driver size it from its steps");
  }
  if (*options.default_count == 0 || *options.default_count > kMaxExamples) {
    fail(where, ref.text, "needs an example count in [1, " + std::to_string(kMaxExamples) + "], the driver gave " +
                              std::to_string(*options.default_count));
  }
  return *options.default_count;
}

}  // namespace

Dataset load_dataset(const DatasetRef& ref, const LengthTables& tables, const DatasetOptions& options, const ErrorWhere& where) {
  using Kind = DatasetRef::Kind;
  if (ref.kind == Kind::kTable) {
    const auto it = tables.find(ref.key);
    if (it == tables.end()) {
      std::vector<std::string> keys;
      for (const auto& [k, t] : tables) keys.push_back(k);
      std::string suggestion;
      if (auto c = config::closest(ref.key, keys)) suggestion = "did you mean '" + *c + "'? ";
      suggestion += "known datasets: " + config::join(keys) + "; or a synthetic spec: " + kSyntheticForms;
      fail(where, ref.text, "is not a known dataset (keys of the length tables in " + options.datasets_dir + ")", suggestion);
    }
    return Dataset::from_histogram(ref.key, it->second);
  }
  if (ref.kind == Kind::kFile) return Dataset(ref.text, read_length_file({ref.path, ref.field}, where));

  if (ref.kind == Kind::kImages) {
    if (options.image_tokens == 0)
      fail(where, ref.text, "is an image dataset: it applies to task image_classification only",
           "use a text dataset (a length-table key, fixed:, uniform:, normal: or a file), or task: image_classification");
    return Dataset(ref.text, std::vector<uint32_t>(size_t(*ref.count), options.image_tokens));
  }
  const uint64_t n = synthetic_count(ref, options, where);
  std::vector<uint32_t> lengths(n);
  SplitMix64 rng(derive_seed(options.seed, kSynthStream, 0));
  switch (ref.kind) {
    case Kind::kFixed:
      std::fill(lengths.begin(), lengths.end(), ref.length);
      break;
    case Kind::kUniform:
      for (auto& len : lengths) len = ref.min + static_cast<uint32_t>(rng.below(uint64_t{ref.max} - ref.min + 1));
      break;
    case Kind::kNormal: {
      // Irwin-Hall: the sum of 12 U[0,1) minus 6 has mean 0 and variance 1 and is close to normal
      // (tails cut at +-6 sigma). It needs only IEEE additions, unlike Box-Muller's log/cos whose
      // last bits vary between libms, so the lengths are identical on every platform.
      const double hi = std::max<uint32_t>(options.clip_max_tokens, 1);
      for (auto& len : lengths) {
        double z = -6.0;
        for (int k = 0; k < 12; ++k) z += rng.unit();
        const double x = std::floor(ref.mean + ref.stddev * z + 0.5);
        len = static_cast<uint32_t>(std::clamp(x, 1.0, hi));
      }
      break;
    }
    case Kind::kTable:
    case Kind::kFile:
    case Kind::kImages:
      break;
  }
  return Dataset(ref.text, std::move(lengths));
}

Dataset load_dataset(const DatasetRef& ref, const DatasetOptions& options, const ErrorWhere& where) {
  if (ref.kind != DatasetRef::Kind::kTable) return load_dataset(ref, LengthTables{}, options, where);  // no tables needed
  return load_dataset(ref, load_length_tables(options.datasets_dir), options, where);
}

Dataset load_dataset(std::string_view ref, const DatasetOptions& options, const ErrorWhere& where) {
  return load_dataset(parse_dataset_ref(ref, where), options, where);
}

// ---- Epoch order ----------------------------------------------------------------------------------

std::vector<uint32_t> sequential_order(size_t n) {
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  return order;
}

std::vector<uint32_t> epoch_order(size_t n, uint64_t run_seed, uint64_t epoch) {
  std::vector<uint32_t> order = sequential_order(n);
  SplitMix64 rng(derive_seed(run_seed, kEpochStream, epoch));
  // Fisher-Yates (Knuth's Algorithm P), highest index first.
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

}  // namespace tpusim::data
