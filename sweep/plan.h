// A sweep resolved against its hardware and workload configs: axis paths checked against the
// schemas, base files found, and each point's configs loaded once in the parent process, which gives
// its config hash (the resume key) or the config error that the point would exit 2 with.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sweep/expand.h"
#include "sweep/sweep_config.h"
#include "workloads/config/workload_config.h"

namespace tpusim::sweep {

struct PlannedPoint {
  SweepPoint point;
  std::string hw_file, workload_file;  // as passed to `tpusim run` (relative to the working directory);
                                       // hw_file "" = no --hw: the workload's `hw:`, else the default
  std::string hw_source;               // the hardware the point loads (a path or "(embedded) configs/hw/...")
  std::vector<std::string> sets;       // PATH=VALUE: the sweep's `set:`, then `tpusim sweep --set`, then the axes
  std::string config_hash;             // of the resolved configs, as the point's report.json will say; "" if invalid
  std::string invalid;                 // the config error the point exits 2 with ("" when its configs load)
  std::string key;                     // resume key: engine, overrides, config hash (or the config error)
};

struct SweepPlan {
  SweepConfig config;
  std::string engine;                  // "" = the default of the workload kind (no --engine passed)
  std::string kind;                    // the base workload's kind: it selects the figure columns
  std::vector<std::string> columns;    // results.csv header
  uint64_t grid_points = 0;            // before constraints
  std::vector<PlannedPoint> points;    // the points that run, sorted by id
  std::string sweep_hash;              // over the columns and every point's id and key: shards of one sweep agree
};

struct PlanOptions {
  std::vector<std::string> extra_sets;  // `tpusim sweep --set PATH=VALUE`, applied to every point
  // How `tpusim run` loads the hardware for `--hw REF` (REF "" = none given) and a workload: the
  // binary's rule (app/cmd_run.cc load_hw: --hw, else the workload's `hw:`, else the default; built-in
  // names). Unset: REF must be a file, loaded with load_hw_config. Sets *origin.
  std::function<HwConfig(const std::string& ref, const WorkloadConfig& workload, const std::vector<Override>& overrides,
                         std::string* origin)>
      load_hw;
};

// Loads the sweep file and plans it. Throws ConfigError (exit 2) for a bad sweep file, a bad base
// file or a bad --set; a point whose own values are invalid is planned with `invalid` set.
SweepPlan plan_sweep(const std::string& path, const PlanOptions& options = {});
SweepPlan plan_sweep(SweepConfig config, const PlanOptions& options = {});

// 64-bit FNV-1a of `text` as "fnv1a64:<16 hex digits>".
std::string fnv1a64(const std::string& text);

}  // namespace tpusim::sweep
