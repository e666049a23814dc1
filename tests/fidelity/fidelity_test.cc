// Fidelity tier: the timing model against measured TPU v3 cycles, and the two engines against
// each other on compiled kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/compile.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "workloads/fidelity.h"

namespace tpusim {
namespace {

const std::string kRoot = TPUSIM_SOURCE_DIR;

HwConfig v3() { return load_hw_config(kRoot + "/configs/hw/v3-8.yaml"); }

// The target: mean absolute percentage error <= 15% over the measured rows, with no row
// off by more than 30% (a model tuned to the mean but wrong per kernel class would fail).
TEST(Fidelity, MeasuredTpuV3RowsWithinTolerance) {
  auto hw = v3();
  auto rows = load_calibration(kRoot + "/data/tpu_v3_core_calibration.csv");
  ASSERT_EQ(rows.size(), 7u);
  std::vector<FidelityResult> results;
  for (const auto& row : rows) {
    auto r = run_fidelity_row(row, hw, "systemc");
    EXPECT_LT(std::abs(r.error_pct), 30.0) << row.kernel << " " << row.shape_text << ": simulated "
                                            << r.simulated_cycles << " vs measured " << row.measured_cycles;
    // A simulated time below a physical lower bound is a modelling bug.
    EXPECT_GE(r.simulated_cycles, r.ideal_compute_cycles) << row.kernel;
    EXPECT_GE(r.simulated_cycles, r.ideal_hbm_cycles) << row.kernel;
    results.push_back(r);
  }
  EXPECT_LE(mean_abs_pct_error(results), 15.0);
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
