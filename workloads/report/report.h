// Reports of a run: report.json (every figure with its unit) and the human summary on stdout.
// Both are built from one KernelSummary so that the formulas live in one place.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/hw/hw_config.h"
#include "workloads/loop/kernel_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

// Where the inputs came from and how they resolved (for the report's provenance fields).
struct RunContext {
  std::string hw_file;        // as given on the command line, or "(embedded) configs/hw/v3-8.yaml"
  std::string workload_file;  // likewise
  std::string hw_dump;        // dump_hw_config(hw): hashed into tpusim.config_hash
  std::string workload_dump;  // dump_workload_config(workload)
  // What the workload names beyond its text, hashed into config_hash too: a kind: hlo module's
  // content digest (hlo_module_digest); "" for the other kinds.
  std::string contents;
  double total_wall_s = -1;   // whole command incl. config loading; < 0: not measured
};

// Derived figures of a kernel run. Every field is documented with its unit in README.md
// ("report.json") and carries it in report.json's `units`.
struct KernelSummary {
  uint64_t device_cycles = 0;            // cycles (core clock)
  double device_time_s = 0;              // s
  double clock_mhz = 0;                  // MHz, core clock
  uint32_t cores_used = 0;               // count
  uint64_t flops = 0;                    // flop (2 per multiply-accumulate)
  double achieved_tflop_per_s = 0;       // 10^12 flop/s = flops / device_time_s
  double peak_tflop_per_s = 0;           // bf16 MXU peak of the cores used
  double mxu_utilization = 0;            // fraction = achieved / peak
  uint64_t hbm_bytes = 0;                // bytes the schedule moves between HBM and VMEM
  uint64_t hbm_bytes_min = 0;            // compulsory bytes: inputs read once, outputs written once
  double achieved_hbm_gbyte_per_s = 0;   // 10^9 bytes/s = hbm_bytes / device_time_s
  double peak_hbm_gbyte_per_s = 0;       // HBM peak seen by the cores used (before efficiency)
  double hbm_bandwidth_utilization = 0;  // fraction = achieved / peak
  uint64_t ideal_compute_cycles = 0;     // cycles: flops at MXU peak
  uint64_t ideal_hbm_cycles = 0;         // cycles: compulsory bytes at HBM peak
  double ideal_bound_fraction = 0;       // fraction = max(ideal) / device_cycles (1 = at the roofline)
  uint32_t fusions = 0;                  // count
  uint64_t instructions = 0;             // count
};


KernelSummary summarize(const HwConfig& hw, const KernelRunResult& r);

// The whole report.json tree. Deterministic for the same inputs except `run.wall_time_s`.
nlohmann::json make_report(const HwConfig& hw, const WorkloadConfig& w, const KernelRunResult& r,
                           const RunContext& ctx);
// Creates `dir` (and parents) and writes dir/report.json; returns the file's path.
// Throws ConfigError naming the directory if it cannot be created or written.
std::string write_report(const std::string& dir, const nlohmann::json& report);

// The readable summary printed by `tpusim run`.
std::string format_summary(const HwConfig& hw, const WorkloadConfig& w, const KernelRunResult& r,
                           const RunContext& ctx);

// The op profile (sim/analysis/op_profile.h) as report.json's `op_profile` arrays: one object per
// entry (name, count, time_s, flops, hbm_bytes, the four *_bound_s, bound).
nlohmann::json op_profile_json(const OpProfile& p);
// Its first `top` entries as a table: kernel, count, time, share of the profiled core's time,
// bound, and time / the largest bound (the distance from the roofline; "-" when every bound is 0).
std::string format_op_profile(const OpProfile& p, size_t top);
// "by bound: mxu 36.5%, hbm 30.1%, ...": the shares of the profiled core's time by entry bound.
std::string op_bound_shares(const OpProfile& p);

// 64-bit FNV-1a of the resolved hardware and workload dumps, as "fnv1a64:0123456789abcdef".
// `contents` (RunContext::contents), when not empty, is hashed after them.
std::string config_hash(const std::string& hw_dump, const std::string& workload_dump, const std::string& contents = "");
inline std::string config_hash(const RunContext& ctx) { return config_hash(ctx.hw_dump, ctx.workload_dump, ctx.contents); }

}  // namespace tpusim
