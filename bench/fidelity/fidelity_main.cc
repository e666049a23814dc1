// Fidelity benchmark: simulated vs measured cycles for every row of the TPU v3 calibration data,
// in sample (the shipped config) and leave-one-out (every calibrated parameter refitted without
// the row it predicts; docs/calibration.md).
//   build/bench/fidelity/tpusim_fidelity [--hw configs/hw/v3-8.yaml] [--data data/tpu_v3_core_calibration.csv]
//                                        [--engine systemc|analytical] [--loo-engine analytical|systemc]
//                                        [--no-loo] [--fit]
// --fit also prints the fit on all rows (what the chip config's calibrated values should be).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "config/hw_loader.h"
#include "sim/base/sim_error.h"
#include "workloads/analysis/calibration.h"
#include "workloads/analysis/fidelity.h"

namespace {

void print_values(const tpusim::ParamValues& v) {
  const auto& params = tpusim::calibrated_params();
  for (size_t i = 0; i < params.size(); ++i)
    std::printf("  %-42s %10g %s\n", params[i].path.c_str(), v[i], params[i].unit.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string hw_path = std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml";
  std::string data = std::string(TPUSIM_SOURCE_DIR) + "/data/tpu_v3_core_calibration.csv";
  std::string engine = "systemc", loo_engine = "analytical";
  bool loo = true, fit = false;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--hw") && has_value) hw_path = argv[++i];
    else if (!std::strcmp(argv[i], "--data") && has_value) data = argv[++i];
    else if (!std::strcmp(argv[i], "--engine") && has_value) engine = argv[++i];
    else if (!std::strcmp(argv[i], "--loo-engine") && has_value) loo_engine = argv[++i];
    else if (!std::strcmp(argv[i], "--no-loo")) loo = false;
    else if (!std::strcmp(argv[i], "--fit")) fit = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--hw FILE] [--data CSV] [--engine systemc|analytical] [--loo-engine E] [--no-loo] "
                   "[--fit]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    auto hw = tpusim::load_hw_config(hw_path);
    auto rows = tpusim::load_calibration(data);
    std::vector<tpusim::FidelityResult> results;
    std::printf("Fidelity vs measured TPU v3 TensorCore cycles (%s, engine %s)\n", hw_path.c_str(), engine.c_str());
    std::printf("%-14s %-38s %12s %12s %8s %12s %12s\n", "kernel", "shape", "simulated", "measured", "error",
                "ideal_mxu", "ideal_hbm");
    for (const auto& row : rows) {
      auto r = tpusim::run_fidelity_row(row, hw, engine);
      std::printf("%-14s %-38s %12llu %12.0f %+7.1f%% %12llu %12llu\n", row.kernel.c_str(), row.shape_text.c_str(),
                  (unsigned long long)r.simulated_cycles, row.measured_cycles, r.error_pct,
                  (unsigned long long)r.ideal_compute_cycles, (unsigned long long)r.ideal_hbm_cycles);
      results.push_back(r);
    }
    std::printf("in-sample MAPE %.1f%% over %zu rows (cycles of the %.0f MHz core clock; ideal_* are lower bounds)\n",
                tpusim::mean_abs_pct_error(results), results.size(), hw.chip.core.clock_mhz);

    const auto run = tpusim::make_row_runner(hw_path, loo_engine);
    if (fit) {
      const auto f = tpusim::fit_params(rows, run);
      std::printf("\nfit on all rows (engine %s, %d evaluations): MAPE %.1f%%\n", loo_engine.c_str(), f.evaluations,
                  f.mape);
      print_values(f.values);
    }
    if (loo) {
      std::printf("\nleave-one-out: every calibrated parameter refitted without the row (engine %s)\n",
                  loo_engine.c_str());
      const auto l = tpusim::leave_one_out(rows, run);
      std::printf("%-14s %-38s %12s %12s %8s\n", "kernel", "shape", "predicted", "measured", "error");
      for (const auto& r : l.rows)
        std::printf("%-14s %-38s %12llu %12.0f %+7.1f%%\n", r.row.kernel.c_str(), r.row.shape_text.c_str(),
                    (unsigned long long)r.predicted.simulated_cycles, r.row.measured_cycles, r.predicted.error_pct);
      std::printf("leave-one-out MAPE %.1f%% (largest %.1f%%)\n", l.mape, l.max_abs);
      std::printf("refitted values per held-out row (sensitivity):\n");
      const auto& params = tpusim::calibrated_params();
      for (size_t p = 0; p < params.size(); ++p) {
        std::printf("  %-42s", params[p].path.c_str());
        for (const auto& r : l.rows) std::printf(" %7g", r.values[p]);
        std::printf("\n");
      }
    }
  } catch (const tpusim::ConfigError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const tpusim::SimError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
  return 0;
}
