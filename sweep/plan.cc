#include "sweep/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "config/hw_loader.h"
#include "config/suggest.h"
#include "config/tree.h"
#include "sim/engine/engine.h"
#include "sweep/columns.h"
#include "workloads/loop/hlo_module.h"
#include "workloads/report/report.h"
#include "workloads/config/workload_config.h"

namespace tpusim::sweep {

namespace fs = std::filesystem;

namespace {

bool is_file_axis(const SweepAxis& a) { return a.path == "hw" || a.path == "workload"; }

// A base file named by the sweep (relative to the sweep file's directory).
std::string resolve_file(const SweepConfig& c, const std::string& written) {
  if (fs::path(written).is_absolute()) return written;
  return (fs::path(c.file).parent_path() / written).lexically_normal().string();
}

void require_file(const SweepConfig& c, const std::string& path, const std::string& yaml_path, const char* subdir) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return;
  fail_at(c, yaml_path, "file not found (looked for '" + path + "'; paths are relative to the sweep file)",
          config::missing_file_hint(path, subdir));
}

// Checks a PATH=VALUE override's syntax and path; errors point at `yaml_path` of the sweep file
// (or at the --set flag for command-line ones).
Override checked_override(const SweepConfig& c, const std::string& text, const std::string& yaml_path) {
  const bool flag = yaml_path.empty();
  try {
    Override ov = parse_override(text);
    if (!flag) ov.origin = c.file;
    check_override_path(ov);
    return ov;
  } catch (const ConfigError& e) {
    if (flag) throw;
    fail_at(c, yaml_path, e.info().rule, e.info().suggestion);
  }
}

void check_engine(const SweepConfig& c) {
  if (c.engine.empty()) return;
  const std::vector<std::string> names = engine_names();
  if (std::find(names.begin(), names.end(), c.engine) != names.end()) return;
  const auto near = config::closest(c.engine, names);
  fail_at(c, "engine", "is not a known engine (known: " + config::join(names) + ")",
          near ? "did you mean '" + *near + "'?" : "");
}

// A hardware reference of the sweep (`hw:`, a value of an `hw` axis): a file relative to the sweep
// file, else (with a loader that knows them) a built-in name such as v3-32, passed on as written.
std::string resolve_hw(const SweepConfig& c, const std::string& written, const PlanOptions& o, const std::string& yaml_path) {
  if (written.empty()) return written;  // none: the workload's hw:, else the default
  const std::string path = resolve_file(c, written);
  std::error_code ec;
  if (fs::is_regular_file(path, ec) || !o.load_hw) {
    require_file(c, path, yaml_path, "hw");
    return path;
  }
  try {
    std::string origin;
    o.load_hw(written, WorkloadConfig{}, {}, &origin);  // a built-in name, or the error listing them
  } catch (const ConfigError& e) {
    fail_at(c, yaml_path, "is neither a file (looked for '" + path + "'; paths are relative to the sweep file) nor a built-in hardware name",
            e.info().suggestion);
  }
  return written;
}

HwConfig load_point_hw(const std::string& hw, const WorkloadConfig& w, const std::vector<Override>& overrides,
                       const PlanOptions& o, std::string* origin) {
  if (o.load_hw) return o.load_hw(hw, w, overrides, origin);
  *origin = hw;
  return load_hw_config(hw, overrides);
}

// The base files load without overrides (errors there name that file and line).
std::string base_kind(const std::string& hw, const std::string& workload, const PlanOptions& o) {
  const WorkloadConfig w = load_workload_config(workload);
  std::string origin;
  load_point_hw(hw, w, {}, o, &origin);
  return enum_name(w.kind());
}

}  // namespace

std::string fnv1a64(const std::string& text) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;  // FNV prime
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

SweepPlan plan_sweep(const std::string& path, const PlanOptions& options) {
  return plan_sweep(load_sweep_config(path), options);
}

SweepPlan plan_sweep(SweepConfig c, const PlanOptions& options) {
  SweepPlan plan;
  check_engine(c);
  plan.engine = c.engine;

  const std::string hw = resolve_hw(c, c.hw, options, "hw"), workload = resolve_file(c, c.workload);
  require_file(c, workload, "workload", "workloads");
  if (hw.empty() && !options.load_hw)
    fail_at(c, "hw", "is required here (the caller cannot load a workload's hw:)", "name the hardware file");

  std::vector<std::string> fixed;  // `set:` then --set, checked once
  for (size_t i = 0; i < c.set.size(); ++i) {
    checked_override(c, c.set[i], fmt::format("set[{}]", i));
    fixed.push_back(c.set[i]);
  }
  for (const auto& s : options.extra_sets) {
    const Override ov = checked_override(c, s, "");
    for (const auto& a : c.axes)
      if (a.path == ov.path)
        throw ConfigError({"--set", ov.path, 0, ov.value, "is an axis of the sweep (axis '" + a.name + "')",
                           "remove the --set, or the axis from " + c.file});
    fixed.push_back(s);
  }
  for (size_t i = 0; i < c.axes.size(); ++i) {
    const SweepAxis& a = c.axes[i];
    if (is_file_axis(a)) continue;
    checked_override(c, a.path + "=0", fmt::format("axes[{}].path", i));
  }

  const Expansion e = expand(c);
  std::map<std::string, std::string> hw_values;  // an hw axis value -> what `tpusim run --hw` is given
  for (size_t i = 0; i < c.axes.size(); ++i) {
    if (!is_file_axis(c.axes[i])) continue;
    const auto values = axis_values(c, i);
    for (size_t j = 0; j < values.size(); ++j) {
      const std::string at = fmt::format("axes[{}].values[{}]", i, j);
      if (c.axes[i].path == "hw") hw_values[values[j].set_value] = resolve_hw(c, c.axes[i].values[j].display(), options, at);
      else require_file(c, values[j].set_value, at, "workloads");
    }
  }
  plan.kind = base_kind(hw, workload, options);
  plan.columns = csv_columns(axis_names(c), plan.kind);
  plan.grid_points = e.grid_points;

  // Plots may only name this sweep's columns (a kernel sweep has no steady_step_time_s).
  for (size_t i = 0; i < c.plots.size(); ++i) {
    const SweepPlot& p = c.plots[i];
    auto check = [&](const std::string& col, const std::string& at) {
      if (std::find(plan.columns.begin(), plan.columns.end(), col) == plan.columns.end())
        fail_at(c, at, "is not a column of this sweep (workloads of kind " + plan.kind + ")",
                config::suggest(col, plan.columns, "columns"));
    };
    for (size_t j = 0; j < p.x.size(); ++j) check(p.x[j], fmt::format("plots[{}].x[{}]", i, j));
    for (size_t j = 0; j < p.y.size(); ++j) check(p.y[j], fmt::format("plots[{}].y[{}]", i, j));
    if (!p.series.empty()) check(p.series, fmt::format("plots[{}].series", i));
    if (!p.annotate.empty()) check(p.annotate, fmt::format("plots[{}].annotate", i));
  }

  std::string sweep_text = config::join(plan.columns, ",") + "\n";
  for (const SweepPoint& sp : e.points) {
    PlannedPoint p;
    p.point = sp;
    p.hw_file = hw;
    p.workload_file = workload;
    p.sets = fixed;
    for (size_t i = 0; i < c.axes.size(); ++i) {
      const SweepAxis& a = c.axes[i];
      if (a.path == "hw") p.hw_file = hw_values.at(sp.values[i].set_value);
      else if (a.path == "workload") p.workload_file = sp.values[i].set_value;
      else p.sets.push_back(a.path + "=" + sp.values[i].set_value);
    }
    // Load the point's configs as `tpusim run` will: a bad value is this point's failure (exit 2).
    try {
      std::vector<Override> all;
      for (const auto& s : p.sets) all.push_back(parse_override(s));
      const SplitOverrides split = split_overrides(all);
      const WorkloadConfig w = load_workload_config(p.workload_file, split.workload);
      const HwConfig h = load_point_hw(p.hw_file, w, split.hw, options, &p.hw_source);
      p.config_hash = config_hash(dump_hw_config(h), dump_workload_config(w), hlo_module_digest(w));
    } catch (const ConfigError& err) {
      p.invalid = err.what();
    }
    // The files' contents are in the config hash; their paths are not in the key, so that shards
    // started from different working directories still merge.
    p.key = fnv1a64(plan.engine + "\n" + config::join(p.sets, "\n") + "\n" + p.config_hash + "\n" + p.invalid);
    sweep_text += fmt::format("{} {}\n", p.point.id, p.key);
    plan.points.push_back(std::move(p));
  }
  plan.sweep_hash = fnv1a64(sweep_text);
  plan.config = std::move(c);
  return plan;
}

}  // namespace tpusim::sweep
