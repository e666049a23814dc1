// Fidelity tier: the timing model against measured TPU v3 cycles, and the two engines against
// each other on compiled kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/compile.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "workloads/analysis/calibration.h"
#include "workloads/analysis/fidelity.h"

namespace tpusim {
namespace {

const std::string kRoot = TPUSIM_SOURCE_DIR;

HwConfig v3() { return load_hw_config(kRoot + "/configs/hw/v3-8.yaml"); }

// In sample (the shipped config): mean absolute percentage error <= 10% over the measured rows,
// with no row off by more than 20% (a model tuned to the mean but wrong per kernel class would
// fail), and never below a physical lower bound.
TEST(Fidelity, MeasuredTpuV3RowsWithinTolerance) {
  auto hw = v3();
  auto rows = load_calibration(kRoot + "/data/tpu_v3_core_calibration.csv");
  ASSERT_EQ(rows.size(), 7u);
  std::vector<FidelityResult> results;
  for (const auto& row : rows) {
    auto r = run_fidelity_row(row, hw, "systemc");
    EXPECT_LT(std::abs(r.error_pct), 20.0) << row.kernel << " " << row.shape_text << ": simulated "
                                            << r.simulated_cycles << " vs measured " << row.measured_cycles;
    // A simulated time below a physical lower bound is a modelling bug.
    EXPECT_GE(r.simulated_cycles, r.ideal_compute_cycles) << row.kernel;
    EXPECT_GE(r.simulated_cycles, r.ideal_hbm_cycles) << row.kernel;
    results.push_back(r);
  }
  EXPECT_LE(mean_abs_pct_error(results), 10.0);
}

// Out of sample: every calibrated parameter refitted without each row in turn predicts that row
// with a mean absolute error <= 10% and no row beyond 20% (docs/calibration.md).
TEST(Fidelity, LeaveOneOutPredictsEachRowFromTheOthers) {
  auto rows = load_calibration(kRoot + "/data/tpu_v3_core_calibration.csv");
  const LeaveOneOut loo = leave_one_out(rows, make_row_runner(kRoot + "/configs/hw/v3-8.yaml", "analytical"));
  ASSERT_EQ(loo.rows.size(), rows.size());
  for (const auto& r : loo.rows)
    EXPECT_LT(std::abs(r.predicted.error_pct), 20.0) << r.row.kernel << " " << r.row.shape_text << ": predicted "
                                                      << r.predicted.simulated_cycles << " vs measured "
                                                      << r.row.measured_cycles;
  EXPECT_LE(loo.mape, 10.0);
}

// The chip config holds the fit on all rows: a change to the timing model that is not followed
// by a refit (and by docs/calibration.md) fails here.
TEST(Fidelity, ShippedCalibrationIsTheFitOnAllRows) {
  auto rows = load_calibration(kRoot + "/data/tpu_v3_core_calibration.csv");
  const std::string path = kRoot + "/configs/hw/v3-8.yaml";
  const FitResult fit = fit_params(rows, make_row_runner(path, "analytical"));
  const HwConfig shipped = load_hw_config(path);
  const HwConfig fitted = load_hw_config(path, param_overrides(fit.values));
  EXPECT_EQ(dump_hw_config(shipped), dump_hw_config(fitted)) << "refit: build/bench/fidelity/tpusim_fidelity --fit";
}

// The SystemC engine (HBM channels with queues) and the analytical engine (one bandwidth server,
// no channel contention) share formulas; on compiled kernels they agree within a few percent.
TEST(Fidelity, SystemcAndAnalyticalAgreeOnCompiledKernels) {
  auto hw = v3();
  for (const auto& row : load_calibration(kRoot + "/data/tpu_v3_core_calibration.csv")) {
    auto s = run_fidelity_row(row, hw, "systemc");
    auto a = run_fidelity_row(row, hw, "analytical");
    double rel = std::abs(double(s.simulated_cycles) - double(a.simulated_cycles)) / double(a.simulated_cycles);
    EXPECT_LT(rel, 0.05) << row.kernel << " " << row.shape_text << ": systemc " << s.simulated_cycles
                         << " analytical " << a.simulated_cycles;
  }
}

// Shapes outside the calibration sample: the model must stay physical (between the lower bounds
// and a sane multiple of them), not just fit the seven rows.
TEST(Fidelity, OtherShapesStayNearTheirBounds) {
  auto hw = v3();
  struct Case {
    const char* kernel;
    std::map<std::string, uint64_t> shape;
  };
  for (const Case& c : std::vector<Case>{{"matmul", {{"m", 768}, {"k", 3072}, {"n", 768}}},
                                         {"matmul", {{"m", 4096}, {"k", 1024}, {"n", 256}}},
                                         {"layernorm", {{"rows", 4096}, {"cols", 1024}}},
                                         {"softmax", {{"rows", 512}, {"cols", 512}}},
                                         {"attention", {{"heads", 12}, {"seq", 128}, {"head_dim", 64}}},
                                         {"encoder_block", {{"seq", 128}, {"hidden", 768}, {"heads", 12}, {"ffn", 3072}}}}) {
    compiler::KernelRequest req{c.kernel, c.shape};
    auto p = compiler::compile_kernel(req, hw);
    auto r = make_engine("systemc", hw)->run(p, nullptr);
    auto ideal = compiler::ideal_cycles(p, hw);
    uint64_t bound = std::max(ideal.compute_cycles, ideal.hbm_cycles);
    EXPECT_GE(r.device_cycles, bound) << c.kernel;
    EXPECT_LE(r.device_cycles, 6 * bound + 20000) << c.kernel;
  }
}

}  // namespace
}  // namespace tpusim
