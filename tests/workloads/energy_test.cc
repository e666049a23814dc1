// Energy, power and cost (docs/energy.md): the energy rule on a hand-computed case, the events the
// op profile counts, the calibration to the published TPU v3/v4 chip power (min and max fitted, the
// mean a held-out check), physical bounds on the shipped workloads, and the report fields.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "config/hw_loader.h"
#include "sim/hw/resolved_hw.h"
#include "workloads/report/energy_report.h"
#include "workloads/loop/kernel_run.h"
#include "workloads/report/report.h"
#include "workloads/report/training_report.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

const std::string kRoot = std::string(TPUSIM_SOURCE_DIR) + "/configs/";

HwConfig hw(const std::string& name, const std::vector<Override>& ovs = {}) {
  return load_hw_config(kRoot + "hw/" + name + ".yaml", ovs);
}
WorkloadConfig workload(const std::string& name, const std::vector<Override>& ovs = {}) {
  return load_workload_config(kRoot + "workloads/" + name + ".yaml", ovs);
}
KernelRunResult run_k(const HwConfig& h, const WorkloadConfig& w) {
  KernelRunOptions o;
  o.engine = "analytical";
  return run_kernel(h, w, o);
}
TrainingRunResult run_t(const HwConfig& h, const WorkloadConfig& w) {
  TrainingRunOptions o;
  o.engine = "analytical";
  return run_training(h, w, o);
}

// Google Cloud TPU documentation, "System architecture": measured power per chip (W).
struct Published {
  const char* hw;
  double min_w, mean_w, max_w;
};
constexpr Published kV3{"v3-8", 123, 220, 262};
constexpr Published kV4{"v4-8", 90, 170, 192};
// docs/calibration.md, "Energy": the fitted figures must match within kFitTol; the held-out mean
// (steady power of MLPerf BERT-large, a device-bound training step) within kHeldOutTol.
constexpr double kFitTol = 0.02;
constexpr double kHeldOutTol = 0.10;

// The calibration kernel: a bf16 8192x2048x2048 matmul, MXU-bound (99% utilization).
KernelRunResult compute_bound(const HwConfig& h) {
  return run_k(h, workload("kernel_matmul_2048", {{"dtype", "bf16"}, {"shape.m", "8192"}}));
}

TEST(EnergyRule, HandComputedCase) {
  const PowerParams p{.static_w = 100, .mxu_pj_per_flop = 1, .vpu_pj_per_vreg_op = 1000, .hbm_pj_per_byte = 30,
                      .ici_pj_per_byte = 40};
  const Activity a{.flops = 1e12, .vreg_ops = 1e9, .hbm_bytes = 1e10, .ici_bytes = 1e9};
  const Energy e = energy(p, a, 2.0, 4);
  EXPECT_DOUBLE_EQ(e.static_j, 800);  // 100 W x 2 s x 4 chips
  EXPECT_DOUBLE_EQ(e.mxu_j, 1);       // 1e12 x 1 pJ
  EXPECT_DOUBLE_EQ(e.vpu_j, 1);       // 1e9 x 1000 pJ
  EXPECT_DOUBLE_EQ(e.hbm_j, 0.3);     // 1e10 x 30 pJ
  EXPECT_DOUBLE_EQ(e.ici_j, 0.04);    // 1e9 x 40 pJ
  EXPECT_DOUBLE_EQ(e.total_j(), 802.34);
  EXPECT_DOUBLE_EQ(average_power_w_per_chip(e, 2.0, 4), 802.34 / 8);
  EXPECT_EQ(average_power_w_per_chip(e, 0, 4), 0);
}

TEST(EnergyRule, ActivitySumsTheOpProfile) {
  OpProfile p;
  OpProfileEntry a, b;
  a.flops = 10, a.vpu_vreg_ops = 3, a.hbm_bytes = 100, a.ici_bytes = 7;
  b.flops = 5, b.vpu_vreg_ops = 1, b.hbm_bytes = 50, b.ici_bytes = 0;
  p.entries = {a, b};
  const Activity x = activity_of(p).scaled(2);
  EXPECT_EQ(x.flops, 30);
  EXPECT_EQ(x.vreg_ops, 8);
  EXPECT_EQ(x.hbm_bytes, 300);
  EXPECT_EQ(x.ici_bytes, 14);
}

TEST(Energy, KernelEventsAreTheKernelsCounts) {
  const HwConfig h = hw("v3-8");
  const KernelRunResult r = run_k(h, workload("kernel_layernorm_2048x768"));
  const Activity a = activity_of(r.run.op_profile);
  EXPECT_EQ(a.hbm_bytes, double(r.info.hbm_bytes));
  EXPECT_GT(a.vreg_ops, 0);  // a layernorm is VPU work
  EXPECT_EQ(a.ici_bytes, 0);
  const auto e = kernel_energy(h, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->chips, 1);
  EXPECT_DOUBLE_EQ(e->energy.static_j, 123 * r.run.device_time_s);
  EXPECT_GT(e->energy.vpu_j, 0);
  EXPECT_GT(e->energy.hbm_j, 0);
}

// The training runs the held-out check and the bounds share (each simulated once).
const TrainingRunResult& mlperf(const std::string& hw_name) {
  static std::map<std::string, TrainingRunResult> cache;
  auto it = cache.find(hw_name);
  if (it == cache.end()) {
    const std::string w = hw_name == "v3-32" ? "mlperf_bert_large_v3-32" : "mlperf_bert_large_v4-16";
    it = cache.emplace(hw_name, run_t(hw(hw_name), workload(w))).first;
  }
  return it->second;
}

TEST(EnergyCalibration, MinAndMaxMatchThePublishedChipPower) {
  for (const Published& pub : {kV3, kV4}) {
    SCOPED_TRACE(pub.hw);
    const HwConfig h = hw(pub.hw);
    ASSERT_TRUE(h.chip.power);
    EXPECT_NEAR(h.chip.power->static_w, pub.min_w, kFitTol * pub.min_w);  // an idle chip
    const KernelRunResult r = compute_bound(h);
    ASSERT_GT(double(r.info.flops) / (r.run.device_time_s * resolve_hw(h).core_peak_tflop_per_s * 1e12), 0.95)
        << "the calibration kernel must be compute-bound";
    const auto e = kernel_energy(h, r);
    ASSERT_TRUE(e);
    EXPECT_NEAR(e->all_cores_power_w_per_chip, pub.max_w, kFitTol * pub.max_w);
  }
}

TEST(EnergyCalibration, HeldOutMeanOnMlperfBertLarge) {
  // Not fitted: the steady power of a device-bound training step against the published mean.
  for (const auto& [hw_name, pub] : {std::pair{"v3-32", kV3}, std::pair{"v4-16", kV4}}) {
    const auto e = training_energy(hw(hw_name), mlperf(hw_name));
    ASSERT_TRUE(e);
    RecordProperty(std::string("steady_power_w_per_chip_") + hw_name, std::to_string(e->steady_power_w_per_chip));
    EXPECT_NEAR(e->steady_power_w_per_chip, pub.mean_w, kHeldOutTol * pub.mean_w) << hw_name;
  }
}

// Power between an idle chip and the published maximum (a little over for the fit's tolerance).
void expect_physical(double w, const PowerParams& p, double max_w, const std::string& what) {
  EXPECT_GE(w, p.static_w - 1e-9) << what;
  EXPECT_LE(w, max_w * (1 + kFitTol)) << what;
}

TEST(EnergyBounds, ShippedKernelsStayWithinIdleAndMax) {
  for (const Published& pub : {kV3, kV4}) {
    const HwConfig h = hw(pub.hw);
    for (const char* k : {"kernel_attention_16x512x64", "kernel_encoder_block_512x1024", "kernel_layernorm_2048x768",
                          "kernel_matmul_512", "kernel_matmul_1024", "kernel_matmul_2048", "kernel_softmax_2048x2048"}) {
      const auto e = kernel_energy(h, run_k(h, workload(k)));
      ASSERT_TRUE(e);
      expect_physical(e->average_power_w_per_chip, *h.chip.power, pub.max_w, std::string(pub.hw) + " " + k);
      expect_physical(e->all_cores_power_w_per_chip, *h.chip.power, pub.max_w, std::string(pub.hw) + " " + k + " (all cores)");
    }
  }
}

TEST(EnergyBounds, ShippedTrainingWorkloadsStayWithinIdleAndMax) {
  const std::pair<const char*, const char*> runs[] = {
      {"bert_base_mrpc_v3-8", "v3-8"}, {"bert_base_mrpc_v3-8_bf16", "v3-8"}, {"bert_base_sst2_v3-8", "v3-8"},
      {"bert_base_mrpc_v2-8", "v2-8"}};
  for (const auto& [w, h_name] : runs) {
    const HwConfig h = hw(h_name);
    const auto e = training_energy(h, run_t(h, workload(w)));
    ASSERT_TRUE(e);
    // v2 has no published power: v3's maximum bounds it (half the MXUs at a lower clock).
    expect_physical(e->average_power_w_per_chip, *h.chip.power, kV3.max_w, w);
    expect_physical(e->steady_power_w_per_chip, *h.chip.power, kV3.max_w, w);
    EXPECT_GT(e->examples_per_j, 0);
  }
  for (const auto& [hw_name, pub] : {std::pair{"v3-32", kV3}, std::pair{"v4-16", kV4}}) {
    const HwConfig h = hw(hw_name);
    const auto e = training_energy(h, mlperf(hw_name));
    ASSERT_TRUE(e);
    expect_physical(e->average_power_w_per_chip, *h.chip.power, pub.max_w, hw_name);
    expect_physical(e->steady_power_w_per_chip, *h.chip.power, pub.max_w, hw_name);
    EXPECT_GT(e->total.ici_j, 0) << "data-parallel gradients cross ICI";
  }
}

TEST(EnergyReport, TrainingReportHasEnergyAndCost) {
  const HwConfig h = hw("v3-8");
  const WorkloadConfig w = workload("bert_base_mrpc_v3-8");
  const TrainingRunResult r = run_t(h, w);
  const nlohmann::json j = make_training_report(h, w, r, RunContext{});
  const nlohmann::json& e = j["summary"]["energy"];
  for (const char* k : {"per_step_j", "total_j", "average_power_w_per_chip", "examples_per_j"}) {
    ASSERT_TRUE(e.contains(k)) << k;
    EXPECT_GT(e[k].get<double>(), 0) << k;
    EXPECT_TRUE(j["units"].contains(std::string("summary.energy.") + k)) << k;
  }
  // The run's energy divided back: average power x time x chips.
  EXPECT_NEAR(e["total_j"].get<double>(),
              e["average_power_w_per_chip"].get<double>() * r.total_time_s * h.slice.chips(), 1e-6 * e["total_j"].get<double>());
  double parts = 0;
  for (const auto& [k, v] : e["total_by_component_j"].items()) parts += v.get<double>();
  EXPECT_NEAR(parts, e["total_j"].get<double>(), 1e-9 * parts);
  const nlohmann::json& c = j["summary"]["cost"];
  EXPECT_DOUBLE_EQ(c["usd_per_chip_hour"].get<double>(), 2.00);
  EXPECT_DOUBLE_EQ(c["usd_total"].get<double>(), r.total_time_s / 3600 * 4 * 2.00);
  EXPECT_NE(format_training_summary(h, w, r, RunContext{}).find("examples/J"), std::string::npos);

  // The price is editable with --set; a chip without power or cost reports null.
  const HwConfig cheap = hw("v3-8", {{"chip.cost.usd_per_chip_hour", "1.5"}});
  EXPECT_DOUBLE_EQ(training_cost(cheap, r)->usd_total, r.total_time_s / 3600 * 4 * 1.5);
  HwConfig bare = h;
  bare.chip.power.reset();
  bare.chip.cost.reset();
  const nlohmann::json b = make_training_report(bare, w, r, RunContext{});
  EXPECT_TRUE(b["summary"]["energy"].is_null());
  EXPECT_TRUE(b["summary"]["cost"].is_null());
  EXPECT_EQ(format_training_summary(bare, w, r, RunContext{}).find("examples/J"), std::string::npos);
}

TEST(EnergyReport, KernelReportHasEnergy) {
  const HwConfig h = hw("v3-8");
  const WorkloadConfig w = workload("kernel_matmul_512");
  const KernelRunResult r = run_k(h, w);
  const nlohmann::json j = make_report(h, w, r, RunContext{});
  const nlohmann::json& e = j["summary"]["energy"];
  for (const char* k : {"total_j", "average_power_w_per_chip", "all_cores_power_w_per_chip"}) {
    ASSERT_TRUE(e.contains(k)) << k;
    EXPECT_GT(e[k].get<double>(), 0) << k;
  }
  EXPECT_GT(j["summary"]["cost"]["usd_total"].get<double>(), 0);
  EXPECT_NE(format_summary(h, w, r, RunContext{}).find("energy"), std::string::npos);
}

}  // namespace
}  // namespace tpusim
