// Fidelity benchmark: simulated vs measured cycles for every row of the TPU v3 calibration data.
//   build/bench/fidelity/tpusim_fidelity [--hw configs/hw/v3-8.yaml] [--data data/tpu_v3_core_calibration.csv]
//                                        [--engine systemc|analytical]
#include <cstdio>
#include <cstring>
#include <string>

#include "config/hw_loader.h"
#include "sim/base/sim_error.h"
#include "workloads/fidelity.h"

int main(int argc, char** argv) {
  std::string hw_path = std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml";
  std::string data = std::string(TPUSIM_SOURCE_DIR) + "/data/tpu_v3_core_calibration.csv";
  std::string engine = "systemc";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--hw")) hw_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--data")) data = argv[i + 1];
    else if (!std::strcmp(argv[i], "--engine")) engine = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--hw FILE] [--data CSV] [--engine systemc|analytical]\n", argv[0]);
      return 2;
    }
  }
  try {
    auto hw = tpusim::load_hw_config(hw_path);
    auto rows = tpusim::load_calibration(data);
    std::vector<tpusim::FidelityResult> results;
    std::printf("Fidelity vs measured TPU v3 TensorCore cycles (%s, engine %s)\n", hw_path.c_str(), engine.c_str());
    std::printf("%-14s %-32s %12s %12s %8s %12s %12s\n", "kernel", "shape", "simulated", "measured", "error",
                "ideal_mxu", "ideal_hbm");
    for (const auto& row : rows) {
      auto r = tpusim::run_fidelity_row(row, hw, engine);
      std::printf("%-14s %-32s %12llu %12.0f %+7.1f%% %12llu %12llu\n", row.kernel.c_str(), row.shape_text.c_str(),
                  (unsigned long long)r.simulated_cycles, row.measured_cycles, r.error_pct,
                  (unsigned long long)r.ideal_compute_cycles, (unsigned long long)r.ideal_hbm_cycles);
      results.push_back(r);
    }
    std::printf("MAPE %.1f%% over %zu rows (cycles of the %.0f MHz core clock; ideal_* are lower bounds)\n",
                tpusim::mean_abs_pct_error(results), results.size(), hw.chip.core.clock_mhz);
  } catch (const tpusim::ConfigError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const tpusim::SimError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
  return 0;
}
