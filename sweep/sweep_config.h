// Sweep files (configs/sweeps/*.yaml): a base hardware + workload file, axes of `--set`-style
// overrides combined crossed or zipped, constraints that skip points, and plots. The schema is
// declared once in sweep_config.cc (parse, validate, dump, docs/config-sweep.md); docs/sweeps.md
// explains the concepts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/schema.h"
#include "config/tree.h"

namespace tpusim::sweep {

// `range:` of an axis: start, start+step, ... or start, start*mul, ... up to stop (inclusive).
struct SweepRange {
  double start = 0;
  double stop = 0;
  double step = 0;  // additive step, > 0; 0 = not given
  double mul = 0;   // geometric factor, > 1; 0 = not given
};

// One axis: a config path and the values it takes.
struct SweepAxis {
  std::string path;  // a `--set` path (hw./workload. prefixes as in `tpusim run`), or `hw` / `workload`
  std::string name;  // results column; default: the last key of `path`
  std::vector<config::YamlValue> values;
  std::optional<SweepRange> range;
  std::vector<std::string> labels;  // shown instead of the values (results, constraints, plots); "" = the values
  std::string zip;   // axes with the same zip name vary together (one dimension); "" = its own dimension
};

// One plot drawn by scripts/plot_sweep.py from results.csv.
struct SweepPlot {
  std::string name;                // file stem: DIR/plots/NAME.png and NAME.svg
  std::string kind = "line";       // line | bar | stacked_bar | roofline
  std::vector<std::string> x;      // column(s); several make categorical labels "a / b" (bar kinds)
  std::vector<std::string> y;      // column(s) drawn
  std::string series;              // one line / bar group per distinct value of this column
  std::string annotate;            // label each point with this column's value (line, roofline)
  bool logx = false, logy = false;
  std::string title, xlabel, ylabel;
};

struct SweepConfig {
  std::string name;         // default: the file stem
  std::string description;
  std::string hw;           // base hardware file, relative to the sweep file's directory
  std::string workload;     // base workload file, likewise
  std::string engine;       // "" = the default for the workload kind (as `tpusim run`)
  std::vector<std::string> set;  // PATH=VALUE overrides applied to every point
  std::vector<SweepAxis> axes;
  std::vector<std::string> constraints;
  double timeout_s = 0;     // per point; 0 = none
  uint32_t max_jobs = 0;    // cap on points in parallel (memory-heavy points); 0 = none
  std::vector<SweepPlot> plots;

  // Where it came from, to point errors found after parsing at their file and line.
  std::string file;         // the sweep file as given
  config::Node root;        // its YAML tree
};

// Loads and schema-checks a sweep file (types, ranges, unknown keys, per-axis and per-plot rules).
// Checks that need the hardware and workload schemas are in plan.h. Throws ConfigError.
SweepConfig load_sweep_config(const std::string& path);
SweepConfig load_sweep_config_text(const std::string& yaml, const std::string& origin);

const config::Schema<SweepConfig>& sweep_schema();
// The schema reference and the results columns, for docs/config-sweep.md.
std::string sweep_schema_markdown();

// Throws ConfigError at `yaml_path` of the sweep file ("axes[1].values[2]"), quoting the value
// written there (or the nearest written ancestor).
[[noreturn]] void fail_at(const SweepConfig& c, const std::string& yaml_path, const std::string& rule,
                          const std::string& suggestion = {});

// The axis names a constraint may use and a plot may name besides the results columns.
std::vector<std::string> axis_names(const SweepConfig& c);

inline constexpr const char* kPlotKinds[] = {"line", "bar", "stacked_bar", "roofline"};

}  // namespace tpusim::sweep
