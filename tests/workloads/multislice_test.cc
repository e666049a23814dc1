// Multislice (hw multislice.slices, workload dcn_mesh): slices joined by the data-center network run
// one step; the gradients' sums cross the network once per core (compiler/collectives/collectives_dcn.cc),
// nothing else does; the global batch, the per-chip figures and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "tests/workloads/tiny_decoder.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

using test::hw_named;
using test::tiny_decoder;

HwConfig v6e_8(uint32_t slices) {
  HwConfig hw = hw_named("v6e-8");
  hw.multislice.slices = slices;
  return hw;
}

TrainingRunResult run(const HwConfig& hw, const std::string& extra) {
  TrainingRunOptions o;
  o.engine = "analytical";
  return run_training(hw, tiny_decoder(extra), o);
}

// Per core, a collective of B bytes over n cores sends 2 (S-1) / S x B / n over the network (pieces
// round it up by at most a few bytes each).
void expect_dcn_share(uint64_t dcn, uint64_t collective_bytes, uint32_t n, uint32_t s) {
  const double expected = 2.0 * (s - 1) / s * double(collective_bytes) / n;
  EXPECT_NEAR(double(dcn), expected, 1e-3 * expected) << "collective bytes " << collective_bytes;
}

TEST(Multislice, DataParallelGradientsCrossTheNetworkOnceAndTheBatchGrows) {
  const TrainingRunResult one = run(v6e_8(1), "");
  const TrainingRunResult two = run(v6e_8(2), "");
  const TrainingRunResult four = run(v6e_8(4), "");
  EXPECT_EQ(one.dcn_bytes, 0u);
  EXPECT_EQ(two.global_batch, 2 * one.global_batch);
  EXPECT_EQ(four.global_batch, 4 * one.global_batch);
  // Only the gradients' all-reduces cross; within the slice every collective is as before.
  EXPECT_EQ(two.programs[0].allreduce_bytes, one.programs[0].allreduce_bytes);
  expect_dcn_share(two.programs[0].dcn_bytes, two.programs[0].allreduce_bytes, 8, 2);
  expect_dcn_share(four.programs[0].dcn_bytes, four.programs[0].allreduce_bytes, 8, 4);
  EXPECT_GT(two.programs[0].device_s, one.programs[0].device_s);
  EXPECT_GT(four.programs[0].device_s, two.programs[0].device_s);
  // The part across the network is a collective kind of its own in the statistics; the step's
  // all-reduce breakdown counts its exposed time with the within-slice parts'.
  const CollectiveKindStats& dcn = two.programs[0].collectives[isa::Collective::kDcnAllReduce];
  EXPECT_GT(dcn.busy_s, 0);
  EXPECT_GE(dcn.busy_s, dcn.exposed_s);
  EXPECT_EQ(one.programs[0].collectives[isa::Collective::kDcnAllReduce].busy_s, 0);
  // Per chip the work is the same: tokens per second per chip fall only by the longer step.
  EXPECT_EQ(two.programs[0].flops, one.programs[0].flops);
  EXPECT_NEAR(two.steady_tokens_per_s_per_chip * two.steady_step_time_s,
              one.steady_tokens_per_s_per_chip * one.steady_step_time_s, 1e-6 * one.steady_tokens_per_s_per_chip);
}

TEST(Multislice, FsdpReduceScattersCrossTheNetworkItsGathersDoNot) {
  const TrainingRunResult one = run(v6e_8(1), "sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\n");
  const TrainingRunResult two = run(v6e_8(2), "sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\n");
  EXPECT_EQ(two.programs[0].allgather_bytes, one.programs[0].allgather_bytes);
  EXPECT_EQ(two.programs[0].reducescatter_bytes, one.programs[0].reducescatter_bytes);
  expect_dcn_share(two.programs[0].dcn_bytes, two.programs[0].reducescatter_bytes, 8, 2);
}

// A slice that is one tensor group (data 1 within the slice): the gradients' sum is over the slices
// alone, and the whole of each core's gradient shard crosses the network.
TEST(Multislice, ATensorGroupPerSliceSendsItsWholeGradientShard) {
  HwConfig v6e_4 = hw_named("v6e-4");
  const TrainingRunResult one = run(v6e_4, "mesh: {tensor: 4}\n");
  v6e_4.multislice.slices = 2;
  const TrainingRunResult two = run(v6e_4, "mesh: {tensor: 4}\n");
  EXPECT_EQ(one.dcn_bytes, 0u);
  // The gradients' all-reduces (a group of one within the slice) are new; each core sends all of
  // them: 2 (S-1) / S x the bytes over 1 core.
  const uint64_t grads = two.programs[0].allreduce_bytes - one.programs[0].allreduce_bytes;
  EXPECT_GT(grads, 0u);
  expect_dcn_share(two.programs[0].dcn_bytes, grads, 1, 2);
}

TEST(Multislice, Errors) {
  // The DCN axis must span the hardware's slices.
  try {
    run(v6e_8(2), "dcn_mesh: {data: 4}\n");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, "dcn_mesh.data");
    EXPECT_NE(std::string(e.what()).find("multislice.slices"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(run(v6e_8(2), "dcn_mesh: {data: -1}\n"));
  EXPECT_NO_THROW(run(v6e_8(2), "dcn_mesh: {data: 2}\n"));
  // A chip without a data-center network section cannot be several slices.
  try {
    load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml", {{"multislice.slices", "2"}});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, "multislice.slices");
    EXPECT_NE(std::string(e.what()).find("chip.dcn"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v5litepod-256.yaml", {{"multislice.slices", "2"}}));
}

}  // namespace
}  // namespace tpusim
