// Task image_classification (ViT, models/vit.h) in the training driver: one fixed sequence
// (197 tokens) and one compile per program, no padding, the infeed of float pixels, and the
// workload rules (the preset's image size, images:COUNT datasets, a ViT model for the task).
#include <gtest/gtest.h>

#include <string>

#include "base/config_error.h"
#include "compiler/plan/layout.h"
#include "config/hw_loader.h"
#include "workloads/config/workload_config.h"
#include "workloads/data/dataset.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

WorkloadConfig vit(const std::string& extra = "") {
  return load_workload_config_text("kind: training\nmodel: google/vit-base-patch16-224\ntask: image_classification\n"
                                   "num_labels: 10\nper_device_batch_size: 4\n"
                                   "dataset: {train: 'images:64', eval: 'images:16'}\n" + extra,
                                   "vit.yaml");
}

TEST(VitWorkload, OneShapeNoPaddingFloatInfeed) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v4-8.yaml");
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult r = run_training(hw, vit(), o);
  EXPECT_EQ(r.global_batch, 16u);  // 4 chips x 4 images
  int train = 0;
  for (const StepRecord& s : r.steps) {
    EXPECT_EQ(s.seq, 197u) << s.index;  // (224 / 16)^2 patches + [CLS]
    train += s.kind == StepKind::kTrain;
  }
  EXPECT_EQ(train, 4);  // 64 images / 16
  for (const ProgramRecord& p : r.programs) EXPECT_EQ(p.seq, 197u) << p.name;
  EXPECT_EQ(r.padding_waste, 0.0);
  // Per chip and step (sample 0 is the parameter upload): 2 cores x (2 images of 196 patches x 768
  // f32 values, and 2 s32 labels), each tensor in its tiled HBM layout (compiler/plan/layout.h).
  ASSERT_GE(r.inbound_bytes.samples.size(), 2u);
  const uint64_t per_core = compiler::padded_bytes({2, 196, 768}, models::DType::kF32) +
                            compiler::padded_bytes({2}, models::DType::kS32);
  EXPECT_GE(per_core, uint64_t(2 * 196 * 768 * 4));
  EXPECT_EQ(r.inbound_bytes.samples.at(1), 2.0 * double(per_core));
}

void expect_error_at(const std::string& extra, const std::string& path, const std::string& text = "") {
  try {
    load_workload_config_text("kind: training\nper_device_batch_size: 4\n" + extra, "w.yaml");
    FAIL() << "expected ConfigError at " << path;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, path) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(VitWorkload, Rules) {
  const std::string m = "model: google/vit-base-patch16-224\ntask: image_classification\n";
  expect_error_at(m + "image_size: 384\ndataset: {train: 'images:8'}\n", "image_size", "must be 224");
  expect_error_at(m + "dataset: {train: 'fixed:197:8'}\n", "dataset.train", "images:COUNT");
  expect_error_at(m + "padding: longest\ndataset: {train: 'images:8'}\n", "padding", "does not apply");
  expect_error_at(m + "model_config: {layers: 2}\ndataset: {train: 'images:8'}\n", "model_config");
  expect_error_at("model: google/vit-base-patch16-224\ndataset: {train: 'images:8'}\n", "task", "vision model");
  expect_error_at("model: bert-tiny\ntask: image_classification\ndataset: {train: 'images:8'}\n", "model", "ViT preset");
  expect_error_at("model: bert-tiny\ndataset: {train: 'images:8'}\n", "dataset.train", "image_classification only");
  expect_error_at(m + "dataset: {train: 'images:0'}\n", "dataset.train", "images:COUNT");
  EXPECT_EQ(vit().training().task, Task::kImageClassification);
  EXPECT_EQ(image_tokens(vit().training()), 197u);
}

// images:COUNT: COUNT examples of the vision model's sequence; a text task (image_tokens 0) refuses it.
TEST(VitWorkload, ImagesDataset) {
  const data::DatasetRef ref = data::parse_dataset_ref("images:5");
  EXPECT_EQ(ref.kind, data::DatasetRef::Kind::kImages);
  data::DatasetOptions o;
  EXPECT_THROW(data::load_dataset(ref, o), ConfigError);
  o.image_tokens = 197;
  const data::Dataset d = data::load_dataset(ref, o);
  EXPECT_EQ(d.lengths(), std::vector<uint32_t>(5, 197));
  EXPECT_THROW(data::parse_dataset_ref("images:x"), ConfigError);
  EXPECT_THROW(data::parse_dataset_ref("images:"), ConfigError);
}

}  // namespace
}  // namespace tpusim
