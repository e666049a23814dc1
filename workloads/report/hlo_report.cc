#include "workloads/report/hlo_report.h"

#include <fmt/format.h>

#include "sim/hw/resolved_hw.h"
#include "workloads/report/report_fields.h"
#include "workloads/report/training_report.h"

namespace tpusim {

using nlohmann::json;

nlohmann::ordered_json hlo_stats_json(const hlo::HloStats& st) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (const auto& [op, n] : st.instructions) ops[op] = n;
  j["instructions"] = ops;
  j["dot_flops"] = st.dot_flops;
  j["convolution_flops"] = st.convolution_flops;
  j["parameter_bytes"] = st.parameter_bytes;
  j["output_bytes"] = st.output_bytes;
  nlohmann::ordered_json un = nlohmann::ordered_json::array();
  for (const hlo::Unmodelled& u : st.unmodelled)
    un.push_back({{"instruction", u.instruction}, {"opcode", u.opcode}, {"line", u.line}, {"reason", u.reason}});
  j["unmodelled"] = un;
  // Unknown custom-call targets (costed as moving their bytes): the user should know.
  j["warnings"] = st.warnings;
  return j;
}

nlohmann::ordered_json hlo_spmd_json(const hlo::SpmdReport& s, const hlo::HloStats& module) {
  nlohmann::ordered_json j;
  j["partitioned"] = s.partitioned;
  j["reason"] = s.reason;
  j["num_partitions"] = s.num_partitions;
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  for (const auto& [op, k] : s.collectives) c[op] = {{"count", k.count}, {"result_bytes", k.result_bytes}};
  j["collectives"] = c;
  j["local_slices"] = s.local_slices;
  j["shardings"] = {{"given", s.given}, {"propagated", s.propagated}};
  if (s.partitioned)
    j["module"] = {{"dot_flops", module.dot_flops}, {"convolution_flops", module.convolution_flops},
                   {"parameter_bytes", module.parameter_bytes}, {"output_bytes", module.output_bytes}};
  return j;
}

json make_hlo_report(const HwConfig& hw, const WorkloadConfig& w, const HloRunResult& r, const RunContext& ctx) {
  const HloWorkload& h = w.hlo();
  json j;
  j["tpusim"] = {{"version", TPUSIM_VERSION}, {"config_hash", config_hash(ctx)}};
  json wall = {{"parse", r.parse_wall_s}, {"compile", r.compile_wall_s}, {"simulate", r.simulate_wall_s}};
  if (ctx.total_wall_s >= 0) wall["total"] = ctx.total_wall_s;
  j["run"] = {{"engine", r.engine},
              {"hw_file", ctx.hw_file},
              {"workload_file", ctx.workload_file},
              {"simulations", r.simulations},
              {"replays", r.replays},
              {"wall_time_s", wall}};
  j["hw"] = {{"name", hw.name},
             {"generation", hw.chip.generation},
             {"chips", hw.slice.chips()},
             {"cores_per_chip", hw.chip.cores},
             {"megacore", hw.chip.megacore},
             {"core_peak_tflop_per_s", resolve_hw(hw).core_peak_tflop_per_s},
             {"host_cpus", hw.host.cpus},
             {"host_cpu_ghz", hw.host.cpu_ghz}};
  j["workload"] = {{"name", w.name},           {"kind", enum_name(w.kind())},
                   {"module", h.module},       {"module_name", h.module_name},
                   {"framework", enum_name(h.framework)}, {"replicas", r.cores},
                   {"steps", h.steps},         {"processes", r.processes},
                   {"clients", r.framework},   {"while_trip_count", h.while_trip_count}};
  const TimeBreakdown& b = r.breakdown;
  j["summary"] = {{"device_time_s", r.device_time_s},
                  {"total_time_s", r.total_time_s},
                  {"steady_step_time_s", r.steady_step_time_s},
                  {"compiles", r.compiles},
                  {"compile_time_s", r.compile_time_s},
                  {"warmup_time_s", r.warmup_time_s},
                  {"upload_time_s", r.upload_time_s},
                  {"mxu_utilization", r.mxu_utilization},
                  {"train_steps", r.steps.size()},
                  {"breakdown_s",
                   {{"compile", b.compile}, {"warmup", b.warmup}, {"host", b.host}, {"device", b.device}, {"allreduce", b.allreduce}}}};
  // torch_xla's metrics of the run (as a training report has them: `tpusim metrics`, `tpusim compare`).
  j["metrics"] = {{"CompileTime", metric_json(r.compile_time)},
                  {"ExecuteTime", metric_json(r.execute_time)},
                  {"TransferToDeviceTime", metric_json(r.transfer_to_device)},
                  {"InboundData", metric_json(r.inbound_bytes, "bytes")},
                  {"UncachedCompile", r.compiles},
                  {"CachedCompile", r.cached_compiles},
                  {"MarkStep", r.mark_steps}};
  json hj = hlo_stats_json(r.stats);
  hj["module"] = {{"name", r.module_name}, {"file", r.module_file}};
  hj["replicas"] = r.cores;
  hj["replica_count"] = r.module_replica_count;
  hj["num_partitions"] = r.module_num_partitions;
  hj["spmd"] = hlo_spmd_json(r.spmd, r.module_stats);
  j["hlo"] = hj;
  json steps = json::array();
  for (const StepRecord& s : r.steps) steps.push_back(step_json(s));
  j["steps"] = steps;
  j["programs"] = json::array();
  for (const ProgramRecord& p : r.programs) j["programs"].push_back(program_json(p));
  json u = {{"hw.chips", "count"}, {"hw.cores_per_chip", "count"}, {"hw.core_peak_tflop_per_s", "TFLOP/s"},
            {"hw.host_cpus", "count"}, {"hw.host_cpu_ghz", "GHz"}, {"run.simulations", "count"},
            {"run.replays", "count"}, {"run.wall_time_s", "s"}, {"workload.replicas", "count (cores)"},
            {"workload.steps", "count"}, {"workload.processes", "count"}, {"workload.while_trip_count", "count (0: not given)"},
            {"hlo.instructions", "count by opcode (every computation)"},
            {"hlo.dot_flops", "flop (per replica, every dot of the module; one partition's when partitioned)"},
            {"hlo.spmd.collectives.*.count", "count (inserted per partition)"},
            {"hlo.spmd.collectives.*.result_bytes", "bytes (one partition's results, summed)"},
            {"hlo.spmd.local_slices", "count"}, {"hlo.spmd.shardings", "count (instructions partitioned)"},
            {"hlo.spmd.module.dot_flops", "flop (the module as written: every partition)"},
            {"hlo.spmd.module.convolution_flops", "flop (the module as written)"},
            {"hlo.spmd.module.parameter_bytes", "bytes (the module as written)"},
            {"hlo.spmd.module.output_bytes", "bytes (the module as written)"},
            {"hlo.convolution_flops", "flop (per replica)"}, {"hlo.parameter_bytes", "bytes (per replica)"},
            {"hlo.output_bytes", "bytes (per replica)"}, {"hlo.unmodelled[].line", "line of the module file"},
            {"hlo.replicas", "count (cores)"}, {"hlo.replica_count", "count"}, {"hlo.num_partitions", "count"},
            {"metrics.*.count", "count"}, {"metrics.*.total_s", "s"}, {"metrics.*.mean_s", "s"},
            {"metrics.*.percentiles_s", "s"}, {"metrics.*.samples_s", "[s, count] pairs"},
            {"metrics.*.total_bytes", "bytes"}, {"metrics.*.mean_bytes", "bytes"},
            {"metrics.*.percentiles_bytes", "bytes"}, {"metrics.*.samples_bytes", "[bytes, count] pairs"},
            {"metrics.UncachedCompile", "count"}, {"metrics.CachedCompile", "count"}, {"metrics.MarkStep", "count"}};
  u.update(step_program_units());
  add_summary_units(u, kHloReport, j);  // from the field catalogue
  j["units"] = u;
  j["config"] = {{"hw_yaml", ctx.hw_dump}, {"workload_yaml", ctx.workload_dump}};
  return j;
}

std::string format_hlo_summary(const HwConfig& hw, const WorkloadConfig& w, const HloRunResult& r, const RunContext& ctx) {
  const HloWorkload& h = w.hlo();
  std::string o;
  auto line = [&](const char* k, const std::string& v) { o += fmt::format("{:<10} {}\n", k, v); };
  static const ProgramRecord none;
  const ProgramRecord& p = r.programs.empty() ? none : r.programs.front();
  line("configs", ctx.hw_file + " + " + ctx.workload_file);
  line("module", fmt::format("{} ({}), replica_count {}, num_partitions {}", r.module_name, r.module_file,
                             r.module_replica_count, r.module_num_partitions));
  line("workload", fmt::format("{} steps on {} core{} of {} ({} chips x {} TensorCores), {}: {}", h.steps, r.cores,
                               r.cores == 1 ? "" : "s", hw.name, hw.slice.chips(), hw.chip.cores, enum_name(h.framework), r.framework));
  // A convolution network's flops are its convolutions': "dot 0 GFLOP" alone said nothing of them.
  const std::string conv = r.stats.convolution_flops
                               ? fmt::format(", convolution {:.3g} GFLOP", double(r.stats.convolution_flops) / 1e9)
                               : "";
  line("import", fmt::format("{} graph nodes, {} kernels; dot {:.3g} GFLOP{}, parameters {:.1f} MiB per replica; {} "
                             "instruction{} not modelled exactly (report.json hlo.unmodelled)",
                             p.graph_nodes, p.kernels, double(r.stats.dot_flops) / 1e9, conv,
                             double(r.stats.parameter_bytes) / (1 << 20), r.stats.unmodelled.size(),
                             r.stats.unmodelled.size() == 1 ? "" : "s"));
  if (r.spmd.partitioned) {
    std::string inserted;
    for (const auto& [op, k] : r.spmd.collectives)
      inserted += fmt::format("{}{} {} ({:.2f} MiB)", inserted.empty() ? "" : ", ", k.count, op, double(k.result_bytes) / (1 << 20));
    line("spmd", fmt::format("partitioned: {} partitions x {} cop{}, one per core; inserted {}; shardings {} given, {} "
                             "propagated; module dot {:.3g} GFLOP in all",
                             r.spmd.num_partitions, r.cores / std::max<int64_t>(1, r.spmd.num_partitions),
                             r.cores / std::max<int64_t>(1, r.spmd.num_partitions) == 1 ? "y" : "ies",
                             inserted.empty() ? "no collective" : inserted, r.spmd.given, r.spmd.propagated,
                             double(r.module_stats.dot_flops) / 1e9));
  } else if (r.module_num_partitions > 1) {
    line("spmd", "not partitioned: " + r.spmd.reason);
  }
  for (const std::string& warn : r.stats.warnings) line("warning", warn);
  line("engine", fmt::format("{}; {} program{} simulated, {} executions replayed", r.engine, r.simulations,
                             r.simulations == 1 ? "" : "s", r.replays));
  o += "\n";
  line("device", fmt::format("{} per step, MXU {:.1f}% utilization", format_duration(r.device_time_s), 100 * r.mxu_utilization));
  line("steady", fmt::format("{} per step", format_duration(r.steady_step_time_s)));
  line("compile", fmt::format("{} (XLA, first step)", format_duration(r.compile_time_s)));
  if (p.remat.values > 0)  // the module's buffers exceeded HBM (compiler/plan/rematerialize.h)
    line("remat", fmt::format("{} values recomputed ({:.2f} GiB) to fit HBM (its plan needed {:.2f} GiB)", p.remat.values,
                              double(p.remat.bytes) / (1 << 30), double(p.remat.peak_bytes_before) / (1 << 30)));
  line("total", format_duration(r.total_time_s));
  o += "\nwhere did the time go\n";
  const TimeBreakdown& b = r.breakdown;
  const std::pair<const char*, double> rows[] = {{"compile (XLA, blocks the step)", b.compile},
                                                 {"warm-up (program load, parameter upload)", b.warmup},
                                                 {"host (tracing, dispatch)", b.host},
                                                 {"device compute", b.device},
                                                 {"all-reduce (exposed)", b.allreduce}};
  for (const auto& [name, s] : rows)
    o += fmt::format("  {:<42} {:>14} {:>6.1f}%\n", name, format_duration(s), r.total_time_s > 0 ? 100 * s / r.total_time_s : 0);
  o += fmt::format("  {:<42} {:>14}\n", "total", format_duration(r.total_time_s));
  if (p.op_profile && !p.op_profile->entries.empty()) {
    const OpProfile& op = *p.op_profile;
    o += fmt::format("\nwhere the step time goes: {} per step (chip {} core {})\n"
                     "  the costliest kernels, copies as one row (every kernel: programs[].op_profile)\n",
                     format_duration(op.time_s), op.chip, op.core);
    o += format_op_profile(group_op_profile(op), 10);
    o += "  " + op_bound_shares(op) + "\n";
  }
  o += "\n";
  line("wall time", fmt::format("parse and import {}, compile {}, simulate {}, total {}", format_duration(r.parse_wall_s),
                                format_duration(r.compile_wall_s), format_duration(r.simulate_wall_s),
                                ctx.total_wall_s >= 0 ? format_duration(ctx.total_wall_s) : "-"));
  return o;
}

}  // namespace tpusim
