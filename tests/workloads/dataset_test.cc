// Datasets: portable PRNG, length tables, synthetic specs, epoch order, and every error path.
#include "workloads/data/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace tpusim::data {
namespace {

template <class F>
ConfigErrorInfo error_of(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const ConfigError& e) {
    if (what) *what = e.what();
    return e.info();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kMrpc = "glue_mrpc/train/bert-base-cased";

// ---- PRNG ----

TEST(SplitMix64, MatchesReferenceVector) {
  // First outputs of Vigna's splitmix64.c (and Java's SplittableRandom) seeded with 1234567.
  SplitMix64 rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ULL);
  EXPECT_EQ(rng.next(), 3203168211198807973ULL);
  EXPECT_EQ(rng.next(), 9817491932198370423ULL);
  EXPECT_EQ(rng.next(), 4593380528125082431ULL);
  EXPECT_EQ(rng.next(), 16408922859458223821ULL);
}

TEST(SplitMix64, BelowAndUnitStayInRange) {
  SplitMix64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_LT(rng.below(3), 3u);
    const double u = rng.unit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
  EXPECT_EQ(rng.below(1), 0u);
}

// ---- Epoch order ----

TEST(EpochOrder, GoldenIsPortable) {
  // Pinned values (also produced by an independent Python re-implementation of SplitMix64 +
  // derive_seed + Fisher-Yates): any change here changes every simulated run.
  EXPECT_EQ(epoch_order(10, 42, 0), (std::vector<uint32_t>{6, 4, 2, 5, 8, 7, 3, 1, 0, 9}));
  EXPECT_EQ(epoch_order(10, 42, 1), (std::vector<uint32_t>{5, 1, 2, 3, 9, 7, 4, 0, 6, 8}));
  EXPECT_EQ(epoch_order(10, 43, 0), (std::vector<uint32_t>{3, 2, 4, 7, 6, 5, 9, 0, 8, 1}));
}

TEST(EpochOrder, DeterministicPermutationVaryingWithSeedAndEpoch) {
  const auto a = epoch_order(3668, 42, 0);
  EXPECT_EQ(a, epoch_order(3668, 42, 0));
  EXPECT_NE(a, epoch_order(3668, 43, 0));
  EXPECT_NE(a, epoch_order(3668, 42, 1));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, sequential_order(3668));
  EXPECT_NE(a, sequential_order(3668));
  EXPECT_TRUE(epoch_order(0, 1, 0).empty());
  EXPECT_EQ(epoch_order(1, 1, 0), (std::vector<uint32_t>{0}));
}

// ---- Length tables ----

TEST(LengthTables, ShippedTablesMatchTheirReadme) {
  struct Row {
    const char* key;
    size_t examples;
    double mean;
    uint32_t max;
  };
  // configs/datasets/README.md
  const Row rows[] = {
      {"glue_mrpc/train/bert-base-cased", 3668, 54.7, 111},      {"glue_mrpc/train/bert-base-uncased", 3668, 53.2, 103},
      {"glue_mrpc/validation/bert-base-cased", 408, 54.8, 88},   {"glue_mrpc/validation/bert-base-uncased", 408, 53.2, 86},
      {"glue_sst2/train/bert-base-cased", 67349, 14.0, 72},      {"glue_sst2/train/bert-base-uncased", 67349, 13.3, 66},
      {"glue_sst2/validation/bert-base-cased", 872, 26.4, 61},   {"glue_sst2/validation/bert-base-uncased", 872, 25.2, 55},
  };
  EXPECT_EQ(known_dataset_keys(default_datasets_dir()).size(), std::size(rows));
  for (const Row& r : rows) {
    SCOPED_TRACE(r.key);
    const Dataset d = load_dataset(r.key);
    EXPECT_EQ(d.name(), r.key);
    EXPECT_EQ(d.size(), r.examples);
    EXPECT_NEAR(d.mean_length(), r.mean, 0.05);
    EXPECT_EQ(d.max_length(), r.max);
  }
}

TEST(LengthTables, HistogramRoundTripsInAscendingOrder) {
  const Dataset d = load_dataset(kMrpc);
  EXPECT_TRUE(std::is_sorted(d.lengths().begin(), d.lengths().end()));
  EXPECT_EQ(Dataset::from_histogram("x", d.histogram()).lengths(), d.lengths());
  EXPECT_EQ(d.total_tokens(), std::accumulate(d.lengths().begin(), d.lengths().end(), uint64_t{0}));
}

TEST(LengthTables, InMemoryTablesAndDirectories) {
  const LengthTables t = parse_length_tables(R"({"_about": "x", "toy/train": {"3": 2, "5": 1, "9": 0}})", "toy.json");
  ASSERT_EQ(t.size(), 1u);
  const Dataset d = load_dataset(parse_dataset_ref("toy/train"), t, {});
  EXPECT_EQ(d.lengths(), (std::vector<uint32_t>{3, 3, 5}));
  EXPECT_NEAR(d.mean_length(), 11.0 / 3, 1e-12);

  // Every *.json of the directory is a table file; a key defined twice is an error naming both files.
  const auto dir = std::filesystem::temp_directory_path() / "tpusim_dataset_test_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.json") << R"({"toy/a": {"4": 1}})";
  std::ofstream(dir / "notes.txt") << "not a table";
  EXPECT_EQ(load_dataset("toy/a", {.datasets_dir = dir.string()}).lengths(), (std::vector<uint32_t>{4}));
  std::ofstream(dir / "b.json") << R"({"toy/a": {"5": 1}})";
  std::string what;
  const auto e = error_of([&] { load_length_tables(dir.string()); }, &what);
  EXPECT_EQ(e.value, "toy/a");
  EXPECT_TRUE(contains(e.file, "b.json")) << what;
  EXPECT_TRUE(contains(e.rule, "a.json")) << what;
  std::filesystem::remove_all(dir);
}

TEST(LengthTables, MalformedFilesAreConfigErrors) {
  EXPECT_TRUE(contains(error_of([] { parse_length_tables("{not json", "t.json"); }).rule, "not valid JSON"));
  EXPECT_EQ(error_of([] { parse_length_tables("[1,2]", "t.json"); }).file, "t.json");
  EXPECT_EQ(error_of([] { parse_length_tables(R"({"k": 3})", "t.json"); }).yaml_path, "k");
  EXPECT_EQ(error_of([] { parse_length_tables(R"({"k": {"x": 3}})", "t.json"); }).value, "x");
  EXPECT_EQ(error_of([] { parse_length_tables(R"({"k": {"0": 3}})", "t.json"); }).value, "0");
  EXPECT_EQ(error_of([] { parse_length_tables(R"({"k": {"4": -3}})", "t.json"); }).yaml_path, "k.4");
  EXPECT_EQ(error_of([] { parse_length_tables(R"({"k": {"4": 1.5}})", "t.json"); }).yaml_path, "k.4");
  EXPECT_TRUE(contains(error_of([] { parse_length_tables(R"({"k": {"4": 0}})", "t.json"); }).rule, "no examples"));
  EXPECT_EQ(error_of([] { parse_length_tables(R"({"fixed:3": {"4": 1}})", "t.json"); }).value, "fixed:3");
  EXPECT_TRUE(contains(error_of([] { load_length_tables("/nonexistent/tpusim"); }).rule, "not found"));
}

// ---- References ----

TEST(DatasetRef, UnknownKeySuggestsTheClosestAndListsAll) {
  const ErrorWhere where{.file = "configs/workloads/bert.yaml", .yaml_path = "train.dataset", .line = 7};
  std::string what;
  const auto e = error_of([&] { load_dataset("glue_mrpc/train/bert-base-case", {}, where); }, &what);
  EXPECT_EQ(e.file, "configs/workloads/bert.yaml");
  EXPECT_EQ(e.yaml_path, "train.dataset");
  EXPECT_EQ(e.line, 7);
  EXPECT_EQ(e.value, "glue_mrpc/train/bert-base-case");
  EXPECT_TRUE(contains(e.suggestion, "did you mean 'glue_mrpc/train/bert-base-cased'?")) << what;
  EXPECT_TRUE(contains(e.suggestion, "glue_sst2/validation/bert-base-uncased")) << what;
  EXPECT_TRUE(contains(e.suggestion, "fixed:N[:COUNT]")) << what;

  const auto far = error_of([] { load_dataset("imdb"); });
  EXPECT_FALSE(contains(far.suggestion, "did you mean"));
  EXPECT_TRUE(contains(far.suggestion, "known datasets: glue_mrpc/train/bert-base-cased"));
}

TEST(DatasetRef, Fixed) {
  const DatasetRef r = parse_dataset_ref("fixed:128:100");
  EXPECT_EQ(r.kind, DatasetRef::Kind::kFixed);
  EXPECT_EQ(r.length, 128u);
  EXPECT_EQ(r.count, 100u);
  const Dataset d = load_dataset(r);
  EXPECT_EQ(d.size(), 100u);
  EXPECT_EQ(d.max_length(), 128u);
  EXPECT_EQ(d.mean_length(), 128.0);

  // Without COUNT it is an endless stream: the driver sizes it, or it is an error.
  EXPECT_FALSE(parse_dataset_ref("fixed:128").count);
  const auto e = error_of([] { load_dataset("fixed:128"); });
  EXPECT_TRUE(contains(e.rule, "endless"));
  EXPECT_TRUE(contains(e.suggestion, "fixed:128:1000"));
  EXPECT_EQ(load_dataset("fixed:128", {.default_count = 64}).size(), 64u);
  EXPECT_EQ(load_dataset("fixed:128:10", {.default_count = 64}).size(), 10u);  // explicit COUNT wins
  EXPECT_TRUE(contains(error_of([] { load_dataset("fixed:128", {.default_count = 0}); }).rule, "count"));
}

TEST(DatasetRef, UniformIsSeededAndInRange) {
  const Dataset a = load_dataset("uniform:16-64:2000", {.seed = 1});
  EXPECT_EQ(a.size(), 2000u);
  const auto [lo, hi] = std::minmax_element(a.lengths().begin(), a.lengths().end());
  EXPECT_EQ(*lo, 16u);  // 2000 draws over 49 values hit both ends
  EXPECT_EQ(*hi, 64u);
  EXPECT_NEAR(a.mean_length(), 40.0, 1.0);
  EXPECT_EQ(a.lengths(), load_dataset("uniform:16-64:2000", {.seed = 1}).lengths());
  EXPECT_NE(a.lengths(), load_dataset("uniform:16-64:2000", {.seed = 2}).lengths());
  EXPECT_EQ(load_dataset("uniform:7-7:3").lengths(), (std::vector<uint32_t>{7, 7, 7}));
}

TEST(DatasetRef, NormalIsSeededRoundedAndClipped) {
  const Dataset a = load_dataset("normal:55,15:20000", {.seed = 3});
  double var = 0;
  for (uint32_t len : a.lengths()) var += (len - a.mean_length()) * (len - a.mean_length());
  EXPECT_NEAR(a.mean_length(), 55.0, 0.5);
  EXPECT_NEAR(std::sqrt(var / a.size()), 15.0, 0.5);
  EXPECT_EQ(a.lengths(), load_dataset("normal:55,15:20000", {.seed = 3}).lengths());
  EXPECT_NE(a.lengths(), load_dataset("normal:55,15:20000", {.seed = 4}).lengths());

  const Dataset c = load_dataset("normal:10,100:1000", {.clip_max_tokens = 64});
  EXPECT_EQ(*std::min_element(c.lengths().begin(), c.lengths().end()), 1u);
  EXPECT_EQ(c.max_length(), 64u);
  EXPECT_EQ(load_dataset("normal:12.4,0:2").lengths(), (std::vector<uint32_t>{12, 12}));
}

TEST(DatasetRef, MalformedSpecsAreConfigErrors) {
  const ErrorWhere where{.file = "w.yaml", .yaml_path = "train.dataset", .line = 3};
  const char* bad[] = {"",
                       "fixed:",
                       "fixed:0",
                       "fixed:abc",
                       "fixed:12x",
                       "fixed:-5",
                       "fixed:+5",
                       "fixed:99999999999",
                       "fixed:128:0",
                       "fixed:128:abc",
                       "fixed:128:1000000000",
                       "fixed:128:5:6",
                       "uniform:64-16:10",
                       "uniform:16:10",
                       "uniform:a-b:10",
                       "uniform:0-8:10",
                       "uniform:-8:10",
                       "normal:55:10",
                       "normal:-1,5:10",
                       "normal:0,5:10",
                       "normal:55,-1:10",
                       "normal:nan,1:10",
                       "normal:inf,1:10",
                       "normal:55,x:10",
                       "fixd:128",
                       "zipf:1.1"};
  for (const char* spec : bad) {
    SCOPED_TRACE(spec);
    std::string what;
    const auto e = error_of([&] { load_dataset(spec, {}, where); }, &what);
    EXPECT_EQ(e.value, spec);
    EXPECT_EQ(e.file, "w.yaml");
    EXPECT_EQ(e.yaml_path, "train.dataset");
    EXPECT_EQ(e.line, 3);
    EXPECT_FALSE(e.rule.empty());
    EXPECT_TRUE(contains(what, "w.yaml:3: train.dataset: ")) << what;
  }
  EXPECT_TRUE(contains(error_of([] { parse_dataset_ref("fixd:128"); }).suggestion, "did you mean 'fixed'?"));
  EXPECT_TRUE(contains(error_of([] { parse_dataset_ref("uniform:64-16:10"); }).rule, "MIN <= MAX"));
}

TEST(Dataset, InMemoryRejectsZeroLengths) {
  EXPECT_TRUE(contains(error_of([] { Dataset("bad", {3, 0, 4}); }).rule, ">= 1"));
  const Dataset empty("empty", {});
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.mean_length(), 0.0);
}

}  // namespace
}  // namespace tpusim::data
