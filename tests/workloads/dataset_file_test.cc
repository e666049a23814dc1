// Datasets from the user's files: which references are paths, the formats (JSON list, text, CSV/TSV,
// JSON Lines) and every error path (file, line, field or column in the message).
#include "workloads/data/dataset_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/config/test_util.h"

namespace tpusim::data {
namespace {

namespace fs = std::filesystem;

using tpusim::testing::config_error_of;
using tpusim::testing::contains;

using L = std::vector<uint32_t>;

// A scratch directory per test.
class DatasetFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tpusim_dataset_file_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

TEST(DatasetFileRef, PathsAreTellableFromTableKeysAndSpecs) {
  EXPECT_TRUE(is_file_ref("lengths.json"));
  EXPECT_TRUE(is_file_ref("data/train.jsonl#n"));
  EXPECT_TRUE(is_file_ref("x.csv"));
  EXPECT_TRUE(is_file_ref("./lengths"));
  EXPECT_TRUE(is_file_ref("/abs/lengths"));
  EXPECT_TRUE(is_file_ref("file:lengths.dat"));
  EXPECT_FALSE(is_file_ref("glue_mrpc/train/bert-base-cased"));
  EXPECT_FALSE(is_file_ref("fixed:128:10"));
  EXPECT_FALSE(is_file_ref("uniform:1-9"));

  const LengthFileRef r = split_file_ref("file:a/b.jsonl#num_tokens");
  EXPECT_EQ(r.path, "a/b.jsonl");
  EXPECT_EQ(r.field, "num_tokens");

  const DatasetRef ref = parse_dataset_ref("data/train.csv#len");
  EXPECT_EQ(ref.kind, DatasetRef::Kind::kFile);
  EXPECT_EQ(ref.path, "data/train.csv");
  EXPECT_EQ(ref.field, "len");
  EXPECT_EQ(parse_dataset_ref("glue_mrpc/train/bert-base-cased").kind, DatasetRef::Kind::kTable);
}

TEST(DatasetFileRef, RelativePathsResolveAgainstTheWorkloadDirectory) {
  EXPECT_EQ(resolve_file_ref("../datasets/x.json", "configs/workloads"), "configs/datasets/x.json");
  EXPECT_EQ(resolve_file_ref("file:x.dat#n", "w"), "file:w/x.dat#n");
  EXPECT_EQ(resolve_file_ref("/abs/x.json", "w"), "/abs/x.json");
  EXPECT_EQ(resolve_file_ref("x.json", ""), "x.json");  // --set / embedded: the working directory
  EXPECT_EQ(resolve_file_ref("glue_mrpc/train/bert-base-cased", "w"), "glue_mrpc/train/bert-base-cased");
  EXPECT_EQ(resolve_file_ref("fixed:8:2", "w"), "fixed:8:2");
}

TEST(DatasetFileFormats, JsonList) {
  EXPECT_EQ(parse_length_file("[12, 87,\n 40]\n", "a.json"), (L{12, 87, 40}));
  EXPECT_EQ(parse_length_file(" [7] ", "a.json"), (L{7}));
}

TEST(DatasetFileFormats, TextOneLengthPerLine) {
  EXPECT_EQ(parse_length_file("12\n87\r\n\n40", "a.txt"), (L{12, 87, 40}));
  EXPECT_EQ(parse_length_file("length\n5\n6\n", "a.txt"), (L{5, 6}));  // a header line is allowed
}

TEST(DatasetFileFormats, CsvColumnByNameByFieldOrOnlyNumeric) {
  const std::string csv = "id,sentence,length\n3,\"hello, world\",9\n4,bye,4\n";
  EXPECT_EQ(parse_length_file(csv, "a.csv"), (L{9, 4}));        // `length` is a known name
  EXPECT_EQ(parse_length_file(csv, "a.csv", "id"), (L{3, 4}));  // a.csv#id
  // No known name: the only numeric column.
  EXPECT_EQ(parse_length_file("text,tok\n\"a, b\",17\nc,3\n", "a.csv"), (L{17, 3}));
  EXPECT_EQ(parse_length_file("text\ttokens\nab\t5\n", "a.tsv"), (L{5}));
  // No header, one column.
  EXPECT_EQ(parse_length_file("5\n6\n", "a.csv"), (L{5, 6}));
}

TEST(DatasetFileFormats, JsonLinesFieldByNameOrInputIds) {
  EXPECT_EQ(parse_length_file("{\"text\": \"a\", \"length\": 87}\n\n{\"length\": 3}\n", "a.jsonl"), (L{87, 3}));
  EXPECT_EQ(parse_length_file("{\"input_ids\": [101, 7, 102]}\n", "a.jsonl"), (L{3}));
  EXPECT_EQ(parse_length_file("{\"n\": 5, \"length\": 9}\n", "a.ndjson", "n"), (L{5}));
  EXPECT_EQ(parse_length_file("{\"tokens\": [1, 2]}\n", "a.jsonl", "tokens"), (L{2}));
}

TEST(DatasetFileErrors, NameFileLineAndFieldOrColumn) {
  std::string what;
  ConfigErrorInfo e = config_error_of([] { parse_length_file("[12,\n 8.5]", "d.json"); }, &what);
  EXPECT_EQ(e.file, "d.json");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.yaml_path, "column 2");
  EXPECT_EQ(e.value, "8.5");

  e = config_error_of([] { parse_length_file("5\n-3\n", "d.txt"); });
  EXPECT_EQ(e.line, 2);
  EXPECT_TRUE(contains(e.rule, "negative")) << e.rule;
  e = config_error_of([] { parse_length_file("5\n0\n", "d.txt"); });
  EXPECT_TRUE(contains(e.rule, "zero")) << e.rule;
  e = config_error_of([] { parse_length_file("a,length\nx,7\ny,seven\n", "d.csv"); });
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.yaml_path, "length");
  EXPECT_EQ(e.value, "seven");
  e = config_error_of([] { parse_length_file("a,b\n1,2\n", "d.csv"); });
  EXPECT_TRUE(contains(e.rule, "several numeric columns")) << e.rule;
  EXPECT_TRUE(contains(e.suggestion, "d.csv#COLUMN")) << e.suggestion;
  e = config_error_of([] { parse_length_file("a,length\n1,2\n", "d.csv", "lenght"); });
  EXPECT_TRUE(contains(e.suggestion, "did you mean 'length'")) << e.suggestion;

  e = config_error_of([] { parse_length_file("{\"length\": 4}\n{\"text\": \"x\"}\n", "d.jsonl"); });
  EXPECT_EQ(e.line, 2);
  EXPECT_TRUE(contains(e.rule, "none of the token-count fields")) << e.rule;
  e = config_error_of([] { parse_length_file("{\"n_tok\": 4}\n", "d.jsonl", "n_toks"); });
  EXPECT_EQ(e.yaml_path, "n_toks");
  EXPECT_TRUE(contains(e.suggestion, "n_tok")) << e.suggestion;
  e = config_error_of([] { parse_length_file("{\"length\": 4.5}\n", "d.jsonl"); });
  EXPECT_EQ(e.yaml_path, "length");
  e = config_error_of([] { parse_length_file("{\"length\": {\"n\": 4}, \"len\": 3}\n", "d.jsonl"); });
  EXPECT_EQ(e.yaml_path, "length");  // the preferred field, even when a later one would do
  e = config_error_of([] { parse_length_file("{\"input_ids\": []}\n", "d.jsonl"); });
  EXPECT_TRUE(contains(e.rule, "empty list")) << e.rule;
  e = config_error_of([] { parse_length_file("[4]\n", "d.jsonl"); });
  EXPECT_TRUE(contains(e.rule, "must be an object")) << e.rule;
  e = config_error_of([] { parse_length_file("{\"length\": 4\n", "d.jsonl"); });
  EXPECT_TRUE(contains(e.rule, "not valid JSON")) << e.rule;

  for (const auto& [text, name] : {std::pair{"[]", "e.json"}, std::pair{"\n\n", "e.txt"}, std::pair{"length\n", "e.csv"},
                                   std::pair{"", "e.jsonl"}}) {
    e = config_error_of([&] { parse_length_file(text, name); });
    EXPECT_EQ(e.file, name);
    EXPECT_TRUE(contains(e.rule, "no examples")) << name << ": " << e.rule;
  }
}

TEST_F(DatasetFile, LoadsThroughADatasetReferenceDeterministically) {
  const std::string p = write("lengths.json", "[3, 200, 5]");
  const Dataset a = load_dataset(p), b = load_dataset(p);
  EXPECT_EQ(a.lengths(), (L{3, 200, 5}));  // file order, untruncated (the driver truncates to max_length)
  EXPECT_EQ(a.lengths(), b.lengths());
  EXPECT_EQ(a.name(), p);
  EXPECT_EQ(a.size(), 3u);
}

TEST_F(DatasetFile, MissingFileSuggestsNearbyFiles) {
  write("train_lengths.json", "[1]");
  const std::string bad = (dir_ / "train_length.json").string();
  std::string what;
  const ConfigErrorInfo e = config_error_of([&] { load_dataset(bad, {}, ErrorWhere{"w.yaml", "dataset.train", 4}); }, &what);
  EXPECT_EQ(e.file, "w.yaml");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.value, bad);
  EXPECT_TRUE(contains(e.rule, "not found")) << what;
  EXPECT_TRUE(contains(e.suggestion, "train_lengths.json")) << what;
  const ConfigErrorInfo d = config_error_of([&] { load_dataset((dir_ / "nodir" / "x.json").string()); });
  EXPECT_TRUE(contains(d.suggestion, "does not exist")) << d.suggestion;
}

TEST_F(DatasetFile, AMillionLinesLoad) {
  std::string text;
  text.reserve(4'000'000);
  for (int i = 0; i < 1'000'000; ++i) text += std::to_string(1 + i % 300) + "\n";
  const std::string p = write("big.txt", text);
  const Dataset d = load_dataset(p);
  EXPECT_EQ(d.size(), 1'000'000u);
  EXPECT_EQ(d.max_length(), 300u);
}

}  // namespace
}  // namespace tpusim::data
