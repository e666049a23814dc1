#include "workloads/analysis/fidelity.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "base/config_error.h"
#include "compiler/compile.h"
#include "sim/engine/engine.h"

namespace tpusim {

std::vector<CalibrationRow> load_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError({path, "", 0, "", "cannot open calibration file", ""});
  std::vector<CalibrationRow> rows;
  std::string line;
  int lineno = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    if (header) {  // kernel,shape,tpu_v3_cycles
      header = false;
      continue;
    }
    std::stringstream ss(line);
    std::string kernel, shape, cycles;
    if (!std::getline(ss, kernel, ',') || !std::getline(ss, shape, ',') || !std::getline(ss, cycles, ','))
      throw ConfigError({path, "", lineno, line, "expected 'kernel,shape,cycles'", ""});
    CalibrationRow r;
    r.kernel = kernel;
    r.shape_text = shape;
    std::stringstream sh(shape);
    std::string kv;
    while (std::getline(sh, kv, ';')) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) throw ConfigError({path, "", lineno, kv, "expected key=value in shape", ""});
      r.shape[kv.substr(0, eq)] = std::stoull(kv.substr(eq + 1));
    }
    r.measured_cycles = std::stod(cycles);
    rows.push_back(std::move(r));
  }
  return rows;
}

FidelityResult run_fidelity_row(const CalibrationRow& row, const HwConfig& hw, const std::string& engine) {
  compiler::KernelRequest req;
  req.kernel = row.kernel;
  req.shape = row.shape;
  req.dtype = models::DType::kF32;
  req.precision = models::DotPrecision::kDefault;
  isa::Program p = compiler::compile_kernel(req, hw);
  auto eng = make_engine(engine, hw);
  RunResult r = eng->run(p, nullptr);
  FidelityResult f;
  f.row = row;
  f.simulated_cycles = r.device_cycles;
  auto ideal = compiler::ideal_cycles(p, hw);
  f.ideal_compute_cycles = ideal.compute_cycles;
  f.ideal_hbm_cycles = ideal.hbm_cycles;
  f.error_pct = (double(r.device_cycles) - row.measured_cycles) / row.measured_cycles * 100.0;
  return f;
}

double mean_abs_pct_error(const std::vector<FidelityResult>& results) {
  if (results.empty()) return 0;
  double s = 0;
  for (const auto& r : results) s += std::abs(r.error_pct);
  return s / double(results.size());
}

}  // namespace tpusim
