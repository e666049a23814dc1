// The settings advisor (workloads/analysis/advisor.h) on bert-tiny: the candidates it runs, the ranking, the
// workload as given, and batch sizes that do not fit.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "config/hw_loader.h"
#include "workloads/analysis/advisor.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

const HwConfig& v3_8() {
  static const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  return hw;
}

WorkloadConfig tiny() {
  return load_workload_config_text("kind: training\nmodel: bert-tiny\nmax_length: 64\nper_device_batch_size: 4\n"
                                   "dataset: {train: 'uniform:5-60:256'}\n",
                                   "tiny.yaml");
}

TEST(Advisor, RanksPaddingsPrecisionsAndBatchesByTimeToTrain) {
  AdviceOptions o;
  o.batches = {2, 8};
  const std::vector<AdviceRow> rows = advise(v3_8(), tiny(), o);
  std::set<std::string> paddings, precisions;
  std::set<uint32_t> batches;
  int base = 0;
  for (const AdviceRow& r : rows) {
    paddings.insert(r.padding.to_string());
    precisions.insert(enum_name(r.precision));
    batches.insert(r.batch);
    base += r.is_base;
    EXPECT_TRUE(r.fits) << r.error;
  }
  EXPECT_EQ(paddings.size(), 6u);
  EXPECT_EQ(precisions.size(), 3u);
  EXPECT_EQ(batches, (std::set<uint32_t>{2, 4, 8}));
  EXPECT_EQ(base, 1);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_LE(rows[i - 1].total_time_s, rows[i].total_time_s);
  // Dynamic padding on TPU: a compile per distinct length, so `longest` loses to max_length here.
  const AdviceRow* longest = nullptr;
  const AdviceRow* max_length = nullptr;
  for (const AdviceRow& r : rows) {
    if (r.padding == data::PaddingSpec::longest() && !r.is_base && r.precision == Precision::kFp32 && r.batch == 4) longest = &r;
    if (r.is_base) max_length = &r;
  }
  ASSERT_TRUE(longest && max_length);
  EXPECT_GT(longest->compiles, max_length->compiles);
  EXPECT_GT(longest->total_time_s, max_length->total_time_s);
  EXPECT_NE(format_advice(rows, tiny()).find("recommendation:"), std::string::npos);
}

TEST(Advisor, BatchesThatDoNotFitAreReportedAndStopTheSearch) {
  HwConfig small = v3_8();
  small.chip.hbm.size_gib = 1;  // 0.5 GiB per core
  AdviceOptions o;
  o.batches = {4, 256, 512};
  WorkloadConfig w = tiny();
  w.training().dataset.train = "uniform:5-60:4096";  // enough examples for 256 per core
  const std::vector<AdviceRow> rows = advise(small, w, o);
  int misfits = 0;
  uint32_t misfit_batch = 0;
  for (const AdviceRow& r : rows)
    if (!r.fits) {
      ++misfits;
      misfit_batch = r.batch;
      EXPECT_NE(r.error.find("out of HBM"), std::string::npos) << r.error;
    }
  EXPECT_EQ(misfits, 1);  // larger batches are not tried once one does not fit
  EXPECT_GT(misfit_batch, 4u);
  for (const AdviceRow& r : rows) EXPECT_LE(r.batch, misfit_batch);
  EXPECT_FALSE(rows.back().fits);  // misfits rank last
}

// bert-tiny on 256 examples: compiling its programs takes most of the run, so the advice runs the
// recommended setting again with a persistent compile cache, and that second run is faster.
TEST(Advisor, SuggestsThePersistentCacheWhenCompilationDominates) {
  AdviceOptions o;
  o.batches = {4};
  const std::vector<AdviceRow> rows = advise(v3_8(), tiny(), o);
  const AdviceRow& top = rows.front();
  ASSERT_GE(top.compile_time_s, kCompileDominates * top.total_time_s);
  ASSERT_GE(top.rerun_with_cache_s, 0);
  EXPECT_LT(top.rerun_with_cache_s, top.total_time_s - 0.5 * top.compile_time_s);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_LT(rows[i].rerun_with_cache_s, 0);
  EXPECT_NE(format_advice(rows, tiny()).find("persistent compile cache"), std::string::npos);

  // A workload that already has the cache gets no such note.
  WorkloadConfig cached = tiny();
  cached.training().compile_cache.persistent_dir = (std::filesystem::temp_directory_path() / "tpusim-advisor-test").string();
  const std::vector<AdviceRow> again = advise(v3_8(), cached, o);
  EXPECT_LT(again.front().rerun_with_cache_s, 0);
  std::filesystem::remove_all(cached.training().compile_cache.persistent_dir);
}

// A Llama-family model: MaxText's remat policies are a dimension of the search, and a batch that does
// not fit keeping every activation is tried with policies that keep less. A miniature decoder of 8
// layers on a v6e-8 whose chips have 1 GiB of HBM: 16 sequences per chip need 0.52 GiB without
// recomputation, 32 need 1.01 GiB (0.19 GiB with full remat), 64 need 1.99 GiB (0.36).
TEST(Advisor, SearchesRematPoliciesForLlamaModels) {
  HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-8.yaml");
  hw.chip.hbm.size_gib = 1;
  const WorkloadConfig w = load_workload_config_text(
      "kind: training\nhw: v6e-8\nmodel: meta-llama/Llama-2-7b-hf\ntask: causal_lm\n"
      "model_config: {layers: 8, hidden: 256, heads: 8, kv_heads: 4, intermediate: 512, vocab: 1024}\n"
      "max_length: 256\nper_device_batch_size: 16\ndataset: {train: 'fixed:256:4096'}\nsteps: 2\nprecision: bf16\n"
      // Without the compiler's own rematerialization, which recomputes its way into 1 GiB at 32
      // whatever the policy: here the policies alone decide what fits.
      "framework: jax\nrematerialization: false\n",
      "deep_decoder.yaml");
  AdviceOptions o;
  o.batches = {32, 64};
  o.meshes = false;  // the policies alone (SearchesMeshesForLlamaModels has the meshes)
  const std::vector<AdviceRow> rows = advise(hw, w, o);
  std::set<std::string> policies_at_16;
  bool misfit_32 = false, fit_32 = false, larger_fits = false;
  for (const AdviceRow& r : rows) {
    if (r.batch == 16) policies_at_16.insert(enum_name(r.remat));
    if (r.batch == 32) (r.fits ? fit_32 : misfit_32) = true;
    if (r.batch == 64 && r.fits) larger_fits = true;
  }
  EXPECT_EQ(policies_at_16, (std::set<std::string>{"none", "minimal", "save_dot_except_mlp", "save_qkv_proj",
                                                   "qkv_proj_offloaded", "full"}));
  EXPECT_TRUE(misfit_32);    // keeping as much as at 16
  EXPECT_TRUE(fit_32);       // with a policy that keeps less
  EXPECT_TRUE(larger_fits);
  ASSERT_TRUE(rows.front().fits);
  EXPECT_NE(format_advice(rows, w).find("remat_policy " + std::string(enum_name(rows.front().remat))), std::string::npos);
}

// Llama family: the meshes, at the best padding, precision and policy: FSDP or data parallel over
// what a tensor axis of 1, 2 or 4 leaves (8 would split the 4 key/value heads unevenly); the
// recommendation names the mesh of the best. On a megacore chip (v5p) the mesh is over its chips.
WorkloadConfig small_decoder(const std::string& hw) {
  return load_workload_config_text(
      "kind: training\nhw: " + hw + "\nmodel: meta-llama/Llama-2-7b-hf\ntask: causal_lm\n"
      "model_config: {layers: 2, hidden: 256, heads: 8, kv_heads: 4, intermediate: 512, vocab: 1024}\n"
      "max_length: 128\nper_device_batch_size: 4\ndataset: {train: 'fixed:128:512'}\nsteps: 2\nprecision: bf16\n"
      "framework: jax\nsharding: fsdp\n",
      "small_decoder.yaml");
}

TEST(Advisor, SearchesMeshesForLlamaModels) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-8.yaml");
  AdviceOptions o;
  o.batches = {};
  const WorkloadConfig w = small_decoder("v6e-8");
  const std::vector<AdviceRow> rows = advise(hw, w, o);
  std::set<std::string> meshes;
  for (const AdviceRow& r : rows) {
    meshes.insert(r.mesh);
    if (r.mesh == "fsdp 4 x tensor 2") {
      EXPECT_EQ(r.sharding, Sharding::kFsdp);
      EXPECT_EQ(r.tensor, 2u);
      EXPECT_TRUE(r.fits) << r.error;
    }
    if (r.is_base) {
      EXPECT_EQ(r.mesh, "fsdp 8");
    }
  }
  EXPECT_EQ(meshes, (std::set<std::string>{"fsdp 8", "fsdp 4 x tensor 2", "fsdp 2 x tensor 4", "data 8",
                                           "data 4 x tensor 2", "data 2 x tensor 4"}));
  ASSERT_TRUE(rows.front().fits);
  const std::string text = format_advice(rows, w);
  EXPECT_NE(text.find("sharding " + std::string(enum_name(rows.front().sharding))), std::string::npos) << text;
  if (rows.front().tensor > 1) {
    EXPECT_NE(text.find("tensor: " + std::to_string(rows.front().tensor)), std::string::npos);
  }

  const HwConfig v5p = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v5p-8.yaml");
  std::set<std::string> megacore;
  for (const AdviceRow& r : advise(v5p, small_decoder("v5p-8"), o)) megacore.insert(r.mesh);
  EXPECT_EQ(megacore, (std::set<std::string>{"fsdp 4", "fsdp 2 x tensor 2", "fsdp 1 x tensor 4", "data 4",
                                             "data 2 x tensor 2"}));
}

}  // namespace
}  // namespace tpusim
