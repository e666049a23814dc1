// Calibration of the timing model's unpublished parameters against measured kernels, and its
// leave-one-out cross-validation (docs/calibration.md).
//
// Some hardware parameters are published (clock, MXU count and size, HBM bandwidth); others are
// not (HBM streaming efficiency and latency, launch cost, VPU unit throughputs...). Those are
// declared here once, each with its physical meaning, its search grid and a prior (the value a
// hardware engineer would assume before seeing any measurement). A fit is a coordinate descent over
// the grids from the priors, minimizing the mean absolute percentage error over a set of
// measured rows. Leave-one-out refits every calibrated parameter without each row in turn and
// predicts that row with the refit values: the error on rows a fit never saw, which is how the
// model does on a user's kernels.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "config/override.h"
#include "workloads/analysis/fidelity.h"

namespace tpusim {

struct CalibratedParam {
  std::string path;     // hardware-config path, as for `--set` (e.g. chip.hbm.efficiency)
  std::string unit;
  std::string meaning;  // what it is physically
  double prior = 0;     // the assumed value before any fit (the search starts there)
  std::vector<double> grid;  // values the fit may choose, ascending
};

// Every calibrated (not published) timing parameter of the TensorCore model.
const std::vector<CalibratedParam>& calibrated_params();

// One value per calibrated_params() entry.
using ParamValues = std::vector<double>;

// Simulates `rows` on the hardware config at `hw_path` with `values` applied; results in row order.
using RowRunner = std::function<std::vector<FidelityResult>(const std::vector<CalibrationRow>& rows,
                                                            const ParamValues& values)>;
// A RowRunner that loads `hw_path` with the values as overrides and simulates on `engine`.
RowRunner make_row_runner(const std::string& hw_path, const std::string& engine);

std::vector<Override> param_overrides(const ParamValues& values);
ParamValues prior_values();

struct FitResult {
  ParamValues values;
  double mape = 0;        // over the rows fitted
  int evaluations = 0;    // simulations of the row set
};

// Coordinate descent from the priors: each sweep tries every grid value of each parameter in turn
// (the others fixed) and keeps the best (ties keep the current value); stops when a sweep changes
// nothing, after at most `max_sweeps`.
FitResult fit_params(const std::vector<CalibrationRow>& rows, const RowRunner& run, int max_sweeps = 4);

struct LeaveOneOutRow {
  CalibrationRow row;
  FidelityResult predicted;  // with the parameters fitted on the other rows
  ParamValues values;        // those parameters
};
struct LeaveOneOut {
  std::vector<LeaveOneOutRow> rows;
  double mape = 0;       // mean absolute error of the held-out predictions
  double max_abs = 0;    // the largest held-out absolute error
};

LeaveOneOut leave_one_out(const std::vector<CalibrationRow>& rows, const RowRunner& run, int max_sweeps = 4);

}  // namespace tpusim
