// Plots of a sweep: scripts/plot_sweep.py (embedded in the tpusim binary) run with Debian's
// /usr/bin/python3 and matplotlib on DIR/sweep.json + DIR/results.csv. A missing matplotlib or a
// failing script is a warning, never a failed sweep.
#pragma once
#include <string>
#include <vector>

namespace tpusim::sweep {

struct PlotResult {
  bool ran = false;                 // the script ran to completion
  std::vector<std::string> files;   // written files (DIR/plots/NAME.png, .svg)
  std::string warning;              // why there are no plots ("" when ran)
};

// The interpreter: $TPUSIM_PYTHON, else /usr/bin/python3, else python3 on PATH ("" if none).
std::string python_interpreter();

// Runs the plot script text on DIR. Exit code kNoMatplotlib of the script means matplotlib is missing.
PlotResult render_plots(const std::string& dir, const std::string& script_text);

inline constexpr int kNoMatplotlib = 3;

}  // namespace tpusim::sweep
