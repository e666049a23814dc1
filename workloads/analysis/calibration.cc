#include "workloads/analysis/calibration.h"

#include <cmath>
#include <cstdio>

#include "config/hw_loader.h"

namespace tpusim {

namespace {

std::vector<double> range(double lo, double hi, double step) {
  std::vector<double> v;
  for (double x = lo; x <= hi + step / 2; x += step) v.push_back(std::round(x * 1000) / 1000);
  return v;
}

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

double mape_of(const std::vector<FidelityResult>& r) { return mean_abs_pct_error(r); }

// The smallest MAPE improvement (percentage points) for which the fit moves a parameter.
constexpr double kMinGainPct = 0.1;

}  // namespace

const std::vector<CalibratedParam>& calibrated_params() {
  // Priors: what one would assume from the hardware's public description and from HBM2 data
  // sheets, before looking at any measurement (docs/calibration.md gives the reasoning).
  static const std::vector<CalibratedParam> params = {
      {"chip.hbm.efficiency", "fraction",
       "streaming fraction of peak HBM bandwidth (refresh, bus turnarounds, page misses)", 0.90,
       range(0.80, 1.00, 0.01)},
      {"chip.hbm.latency_ns", "ns", "DMA request to first data: DRAM access plus the on-chip network", 250,
       range(100, 600, 25)},
      {"chip.core.sequencer.launch_cycles", "cycles",
       "program launch to first issue plus completion signalling (host doorbell, scalar core start)", 1000,
       range(0, 3000, 100)},
      {"chip.core.dma.setup_cycles", "cycles", "descriptor issue per DMA", 64, {16, 32, 64, 128, 256}},
      {"chip.core.vpu.xlu_cycles_per_vreg", "cycles",
       "cross-lane unit throughput: cycles per vreg reduced across lanes, transposed or broadcast", 8,
       {1, 2, 4, 6, 8, 12, 16, 24, 32}},
      {"chip.core.vpu.eup_cycles_per_vreg", "cycles", "transcendental unit throughput: cycles per vreg", 4,
       {1, 2, 4, 8, 16}},
      {"chip.core.vpu.pipeline_latency_cycles", "cycles", "issue to last result of a vector block", 32,
       {8, 16, 32, 48, 64}},
      {"chip.core.mxu.weight_load_rows_per_cycle", "rows/cycle",
       "weight rows shifted into a systolic array per cycle", 8, {1, 2, 4, 8, 16}},
  };
  return params;
}

ParamValues prior_values() {
  ParamValues v;
  for (const auto& p : calibrated_params()) v.push_back(p.prior);
  return v;
}

std::vector<Override> param_overrides(const ParamValues& values) {
  std::vector<Override> o;
  const auto& params = calibrated_params();
  for (size_t i = 0; i < params.size() && i < values.size(); ++i)
    o.push_back({params[i].path, format_value(values[i]), "calibration"});
  return o;
}

RowRunner make_row_runner(const std::string& hw_path, const std::string& engine) {
  return [hw_path, engine](const std::vector<CalibrationRow>& rows, const ParamValues& values) {
    const HwConfig hw = load_hw_config(hw_path, param_overrides(values));
    std::vector<FidelityResult> out;
    out.reserve(rows.size());
    for (const auto& row : rows) out.push_back(run_fidelity_row(row, hw, engine));
    return out;
  };
}

FitResult fit_params(const std::vector<CalibrationRow>& rows, const RowRunner& run, int max_sweeps) {
  const auto& params = calibrated_params();
  FitResult fit;
  fit.values = prior_values();
  fit.mape = mape_of(run(rows, fit.values));
  fit.evaluations = 1;
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    bool changed = false;
    for (size_t p = 0; p < params.size(); ++p) {
      for (double v : params[p].grid) {
        if (v == fit.values[p]) continue;
        ParamValues trial = fit.values;
        trial[p] = v;
        const double m = mape_of(run(rows, trial));
        ++fit.evaluations;
        // A value moves away from the current one only for a real gain: a parameter the rows do
        // not pin down stays at its prior instead of drifting to soak up another parameter's
        // misfit (kMinGainPct).
        if (m < fit.mape - kMinGainPct) {
          fit.mape = m;
          fit.values = trial;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return fit;
}

LeaveOneOut leave_one_out(const std::vector<CalibrationRow>& rows, const RowRunner& run, int max_sweeps) {
  LeaveOneOut loo;
  double sum = 0;
  for (size_t held = 0; held < rows.size(); ++held) {
    std::vector<CalibrationRow> train;
    for (size_t i = 0; i < rows.size(); ++i)
      if (i != held) train.push_back(rows[i]);
    const FitResult fit = fit_params(train, run, max_sweeps);
    LeaveOneOutRow r{rows[held], run({rows[held]}, fit.values).front(), fit.values};
    sum += std::abs(r.predicted.error_pct);
    loo.max_abs = std::max(loo.max_abs, std::abs(r.predicted.error_pct));
    loo.rows.push_back(std::move(r));
  }
  loo.mape = rows.empty() ? 0 : sum / double(rows.size());
  return loo;
}

}  // namespace tpusim
