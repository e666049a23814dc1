// `tpusim advise [--hw FILE] [--workload FILE] [--set PATH=VALUE]... [--out DIR]`: the settings
// advisor of workloads/analysis/advisor.h. Prints the ranked table; with --out also DIR/advice.json.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "config/schema.h"
#include "workloads/analysis/advisor.h"

namespace tpusim::app {

int advise(const RunArgs& a) {
  std::vector<Override> all;
  for (const auto& s : a.sets) all.push_back(parse_override(s));
  const SplitOverrides split = split_overrides(all);
  std::string hw_origin, workload_origin;
  const WorkloadConfig w = load_workload(a, split.workload, &workload_origin);
  const HwConfig hw = load_hw(a, split.hw, &hw_origin, &w);
  if (w.kind() != WorkloadKind::kTraining)
    throw input_error("--workload", "tpusim advise needs a training workload (kind: training)", workload_origin);
  if (!a.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    if (ec) throw input_error("--out", "cannot be used as the output directory (" + ec.message() + ")", a.out_dir);
  }
  AdviceOptions o;
  o.tables = dataset_tables();
  o.limits = run_limits(a);
  const bool progress = !a.quiet && ::isatty(STDERR_FILENO);
  int n = 0;
  o.on_run = [&](const std::string& what) {
    if (progress) std::cerr << "\r\033[K[" << ++n << "] " << what << std::flush;
  };
  const std::vector<AdviceRow> rows = advise(hw, w, o);
  if (progress) std::cerr << "\r\033[K";
  if (!a.quiet) {
    std::cout << "advice for " << workload_origin << " on " << hw_origin << " (time to train = the whole simulated run)\n\n"
              << format_advice(rows, w);
  }
  if (!a.out_dir.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const AdviceRow& r : rows)
      j.push_back({{"padding", r.padding.to_string()}, {"precision", enum_name(r.precision)}, {"per_device_batch_size", config::json_count(r.batch)},
                   {"remat_policy", enum_name(r.remat)}, {"sharding", enum_name(r.sharding)}, {"tensor", r.tensor},
                   {"mesh", r.mesh},
                   {"global_batch", r.global_batch}, {"as_given", r.is_base}, {"fits", r.fits}, {"error", r.error},
                   {"total_time_s", r.total_time_s}, {"steady_step_time_s", r.steady_step_time_s},
                   {"examples_per_s", r.examples_per_s}, {"compiles", r.compiles},
                   {"compile_time_s", r.compile_time_s}, {"peak_hbm_bytes", r.peak_hbm_bytes}});
    std::ofstream(std::filesystem::path(a.out_dir) / "advice.json") << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace tpusim::app
