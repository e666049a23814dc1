// Fidelity against measured TPU cycles (data/tpu_v3_core_calibration.csv): each row is one kernel
// program measured on one TPU v3 TensorCore; we compile and simulate the same program.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/hw/hw_config.h"

namespace tpusim {

struct CalibrationRow {
  std::string kernel;
  std::map<std::string, uint64_t> shape;
  std::string shape_text;  // as written, e.g. "m=512;k=512;n=512"
  double measured_cycles = 0;
};

// Parses the calibration CSV (comment lines start with '#'). Throws ConfigError on a malformed row.
std::vector<CalibrationRow> load_calibration(const std::string& path);

struct FidelityResult {
  CalibrationRow row;
  uint64_t simulated_cycles = 0;
  uint64_t ideal_compute_cycles = 0;  // peak-FLOP bound
  uint64_t ideal_hbm_cycles = 0;      // compulsory HBM bytes at peak bandwidth
  double error_pct = 0;               // (simulated - measured) / measured * 100
};

// Compiles and simulates one row (f32 inputs, default precision, core 0 of chip 0).
FidelityResult run_fidelity_row(const CalibrationRow& row, const HwConfig& hw, const std::string& engine);

double mean_abs_pct_error(const std::vector<FidelityResult>& results);

}  // namespace tpusim
