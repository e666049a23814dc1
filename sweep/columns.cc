#include "sweep/columns.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim::sweep {

using ojson = nlohmann::ordered_json;

const std::vector<FigureColumn>& figure_columns() {
  static const std::vector<FigureColumn> c = {
      // kind: training (docs/training.md, "Report")
      {"total_time_s", "training", "/summary/total_time_s", "s", "simulated wall-clock time of the whole run"},
      {"steady_step_time_s", "training", "/summary/steady_step_time_s", "s",
       "median train step without a compile or a first execution"},
      {"examples_per_s", "training", "/summary/examples_per_s", "examples/s", "training examples over the whole run's time"},
      {"steady_examples_per_s", "training", "/summary/steady_examples_per_s", "examples/s",
       "global batch over the steady step time"},
      {"compiles", "training", "/summary/compiles", "count", "XLA compilations of the busiest process"},
      {"compile_time_s", "training", "/summary/compile_time_s", "s", "compilation time of the busiest process"},
      {"warmup_time_s", "training", "/summary/warmup_time_s", "s", "start to the first steady train step"},
      {"peak_hbm_bytes", "training", "/summary/peak_hbm_bytes", "bytes", "peak HBM use per device (core; chip under megacore)"},
      {"mxu_utilization", "training", "/summary/mxu_utilization", "fraction", "flops over device time at the bf16 MXU peak"},
      {"mfu", "training", "/summary/mfu", "fraction", "model flops (no recomputation) over steady step time at the bf16 peak of every core"},
      {"allreduce_share", "training", "/summary/allreduce_share", "fraction", "exposed all-reduce time over steady device time"},
      {"collective_share", "training", "/summary/collective_share", "fraction",
       "exposed time of every collective (FSDP all-gathers, reduce-scatters too) over steady device time"},
      {"padding_waste", "training", "/summary/padding_waste", "fraction", "padding tokens over all tokens"},
      {"train_steps", "training", "/summary/train_steps", "count", "training micro-steps run"},
      {"breakdown_compile_s", "training", "/summary/breakdown_s/compile", "s", "time breakdown: XLA compilation"},
      {"breakdown_warmup_s", "training", "/summary/breakdown_s/warmup", "s", "time breakdown: program load, parameter upload"},
      {"breakdown_host_s", "training", "/summary/breakdown_s/host", "s", "time breakdown: host tracing, dispatch, sync"},
      {"breakdown_device_s", "training", "/summary/breakdown_s/device", "s", "time breakdown: device compute"},
      {"breakdown_allreduce_s", "training", "/summary/breakdown_s/allreduce", "s", "time breakdown: gradient all-reduce"},
      {"breakdown_eval_s", "training", "/summary/breakdown_s/eval", "s", "time breakdown: evaluation"},
      // energy and cost (docs/energy.md); empty when the chip has no power / cost section
      {"energy_per_step_j", "training", "/summary/energy/per_step_j", "J", "one steady train step, whole slice"},
      {"energy_total_j", "training", "/summary/energy/total_j", "J", "the whole run, whole slice"},
      {"average_power_w_per_chip", "training", "/summary/energy/average_power_w_per_chip", "W",
       "run energy over run time and chips"},
      {"steady_power_w_per_chip", "training", "/summary/energy/steady_power_w_per_chip", "W",
       "steady step energy over step time and chips"},
      {"examples_per_j", "training", "/summary/energy/examples_per_j", "examples/J", "global batch over per-step energy"},
      {"usd_total", "training", "/summary/cost/usd_total", "USD", "run time x chips x usd_per_chip_hour"},
      {"usd_per_1k_steps", "training", "/summary/cost/usd_per_1k_steps", "USD", "1000 steady steps on the slice"},
      // kind: kernel (README, "Reports")
      {"device_cycles", "kernel", "/summary/device_cycles", "cycles", "core clock cycles from launch to the last completion"},
      {"device_time_s", "kernel", "/summary/device_time_s", "s", "the same in seconds"},
      {"flops", "kernel", "/summary/flops", "flop", "useful floating-point operations"},
      {"achieved_tflop_per_s", "kernel", "/summary/achieved_tflop_per_s", "TFLOP/s", "flops / device_time_s"},
      {"peak_tflop_per_s", "kernel", "/summary/peak_tflop_per_s", "TFLOP/s", "bf16 MXU peak of the cores used (the compute roof)"},
      {"mxu_utilization", "kernel", "/summary/mxu_utilization", "fraction", "achieved / peak TFLOP/s"},
      {"hbm_bytes", "kernel", "/summary/hbm_bytes", "bytes", "bytes moved between HBM and VMEM"},
      {"achieved_hbm_gbyte_per_s", "kernel", "/summary/achieved_hbm_gbyte_per_s", "GB/s", "hbm_bytes / device_time_s"},
      {"peak_hbm_gbyte_per_s", "kernel", "/summary/peak_hbm_gbyte_per_s", "GB/s", "HBM peak of the cores used (the bandwidth roof)"},
      {"hbm_bandwidth_utilization", "kernel", "/summary/hbm_bandwidth_utilization", "fraction", "achieved / peak GB/s"},
      {"flops_per_byte", "kernel", "", "flop/byte", "arithmetic intensity: flops / hbm_bytes (the roofline's x)"},
      {"energy_total_j", "kernel", "/summary/energy/total_j", "J", "the kernel's chip over the device time"},
      {"average_power_w_per_chip", "kernel", "/summary/energy/average_power_w_per_chip", "W",
       "energy over device time (the chip's other cores idle)"},
      {"all_cores_power_w_per_chip", "kernel", "/summary/energy/all_cores_power_w_per_chip", "W",
       "chip power if every core ran the kernel"},
      {"usd_total", "kernel", "/summary/cost/usd_total", "USD", "device time x chips x usd_per_chip_hour"},
      // kind: hlo (docs/hlo.md, "kind: hlo")
      {"device_time_s", "hlo", "/summary/device_time_s", "s", "simulated device time of one step of the module"},
      {"steady_step_time_s", "hlo", "/summary/steady_step_time_s", "s", "a step after the first: max(host, device)"},
      {"total_time_s", "hlo", "/summary/total_time_s", "s", "all steps, the first's compile included"},
      {"compile_time_s", "hlo", "/summary/compile_time_s", "s", "the module's XLA compile (first step)"},
      {"mxu_utilization", "hlo", "/summary/mxu_utilization", "fraction", "flops over device time at the bf16 MXU peak"},
  };
  return c;
}

std::vector<std::string> figure_names(const std::string& kind) {
  std::vector<std::string> n;
  for (const auto& c : figure_columns())
    if (c.kind == kind) n.push_back(c.name);
  return n;
}

std::vector<std::string> csv_columns(const std::vector<std::string>& axis_names, const std::string& kind) {
  std::vector<std::string> cols = {kPointColumn};
  cols.insert(cols.end(), axis_names.begin(), axis_names.end());
  cols.insert(cols.end(), kStatusColumns.begin(), kStatusColumns.end());
  for (const auto& f : figure_names(kind)) cols.push_back(f);
  cols.insert(cols.end(), kTrailingColumns.begin(), kTrailingColumns.end());
  return cols;
}

std::vector<std::string> known_columns() {
  std::vector<std::string> cols = {kPointColumn};
  cols.insert(cols.end(), kStatusColumns.begin(), kStatusColumns.end());
  for (const auto& c : figure_columns())
    if (std::find(cols.begin(), cols.end(), c.name) == cols.end()) cols.push_back(c.name);
  cols.insert(cols.end(), kTrailingColumns.begin(), kTrailingColumns.end());
  return cols;
}

ojson figure_value(const FigureColumn& c, const ojson& report) {
  if (!report.is_object()) return nullptr;
  if (c.pointer.empty()) {  // flops_per_byte, the only derived figure
    const ojson::json_pointer f("/summary/flops"), b("/summary/hbm_bytes");
    if (!report.contains(f) || !report.contains(b)) return nullptr;
    const double bytes = report.at(b).get<double>();
    return bytes > 0 ? ojson(report.at(f).get<double>() / bytes) : ojson(nullptr);
  }
  const ojson::json_pointer p(c.pointer);
  return report.contains(p) ? report.at(p) : ojson(nullptr);
}

std::string columns_markdown() {
  std::string md =
      "### results.csv columns\n\n"
      "`point`, then one column per axis (named by the axis' `name`), then `status` (`ok`, `failed`, `crashed`, "
      "`timeout`), `exit_code` (the point's `tpusim run` exit code; 128+N when killed by signal N, 124 on timeout) "
      "and `error` (the first error line), then the key figures of the base workload's kind, then `config_hash` "
      "(of the point's resolved configs, as in its report.json) and `wall_time_s` (host time the point took; the "
      "only column that differs between two runs of the same sweep). A figure is empty when the point failed.\n\n"
      "| Column | Workload kind | Unit | From report.json | Description |\n|---|---|---|---|---|\n";
  for (const auto& c : figure_columns())
    md += fmt::format("| `{}` | {} | {} | {} | {} |\n", c.name, c.kind, c.unit,
                      c.pointer.empty() ? "*derived*" : "`" + c.pointer + "`", c.doc);
  return md + "\n";
}

}  // namespace tpusim::sweep
