// Task seq2seq (T5, models/t5.h) in the training driver: source and target lengths from a pair
// dataset, each padded by its own rule; the target length T in every step's program (a change of T
// is another program: another cache key, a compile); and the workload rules (targets required by
// seq2seq and refused elsewhere, the pair form, a T5 model for the task).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "workloads/data/dataset.h"
#include "workloads/loop/native_steps.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

const HwConfig& v3_8() {
  static const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  return hw;
}

// A small T5 (2 + 2 blocks of d_model 64) so that the run takes milliseconds.
WorkloadConfig t5(const std::string& dataset, const std::string& extra = "") {
  return load_workload_config_text("kind: training\nmodel: t5-small\ntask: seq2seq\nper_device_batch_size: 2\n"
                                   "model_config: {layers: 2, hidden: 64, heads: 2, intermediate: 128, vocab: 512}\n"
                                   "dataset: " + dataset + "\n" + extra,
                                   "t5.yaml");
}

TEST(Seq2seqWorkload, SourceAndTargetShapes) {
  const WorkloadConfig w = t5("{train: {source: 'fixed:40:32', target: 'fixed:20:32'}, eval: 'fixed:40:16', "
                              "eval_target: 'fixed:20:16'}",
                              "max_length: 64\nmax_target_length: 24\npadding: longest\n");
  EXPECT_EQ(w.training().dataset.train, "fixed:40:32");
  EXPECT_EQ(w.training().dataset.train_target, "fixed:20:32");
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult r = run_training(v3_8(), w, o);
  int train = 0;
  for (const StepRecord& s : r.steps) {
    EXPECT_EQ(s.seq, 40u) << s.index;  // the source, padded to the longest
    train += s.kind == StepKind::kTrain;
  }
  EXPECT_EQ(train, 2);  // 32 pairs / (8 cores x 2)
  std::set<std::string> names;
  for (const ProgramRecord& p : r.programs) names.insert(p.name);
  EXPECT_TRUE(names.count("train_first_step B=2 S=40 T=20")) << *names.begin();
  EXPECT_TRUE(names.count("eval B=2 S=40 T=20"));
}

// BART (models/bart.h) runs the same task; its learned positions bound both lengths.
TEST(Seq2seqWorkload, BartRunsAndBoundsTargets) {
  const std::string m = "kind: training\nmodel: facebook/bart-large\ntask: seq2seq\nper_device_batch_size: 1\n"
                        "dataset: {train: {source: 'fixed:48:8', target: 'fixed:16:8'}}\nmax_length: 64\n"
                        "model_config: {layers: 1, hidden: 64, heads: 2, intermediate: 128, vocab: 512, max_position: ";
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult r = run_training(v3_8(), load_workload_config_text(m + "128}\nmax_target_length: 16\n", "b.yaml"), o);
  ASSERT_FALSE(r.programs.empty());
  EXPECT_EQ(r.programs.front().name, "train_first_step B=1 S=64 T=16");
  try {
    load_workload_config_text(m + "128}\nmax_target_length: 256\n", "b.yaml");
    ADD_FAILURE() << "expected ConfigError at max_target_length";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, "max_target_length") << e.what();
  }
}

// Every distinct target length is its own program: its own cache key (a compile, as on a TPU).
TEST(Seq2seqWorkload, TargetLengthChangeRecompiles) {
  const WorkloadConfig w = t5("{train: {source: 'fixed:32:16', target: 'fixed:16:16'}}");
  NativeSteps p(v3_8(), w.training());
  const StepInfo& a = p.info({GraphKind::kTrain, 2, 32, false, 16});
  const StepInfo& b = p.info({GraphKind::kTrain, 2, 32, false, 32});
  const StepInfo& c = p.info({GraphKind::kTrain, 2, 32, false, 16});
  EXPECT_FALSE(a.key == b.key);
  EXPECT_TRUE(a.key == c.key);
  EXPECT_EQ(b.name, "train B=2 S=32 T=32");
}

// Target lengths are truncated at max_target_length and padded by the same rule as the sources.
TEST(Seq2seqWorkload, TargetsTruncatedAndPadded) {
  const WorkloadConfig w = t5("{train: {source: 'fixed:100:16', target: 'fixed:300:16'}}",
                              "max_length: 128\nmax_target_length: 200\npadding: multiple_of:64\n");
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult r = run_training(v3_8(), w, o);
  ASSERT_FALSE(r.programs.empty());
  for (const ProgramRecord& p : r.programs) EXPECT_NE(p.name.find("S=128 T=200"), std::string::npos) << p.name;
}

// Each source gets a target length from the target distribution: a permutation of equal-sized sides.
TEST(Seq2seqWorkload, PairsDrawTargetsIndependently) {
  const data::Dataset src("s", {5, 6, 7, 8}), tgt("t", {1, 2, 3, 4});
  const data::Dataset d = src.with_targets(tgt, 9);
  ASSERT_EQ(d.target_lengths().size(), 4u);
  EXPECT_EQ(std::multiset<uint32_t>(d.target_lengths().begin(), d.target_lengths().end()),
            (std::multiset<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(d.lengths(), src.lengths());
  const data::Dataset drawn = src.with_targets(data::Dataset("u", {7, 7}), 9);
  EXPECT_EQ(drawn.target_lengths(), (std::vector<uint32_t>{7, 7, 7, 7}));
}

void expect_error_at(const std::string& yaml, const std::string& path, const std::string& text) {
  try {
    load_workload_config_text("kind: training\nper_device_batch_size: 4\n" + yaml, "w.yaml");
    FAIL() << "expected ConfigError at " << path;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, path) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(Seq2seqWorkload, Rules) {
  const std::string m = "model: t5-small\ntask: seq2seq\n";
  expect_error_at(m + "dataset: {train: 'fixed:64'}\n", "dataset.train_target", "required by task seq2seq");
  expect_error_at(m + "dataset: {train: {source: 'fixed:64', target: 'fixed:8'}, eval: 'fixed:64'}\n",
                  "dataset.eval_target", "required by task seq2seq");
  expect_error_at("model: bert-tiny\ndataset: {train: {source: 'fixed:64', target: 'fixed:8'}}\n",
                  "dataset.train_target", "seq2seq target");
  expect_error_at(m + "dataset: {train: {source: 'fixed:64', targets: 'fixed:8'}}\n", "dataset.train.targets",
                  "source and target");
  expect_error_at(m + "dataset: {train: {source: 'fixed:64'}}\n", "dataset.train.target", "both source and target");
  expect_error_at("model: t5-small\ndataset: {train: {source: 'fixed:64', target: 'fixed:8'}}\n", "task",
                  "task seq2seq");
  expect_error_at("model: bert-tiny\ntask: seq2seq\ndataset: {train: {source: 'fixed:64', target: 'fixed:8'}}\n",
                  "task", "T5 or BART");
  // run_summarization's spelling of the source truncation.
  const WorkloadConfig w = load_workload_config_text(
      "kind: training\nper_device_batch_size: 4\n" + m + "max_source_length: 256\n"
      "dataset: {train: {source: 'fixed:64', target: 'fixed:8'}}\n", "w.yaml");
  EXPECT_EQ(w.training().max_length, 256u);
  EXPECT_EQ(w.training().task, Task::kSeq2seq);
}

}  // namespace
}  // namespace tpusim
