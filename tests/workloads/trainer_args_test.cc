// Trainer settings behind the native workload keys (docs/training.md "Evaluation and logging",
// "Batch size search"): eval_strategy/eval_steps, logging_steps, eval_precision,
// auto_find_batch_size, and their config checks. bert-tiny on synthetic data, analytical engine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

const HwConfig& v3_8() {
  static const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  return hw;
}

// bert-tiny, 4 per core (global 32), 320 training examples (10 optimizer steps), 64 eval examples
// at 8 per core (one eval step per pass), fixed length 40 padded to 64.
WorkloadConfig tiny(const std::string& extra = "") {
  return load_workload_config_text("kind: training\nmodel: bert-tiny\n"
                                   "dataset: {train: 'fixed:40:320', eval: 'fixed:40:64'}\nmax_length: 64\n"
                                   "per_device_batch_size: 4\neval_per_device_batch_size: 8\n" + extra,
                                   "tiny.yaml");
}

TrainingRunResult run(const WorkloadConfig& w, const HwConfig& hw = v3_8()) {
  TrainingRunOptions o;
  o.engine = "analytical";
  return run_training(hw, w, o);
}

// The train steps after which each eval pass starts (eval steps follow train step i).
std::vector<uint64_t> evals_after(const TrainingRunResult& r) {
  std::vector<uint64_t> at;
  uint64_t train = 0;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    if (r.steps[i].kind == StepKind::kTrain) ++train;
    else if (i == 0 || r.steps[i - 1].kind == StepKind::kTrain) at.push_back(train);
  }
  return at;
}

TEST(TrainerArgs, EvalStrategyDecidesWhenTheEvalSplitRuns) {
  EXPECT_EQ(evals_after(run(tiny())), (std::vector<uint64_t>{10}));  // epoch: after the epoch
  EXPECT_EQ(evals_after(run(tiny("eval_strategy: steps\neval_steps: 4\n"))), (std::vector<uint64_t>{4, 8}));
  EXPECT_EQ(evals_after(run(tiny("eval_strategy: steps\neval_steps: 5\nepochs: 2\n"))),
            (std::vector<uint64_t>{5, 10, 15, 20}));
  const TrainingRunResult no = run(tiny("eval_strategy: no\n"));
  EXPECT_EQ(no.eval_steps, 0u);
  EXPECT_EQ(no.breakdown.eval, 0);
}

TEST(TrainerArgs, LoggingStepsSyncTheHostWithTheDevice) {
  const TrainingRunResult base = run(tiny("eval_strategy: no\n"));
  const TrainingRunResult logged = run(tiny("eval_strategy: no\nlogging_steps: 2\n"));
  EXPECT_EQ(base.logging_syncs, 0u);
  EXPECT_EQ(logged.logging_syncs, 5u);  // after optimizer steps 2, 4, 6, 8, 10
  EXPECT_GT(logged.logging_sync_s, 0);
  // Each sync ends the host's run-ahead: the run gets longer, by host time.
  EXPECT_GT(logged.total_time_s, base.total_time_s);
  EXPECT_GT(logged.breakdown.host, base.breakdown.host);
  EXPECT_EQ(logged.breakdown.device, base.breakdown.device);
  EXPECT_EQ(logged.transfer_from_device.samples.size(), base.transfer_from_device.samples.size() + 5);
}

TEST(TrainerArgs, Bf16EvalIsItsOwnProgramWithBf16Activations) {
  const TrainingRunResult same = run(tiny());
  const TrainingRunResult bf16 = run(tiny("eval_precision: bf16\n"));
  auto eval_program = [](const TrainingRunResult& r) {
    for (const ProgramRecord& p : r.programs)
      if (p.graph == GraphKind::kEval) return p;
    return ProgramRecord{};
  };
  const ProgramRecord a = eval_program(same), b = eval_program(bf16);
  EXPECT_EQ(b.name, "eval B=8 S=64 bf16");
  EXPECT_NE(a.key, b.key);  // a different graph: its own compile
  EXPECT_EQ(b.parameter_bytes, a.parameter_bytes);  // the stored weights stay f32
  EXPECT_LT(b.memory.activation_bytes, a.memory.activation_bytes);
  // Training is unchanged.
  for (const ProgramRecord& p : bf16.programs) {
    if (p.graph == GraphKind::kEval) continue;
    for (const ProgramRecord& q : same.programs) {
      if (q.name == p.name) {
        EXPECT_EQ(p.key, q.key);
      }
    }
  }
}

TEST(TrainerArgs, AutoFindBatchSizeHalvesUntilTheStepFits) {
  HwConfig hw = v3_8();
  hw.chip.hbm.size_gib = 1;  // 0.5 GiB per core: B=128 at S=256 does not fit (even rematerializing), B=64 does
  auto cfg = [&](uint32_t batch, const std::string& extra) {
    return load_workload_config_text("kind: training\nmodel: bert-tiny\nmax_length: 256\n"
                                     "dataset: {train: 'fixed:256:512'}\nper_device_batch_size: " +
                                         std::to_string(batch) + "\n" + extra,
                                     "big.yaml");
  };
  EXPECT_THROW(run(cfg(128, ""), hw), OutOfHbmError);
  const TrainingRunResult r = run(cfg(128, "auto_find_batch_size: true\n"), hw);
  EXPECT_EQ(r.batch_search.tried, (std::vector<uint32_t>{128, 64}));
  EXPECT_EQ(r.batch_search.used, 64u);
  EXPECT_EQ(r.global_batch, 64u * 8);
  for (const StepRecord& s : r.steps) EXPECT_EQ(s.batch, 64u);
  EXPECT_LE(r.peak_hbm_bytes, r.hbm_bytes_per_core);
  // The failed attempt compiled its first step before the allocation failed: time spent.
  EXPECT_GT(r.breakdown.batch_search, 0);
  const TrainingRunResult direct = run(cfg(64, ""), hw);
  EXPECT_NEAR(r.total_time_s, direct.total_time_s + r.breakdown.batch_search, 1e-9);
  // A batch that fits is kept.
  const TrainingRunResult fits = run(cfg(16, "auto_find_batch_size: true\n"), hw);
  EXPECT_EQ(fits.batch_search.tried, (std::vector<uint32_t>{16}));
  EXPECT_EQ(fits.breakdown.batch_search, 0);
}

TEST(TrainerArgs, ConfigChecks) {
  auto fails = [](const std::string& extra, const std::string& key) {
    try {
      tiny(extra);
      ADD_FAILURE() << "expected ConfigError for " << extra;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  fails("eval_strategy: steps\n", "eval_steps");
  fails("fsdp_min_num_params: 1000\n", "fsdp_min_num_params");
  fails("sharding: fsdp\nfsdp_wrap_layer_classes: [BertLayr]\n", "BertLayer");
  fails("sharding: fsdp\nfsdp_wrap_layer_classes: [BertLayer]\nfsdp_min_num_params: 10\n", "mutually exclusive");
  EXPECT_NO_THROW(tiny("sharding: fsdp\nfsdp_wrap_layer_classes: [BertLayer, BertEmbeddings]\n"));
}

}  // namespace
}  // namespace tpusim
