// `tpusim validate FILE...`: check configs without simulating: workloads, hardware (slice) files, the
// chip files they include, and sweep files (planned in full: base files, axis paths, every point's
// configs), and a workload's `hw:` and dataset files and keys. Prints "ok FILE" per good file and
// every error; exit 2 if any file is bad.
#include <algorithm>
#include <filesystem>
#include <iostream>


#include "app/commands.h"
#include "base/config_error.h"
#include "config/hw_loader.h"
#include "config/tree.h"
#include "sweep/plan.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/hlo_module.h"
#include "workloads/loop/hlo_run.h"

namespace tpusim::app {

void require_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The suggestion lists the closest *.yaml beside the path (A's loaders do the same for --hw/--workload).
  if (!fs::exists(path, ec)) throw input_error(path, "no such file", "", config::missing_file_hint(path, ""));
  if (!fs::is_regular_file(path, ec)) throw input_error(path, "not a regular file");
}

ConfigError input_error(std::string where, std::string rule, std::string value, std::string suggestion) {
  ConfigErrorInfo e;
  e.file = std::move(where);
  e.rule = std::move(rule);
  e.value = std::move(value);
  e.suggestion = std::move(suggestion);
  return ConfigError(e);
}

namespace {

enum class ConfigKind { kWorkload, kHardware, kChip, kSweep };

// A top-level `axes:` marks a sweep file; a top-level `kind:` a workload; a slice file has `chip:` (usually an include of a chip file);
// a chip file (configs/hw/chips/) is the mapping a slice includes under `chip:`, recognised by the
// chip's own keys. Anything else is checked as a hardware file, whose loader names what is missing.
ConfigKind detect(const std::string& path) {
  // The config reader's own parser (config/tree.h): its limits on depth and alias expansion and
  // its errors, as when the file is then loaded.
  const config::Node root = config::parse_yaml(config::read_file(path), path);
  if (!root.is_map()) return ConfigKind::kHardware;
  if (root.find("axes")) return ConfigKind::kSweep;
  if (root.find("kind")) return ConfigKind::kWorkload;
  if (!root.find("chip") && (root.find("generation") || root.find("core"))) return ConfigKind::kChip;
  return ConfigKind::kHardware;
}

// Beyond the schema: the hardware the workload names (`hw:`) and its dataset files and table keys
// load (synthetic specs are checked by the schema; their size depends on the run).
void check_workload(const WorkloadConfig& w, const std::string& file) {
  check_workload_hw(w);
  if (w.kind() == WorkloadKind::kHlo) {
    // The module is picked, parsed and imported (a bad one is exit 2 with its file, line and column);
    // the replicas are checked against the workload's `hw:` when it names one (else at run time,
    // against the slice the run uses).
    std::string module_file;
    const hlo::Module m = load_step_module(w.hlo(), &module_file);
    hlo::ImportOptions io;
    if (w.hlo().while_trip_count > 0) io.while_trip_count = int64_t(w.hlo().while_trip_count);
    const uint32_t replicas = w.hlo().replicas > 0 ? w.hlo().replicas : uint32_t(m.replica_count * m.num_partitions);
    const hlo::SpmdResult spmd = partition_step_module(w.hlo(), m, replicas);
    (void)hlo::import_hlo(spmd.module ? *spmd.module : m, io);
    if (!w.hw.empty()) {
      std::string origin;
      hlo_replicas(load_hw(RunArgs{}, {}, &origin, &w), w.hlo(), m.replica_count, m.num_partitions);
    }
    return;
  }
  if (w.kind() != WorkloadKind::kTraining) return;
  for (const auto& [split, ref] : {std::pair{"dataset.train", w.training().dataset.train}, std::pair{"dataset.eval", w.training().dataset.eval}}) {
    if (ref.empty()) continue;
    const data::ErrorWhere where{file, split, 0};
    const data::DatasetRef parsed = data::parse_dataset_ref(ref, where);
    if (parsed.kind == data::DatasetRef::Kind::kFile) data::load_dataset(parsed, data::LengthTables{}, {}, where);
    if (parsed.kind == data::DatasetRef::Kind::kTable) data::load_dataset(parsed, dataset_tables(), {}, where);
  }
}

}  // namespace

int validate(const std::vector<std::string>& files) {
  int bad = 0;
  for (const auto& f : files) {
    try {
      require_file(f);
      switch (detect(f)) {
        case ConfigKind::kWorkload: check_workload(load_workload_config(f), f); break;
        case ConfigKind::kHardware: load_hw_config(f); break;
        case ConfigKind::kChip: load_chip_params(f); break;
        case ConfigKind::kSweep: {
          sweep::PlanOptions po;
          po.load_hw = sweep_hw_loader();
          const sweep::SweepPlan plan = sweep::plan_sweep(f, po);
          // Points whose own values do not load are legal (they fail when run); say so.
          for (const auto& p : plan.points)
            if (!p.invalid.empty())
              std::cerr << "warning: " << f << ": point " << p.point.id << " will fail: " << p.invalid << "\n";
          break;
        }
      }
      std::cout << "ok " << f << "\n";
    } catch (const ConfigError& e) {
      std::cerr << "error: " << e.what() << "\n";
      ++bad;
    }
  }
  return bad ? 2 : 0;
}

}  // namespace tpusim::app
