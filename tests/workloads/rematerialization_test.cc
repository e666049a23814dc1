// Automatic rematerialization in a training run (compiler/plan/rematerialize.h; docs/training.md,
// "Automatic rematerialization"): MLPerf BERT-large at 48 sequences of 512 per TPU v4 chip, as
// MLPerf Training v0.7 ran it (global batch 3,072 on 64 chips), plans 39.7 GiB of buffers for the
// chip's 32 GiB; XLA's rematerialization recomputes cheap activations in the backward pass and
// the run fits. Without the pass it is out of HBM; at 64 per chip it is out of HBM even with it, and
// says what it tried. A run that fits is not touched.
#include <gtest/gtest.h>

#include <string>

#include "config/hw_loader.h"
#include "sim/base/sim_error.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

const std::string kRoot = std::string(TPUSIM_SOURCE_DIR) + "/configs/";
constexpr uint64_t kGiB = 1ull << 30;

TrainingRunResult run(uint32_t batch, const std::string& remat = "true") {
  const HwConfig hw = load_hw_config(kRoot + "hw/v4-16.yaml");
  const WorkloadConfig w = load_workload_config(
      kRoot + "workloads/mlperf_bert_large_v4-16.yaml",
      {{"per_device_batch_size", std::to_string(batch)}, {"steps", "2"}, {"rematerialization", remat}});
  TrainingRunOptions o;
  o.engine = "analytical";
  return run_training(hw, w, o);
}

TEST(Rematerialization, MlperfBertLargeAt48PerChipFitsAV4Chip) {
  const TrainingRunResult r = run(48);
  ASSERT_EQ(r.programs.size(), 1u);
  const ProgramRecord& p = r.programs[0];
  EXPECT_LE(p.peak_hbm_bytes, 32 * kGiB);
  EXPECT_GT(p.remat.peak_bytes_before, 32 * kGiB);  // the plan before the pass: 39.7 GiB
  EXPECT_GT(p.remat.values, 0u);
  // What it recomputed at least covers the excess (the clones' own buffers live briefly beside it).
  EXPECT_GE(p.remat.bytes, p.remat.peak_bytes_before - 32 * kGiB);
  // The cheapest first: element-wise activations (dropout, GELU outputs), not matmuls.
  EXPECT_EQ(p.remat.flops, 0u);
  // The recomputations are kernels of the step, each right before the backward kernel reading it.
  ASSERT_TRUE(p.op_profile);
  double remat_s = 0;
  size_t remat_kernels = 0;
  for (const OpProfileEntry& e : p.op_profile->entries)
    if (e.name.size() > 6 && e.name.compare(e.name.size() - 6, 6, ".remat") == 0) remat_s += e.time_s, ++remat_kernels;
  EXPECT_EQ(remat_kernels, p.remat.values);
  EXPECT_GT(remat_s, 0.0);
  EXPECT_LT(remat_s, 0.1 * p.device_s);
  // A run that fits is not touched.
  const TrainingRunResult at32 = run(32);
  EXPECT_EQ(at32.programs[0].remat.values, 0u);
  EXPECT_EQ(at32.programs[0].peak_hbm_bytes, run(32, "false").programs[0].peak_hbm_bytes);
}

TEST(Rematerialization, OffTheSameRunIsOutOfHbm) {
  try {
    run(48, "false");
    FAIL() << "expected out of HBM";
  } catch (const SimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("out of HBM"), std::string::npos) << m;
    EXPECT_EQ(m.find("Rematerialization recomputed"), std::string::npos) << m;
  }
}

TEST(Rematerialization, TooLargeEvenRecomputingSaysWhatItTried) {
  try {
    run(64);
    FAIL() << "expected out of HBM";
  } catch (const SimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("out of HBM"), std::string::npos) << m;
    EXPECT_NE(m.find("Rematerialization recomputed"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tpusim
