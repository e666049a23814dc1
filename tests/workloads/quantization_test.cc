// quantization: int8 / fp8 (MaxText's AQT) on a miniature Llama: the decoder layers' projections,
// forward and backward, are quantized matmuls; attention and the LM head stay bf16; the work
// counted is unchanged; chips without the format refuse the workload at its key.
#include <gtest/gtest.h>

#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "workloads/config/workload_config.h"
#include "tests/workloads/tiny_decoder.h"
#include "workloads/loop/step_builder.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

using test::hw_named;
using test::train_step_graph;

WorkloadConfig tiny(const std::string& extra) { return test::tiny_decoder(extra); }

TEST(Quantization, Int8QuantizesTheLayersProjectionsForwardAndBackward) {
  const HwConfig hw = hw_named("v6e-8");
  const WorkloadConfig w = tiny("quantization: int8\nattention: eager\n");
  const std::unique_ptr<StepGraph> sg = train_step_graph(w, hw);
  int quantized = 0, plain = 0;
  for (const models::Node& n : sg->fwd.graph.nodes()) {
    if (n.kind != models::OpKind::kDot) continue;
    const bool layer = n.name.rfind("model.layers.", 0) == 0;
    const bool attention = n.name.find(".scores") != std::string::npos || n.name.find(".context") != std::string::npos;
    if (models::is_quantized(n.precision)) {
      ++quantized;
      EXPECT_TRUE(layer && !attention) << n.name;
    } else {
      ++plain;
      EXPECT_TRUE(!layer || attention) << n.name;  // the LM head and attention's dots
    }
  }
  // 7 projections per layer, each 1 forward + 2 backward dots (input and weight gradients).
  EXPECT_EQ(quantized, 2 * 7 * 3);
  EXPECT_GT(plain, 0);

  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult q = run_training(hw, w, o);
  const TrainingRunResult b = run_training(hw, tiny("attention: eager\n"), o);
  EXPECT_EQ(q.programs[0].flops, b.programs[0].flops);
  EXPECT_NE(q.programs[0].device_s, b.programs[0].device_s);
}

TEST(Quantization, ChipsWithoutTheFormatRefuse) {
  TrainingRunOptions o;
  o.engine = "analytical";
  try {
    run_training(hw_named("v3-8"), tiny("quantization: int8\n"), o);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no int8 matmul"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_training(hw_named("v5e-8"), tiny("quantization: fp8\n"), o), ConfigError);
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:128:8'}\nquantization: int8\n",
                                         "bert_int8.yaml"),
               ConfigError);
}

}  // namespace
}  // namespace tpusim
