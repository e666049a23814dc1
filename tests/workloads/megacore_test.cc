// Training on megacore hardware (TPU v4, chip.megacore): devices are chips. A v4-8 data-parallel
// run has 4 replicas and 4 torch_xla processes, per_device_batch_size is per chip (each core
// computes half), the memory figures are the chip's (its 32 GiB), and v2/v3 keep a device per core.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config/hw_loader.h"
#include "sim/base/sim_error.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

HwConfig hw(const std::string& name, const std::vector<Override>& ovs = {}) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml", ovs);
}

WorkloadConfig tiny(const std::string& framework = "torch_xla", uint32_t batch = 4, const std::string& extra = "") {
  return load_workload_config_text("kind: training\nmodel: bert-tiny\nmax_length: 64\nper_device_batch_size: " +
                                       std::to_string(batch) +
                                       "\ndataset: {train: 'fixed:40:320', eval: 'fixed:40:64'}\nframework: " +
                                       framework + "\n" + extra,
                                   "tiny.yaml");
}

TrainingRunResult run(const HwConfig& h, const WorkloadConfig& w) {
  TrainingRunOptions o;
  o.engine = "analytical";
  return run_training(h, w, o);
}

TEST(Megacore, V4DevicesAreChips) {
  const TrainingRunResult r = run(hw("v4-8"), tiny());
  EXPECT_TRUE(r.megacore);
  EXPECT_EQ(r.replicas, 4u);    // 4 chips
  EXPECT_EQ(r.processes, 4u);   // torch_xla: one process per device
  EXPECT_EQ(r.global_batch, 16u);  // 4 per chip
  ASSERT_EQ(r.process_records.size(), 4u);
  for (uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(r.process_records[p].chip, p);
    EXPECT_EQ(r.process_records[p].core, 0u);
    EXPECT_EQ(r.process_records[p].cores, 1u);  // one device each
  }
  EXPECT_EQ(r.hbm_bytes_per_core, 32ull << 30);  // the chip's HBM
  for (const StepRecord& s : r.steps)
    if (s.kind == StepKind::kTrain) {
      EXPECT_EQ(s.batch, 4u);  // the device's batch
    }

  const TrainingRunResult v3 = run(hw("v3-8"), tiny());
  EXPECT_FALSE(v3.megacore);
  EXPECT_EQ(v3.replicas, 8u);
  EXPECT_EQ(v3.processes, 8u);
  EXPECT_EQ(v3.global_batch, 32u);
  EXPECT_EQ(v3.hbm_bytes_per_core, 16ull << 30);
}

TEST(Megacore, OtherFrameworksCountDevicesPerChip) {
  const TrainingRunResult tf = run(hw("v4-32"), tiny("tf_keras"));
  EXPECT_EQ(tf.processes, 1u);
  EXPECT_EQ(tf.replicas, 16u);
  ASSERT_EQ(tf.process_records.size(), 1u);
  EXPECT_EQ(tf.process_records[0].cores, 16u);  // the client drives every device
  const TrainingRunResult jax = run(hw("v4-32"), tiny("jax"));
  EXPECT_EQ(jax.processes, 4u);  // one per host, 4 devices each
  for (const ProcessRecord& p : jax.process_records) EXPECT_EQ(p.cores, 4u);
  EXPECT_EQ(jax.process_records[1].host, 1u);
  EXPECT_EQ(jax.process_records[1].chip, 4u);
}

// The same per-chip batch as megacore and as two core-devices with half of it each: the same global
// batch, the same work per core; megacore stores the model state once per chip.
TEST(Megacore, MemoryIsPerChipWithStateOnce) {
  const TrainingRunResult m = run(hw("v4-8"), tiny("torch_xla", 4));
  const TrainingRunResult c = run(hw("v4-8", {parse_override("chip.megacore=false")}), tiny("torch_xla", 2));
  EXPECT_EQ(m.global_batch, c.global_batch);
  const compiler::MemoryBreakdown &mm = m.peak_memory, &cm = c.peak_memory;
  EXPECT_EQ(mm.parameter_bytes, cm.parameter_bytes);            // once per chip, not per core
  EXPECT_EQ(mm.optimizer_state_bytes, cm.optimizer_state_bytes);
  EXPECT_GT(mm.activation_bytes, cm.activation_bytes);          // both cores' activations
  EXPECT_LT(m.peak_hbm_bytes, 2 * c.peak_hbm_bytes);            // less than two core-devices
  // Flops per device: both cores; MFU against the chip's peak matches the per-core figure.
  double mf = 0, cf = 0;
  for (const ProgramRecord& p : m.programs)
    if (p.graph == GraphKind::kTrain) mf = double(p.flops);
  for (const ProgramRecord& p : c.programs)
    if (p.graph == GraphKind::kTrain) cf = double(p.flops);
  EXPECT_GT(mf, 1.9 * cf);  // both cores' (the optimizer's half per core makes it a bit under 2x)
  EXPECT_LE(mf, 2.0 * cf);
  EXPECT_GT(m.mfu, 0);
  // One gradient-combination path per chip: the device all-reduce moves each device's gradients.
  for (const ProgramRecord& p : m.programs)
    if (p.graph == GraphKind::kTrain) {
      EXPECT_FALSE(p.allreduces.empty());
    }
}

// An odd batch: both cores run ceil(B/2) examples (one SPMD program), the device time of B+1; only
// B examples' flops count.
TEST(Megacore, OddBatchRunsTheLargerHalfOnBothCores) {
  const TrainingRunResult odd = run(hw("v4-8"), tiny("torch_xla", 3)), even = run(hw("v4-8"), tiny("torch_xla", 4));
  const ProgramRecord *po = nullptr, *pe = nullptr;
  for (const ProgramRecord& p : odd.programs)
    if (p.graph == GraphKind::kTrain) po = &p;
  for (const ProgramRecord& p : even.programs)
    if (p.graph == GraphKind::kTrain) pe = &p;
  ASSERT_TRUE(po && pe);
  EXPECT_EQ(po->batch, 3u);
  EXPECT_DOUBLE_EQ(po->device_s, pe->device_s);  // the same per-core program (B = 2 per core)
  EXPECT_NEAR(double(po->flops), 0.75 * double(pe->flops), 1e-6 * double(pe->flops));
}

TEST(Megacore, OutOfHbmIsAgainstTheChip) {
  const WorkloadConfig w = load_workload_config_text(
      "kind: training\nmodel: bert-large-uncased\nmax_length: 512\nper_device_batch_size: 96\nsteps: 2\n"
      "dataset: {train: 'fixed:512'}\nprecision: fp32\n", "big.yaml");
  try {
    run(hw("v4-8"), w);
    FAIL() << "expected out of HBM";
  } catch (const SimError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("on each chip (megacore: both TensorCores)"), std::string::npos) << what;
    EXPECT_NE(what.find("of the chip's 32.00 GiB"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tpusim
