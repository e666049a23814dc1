// Plans against the shipped configs: axis paths checked against the schemas at the sweep file's line,
// invalid points recorded instead of failing the sweep, keys that change with the configuration, and
// every shipped sweep planned.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "config/hw_loader.h"
#include "config/tree.h"
#include "sweep/plan.h"
#include "tests/sweep/sweep_test_util.h"
#include "workloads/report/report.h"
#include "workloads/config/workload_config.h"

namespace tpusim::testing {
namespace {

using sweep::plan_sweep;

const std::string kRowsAxis = "axes:\n  - {path: hw.chip.core.mxu.rows, values: [64, 128]}\n";

TEST(SweepPlan, PointsCarryTheirOverridesFilesAndConfigHash) {
  const auto plan = plan_sweep(sweep_text(kKernelBase + "set: [workload.dtype=bf16]\n" + kRowsAxis));
  EXPECT_EQ(plan.kind, "kernel");
  EXPECT_EQ(plan.engine, "analytical");
  ASSERT_EQ(plan.points.size(), 2u);
  const auto& p = plan.points[1];
  EXPECT_EQ(p.hw_file, std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  EXPECT_EQ(p.sets, (std::vector<std::string>{"workload.dtype=bf16", "hw.chip.core.mxu.rows=128"}));
  EXPECT_TRUE(p.invalid.empty());
  // The hash is the one `tpusim run` puts in report.json for the same inputs.
  const HwConfig hw = load_hw_config(p.hw_file, {parse_override("chip.core.mxu.rows=128")});
  const WorkloadConfig w = load_workload_config(p.workload_file, {parse_override("dtype=bf16")});
  EXPECT_EQ(p.config_hash, config_hash(dump_hw_config(hw), dump_workload_config(w)));
  EXPECT_NE(plan.points[0].key, plan.points[1].key);
  EXPECT_EQ(plan.columns[1], "rows");
}

TEST(SweepPlan, AnInvalidValueIsThatPointsFailure) {
  const auto plan = plan_sweep(sweep_text(kKernelBase + "axes:\n  - {path: chip.core.mxu.count, values: [0, 2]}\n"));
  ASSERT_EQ(plan.points.size(), 2u);
  EXPECT_TRUE(contains(plan.points[0].invalid, "chip.core.mxu.count: value '0' must be an integer in [1, 16]"))
      << plan.points[0].invalid;
  EXPECT_TRUE(plan.points[0].config_hash.empty());
  EXPECT_TRUE(plan.points[1].invalid.empty());
}

struct BadPlan {
  const char* name;
  std::string yaml;
  int line;
  std::string yaml_path, rule_part, suggestion_part;
};

class SweepPlanErrors : public ::testing::TestWithParam<BadPlan> {};

TEST_P(SweepPlanErrors, PointAtTheSweepFile) {
  const BadPlan& b = GetParam();
  std::string what;
  const ConfigErrorInfo e = config_error_of([&] { plan_sweep(sweep_text(b.yaml)); }, &what);
  EXPECT_EQ(e.file, kTestSweepFile) << what;
  EXPECT_EQ(e.line, b.line) << what;
  EXPECT_EQ(e.yaml_path, b.yaml_path) << what;
  EXPECT_TRUE(contains(e.rule, b.rule_part)) << what;
  EXPECT_TRUE(contains(e.suggestion, b.suggestion_part)) << what;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SweepPlanErrors,
    ::testing::Values(
        BadPlan{"hw_path", kKernelBase + "axes:\n  - {path: hw.chip.core.mxu.rowz, values: [1]}\n", 5, "axes[0].path",
                "unknown key in 'chip.core.mxu'", "did you mean 'rows'"},
        BadPlan{"below_a_number", kKernelBase + "axes:\n  - {path: chip.core.clock_mhz.x, values: [1]}\n", 5,
                "axes[0].path", "has no keys below it", "set it whole"},
        BadPlan{"no_such_key", kKernelBase + "axes:\n  - {path: nokey, values: [1]}\n", 5, "axes[0].path",
                "not a key of the hardware or the workload config", ""},
        BadPlan{"set_item", kKernelBase + "set: [chip.core.mxu.cuont=2]\n" + kRowsAxis, 4, "set[0]", "unknown key",
                "did you mean 'count'"},
        BadPlan{"set_syntax", kKernelBase + "set: [no-equals]\n" + kRowsAxis, 4, "set[0]", "expected PATH=VALUE", ""},
        BadPlan{"missing_hw", "hw: ../hw/v3-9.yaml\nworkload: ../workloads/kernel_matmul_1024.yaml\n" + kRowsAxis, 1, "hw",
                "file not found", "v3-8.yaml"},
        BadPlan{"missing_axis_file", kKernelBase + "axes:\n  - {path: workload, values: [../workloads/nope.yaml]}\n", 5,
                "axes[0].values[0]", "file not found", ""},
        BadPlan{"engine", "engine: systemcc\nhw: ../hw/v3-8.yaml\nworkload: ../workloads/kernel_matmul_1024.yaml\n" + kRowsAxis,
                1, "engine", "not a known engine", "did you mean 'systemc'"},
        BadPlan{"plot_column_of_other_kind",
                kKernelBase + kRowsAxis + "plots:\n  - {name: p, x: [rows], y: [steady_step_time_s]}\n", 7,
                "plots[0].y[0]", "not a column of this sweep (workloads of kind kernel)", ""}),
    [](const ::testing::TestParamInfo<BadPlan>& i) { return std::string(i.param.name); });

TEST(SweepPlan, CommandLineSetsApplyToEveryPointButNotToAnAxis) {
  sweep::PlanOptions o;
  o.extra_sets = {"workload.shape.m=512"};
  const auto plan = plan_sweep(sweep_text(kKernelBase + kRowsAxis), o);
  EXPECT_EQ(plan.points[0].sets.front(), "workload.shape.m=512");
  const auto plain = plan_sweep(sweep_text(kKernelBase + kRowsAxis));
  EXPECT_NE(plan.sweep_hash, plain.sweep_hash);  // shards run with other --set flags do not merge
  o.extra_sets = {"hw.chip.core.mxu.rows=32"};
  std::string what;
  const auto e = config_error_of([&] { plan_sweep(sweep_text(kKernelBase + kRowsAxis), o); }, &what);
  EXPECT_EQ(e.file, "--set");
  EXPECT_TRUE(contains(e.rule, "is an axis of the sweep")) << what;
}

// The binary's hardware rule (app/cmd_run.cc): a file, else a built-in name; the built-ins served
// from the source tree's configs/hw/ as the binary serves its embedded copies.
sweep::PlanOptions with_builtin_hw() {
  static const std::map<std::string, std::string> builtins = [] {
    std::map<std::string, std::string> m;
    const std::filesystem::path root(TPUSIM_SOURCE_DIR);
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / kBuiltinHwDir))
      if (e.is_regular_file() && e.path().extension() == ".yaml")
        m[std::filesystem::relative(e.path(), root).string()] = config::read_file(e.path().string());
    return m;
  }();
  sweep::PlanOptions o;
  o.load_hw = [](const std::string& ref, const WorkloadConfig& w, const std::vector<Override>& overrides,
                 std::string* origin) {
    if (!ref.empty()) return load_hw_ref(ref, "", builtins, overrides, origin, {"--hw", "", 0, "", "", ""});
    if (!w.hw.empty())
      return load_hw_ref(w.hw, w.hw_dir, builtins, overrides, origin, {w.hw_origin, "hw", w.hw_line, "", "", ""});
    return load_builtin_hw("v3-8", builtins, overrides, origin);
  };
  return o;
}

TEST(SweepPlan, ShippedSweepsPlanWithoutInvalidPoints) {
  const auto files = config::yaml_files_in(std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps");
  ASSERT_GE(files.size(), 5u);
  for (const auto& f : files) {
    const auto plan = plan_sweep(f, with_builtin_hw());
    EXPECT_FALSE(plan.points.empty()) << f;
    EXPECT_LE(plan.points.size(), 30u) << f << ": shipped sweeps stay small";
    for (const auto& p : plan.points) EXPECT_TRUE(p.invalid.empty()) << f << " point " << p.point.id << ": " << p.invalid;
    EXPECT_FALSE(plan.config.plots.empty()) << f;
  }
}

}  // namespace
}  // namespace tpusim::testing
