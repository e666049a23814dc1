#include "workloads/report/training_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/schema.h"
#include "models/families.h"
#include "sim/hw/resolved_hw.h"
#include "workloads/loop/host_costs.h"
#include "workloads/report/energy_report.h"
#include "workloads/report/report_fields.h"

namespace tpusim {

// Seconds for people: "412 ms", "3.21 s", "2 min 05 s", "31.2 h", "2.1e+03 days". No integer
// conversion of a double (a huge time printed as -2147483648 min).
std::string format_duration(double s) {
  if (!std::isfinite(s)) return fmt::format("{} s", s);
  if (s < 1e-3) return fmt::format("{:.1f} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.2f} s", s);
  if (s < 3 * 3600) return fmt::format("{:.0f} min {:04.1f} s", std::floor(s / 60), std::fmod(s, 60.0));
  if (s < 3 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.3g} days", s / 86400);
}

namespace {

using nlohmann::json;

std::string dur(double s) { return format_duration(s); }

std::string gib(uint64_t b) { return fmt::format("{:.2f} GiB", double(b) / (1024.0 * 1024.0 * 1024.0)); }

// The 6·N·D model flops utilization (Kaplan et al. 2020; MaxText and the scaling literature): 6 flops
// per parameter per trained token (forward 2, backward 4), attention and recomputation left out, over
// a chip's bf16 peak; N the model's parameters (its counted class, embeddings included).
double mfu_6nd(const HwConfig& hw, const TrainingWorkload& t, const TrainingRunResult& r) {
  const double chip_peak = resolve_hw(hw).device_peak_flop_per_s * devices_per_chip(hw.chip);
  const double n = double(models::model_parameters(resolve_model_arch(t)));
  return chip_peak > 0 ? 6.0 * n * r.steady_tokens_per_s_per_chip / chip_peak : 0;
}

// The run's mesh (an unset one on a run that stopped before its devices were known).
models::Mesh run_mesh(const TrainingWorkload& t, const TrainingRunResult& r, const HwConfig& hw) {
  try {
    return resolve_mesh(t, r.replicas, hw.multislice.slices);
  } catch (const ConfigError&) {
    return {};
  }
}

json memory_json(const compiler::MemoryBreakdown& m) {
  return {{"parameter_bytes", m.parameter_bytes}, {"gathered_parameter_bytes", m.gathered_parameter_bytes},
          {"gradient_bytes", m.gradient_bytes}, {"optimizer_state_bytes", m.optimizer_state_bytes},
          {"activation_bytes", m.activation_bytes}, {"peak_bytes", m.peak_bytes}};
}

// The report's kinds (sim/analysis/collective_stats.h): busy time, or exposed time. `dcn`: the
// multislice all-reduces' part across the data-center network (0 on one slice).
json collective_times_json(const CollectiveStats& t, bool exposed = false) {
  auto time = [&](isa::Collective k) { return exposed ? t[k].exposed_s : t[k].busy_s; };
  return {{"allreduce", time(isa::Collective::kAllReduce)},
          {"allgather", time(isa::Collective::kAllGather)},
          {"reducescatter", time(isa::Collective::kReduceScatter)},
          {"dcn", time(isa::Collective::kDcnAllReduce)}};
}

// The name of a collective's mesh axis (isa::Instr::collective_axis): models::MeshAxis within a
// slice, `dcn` across slices; `none` for collectives of no known axis (an imported module's).
std::string axis_name(size_t a) {
  if (a == isa::kDcnAxis) return "dcn";
  if (a == 0 || a > size_t(models::kMeshAxes)) return "none";
  return std::string(enum_name(models::MeshAxis(a - 1)));
}

}  // namespace

json metric_json(const MetricSamples& m, const std::string& unit) {
  std::vector<double> v = m.samples;
  std::sort(v.begin(), v.end());
  double total = 0;
  for (double x : v) total += x;
  json pct = json::object();
  // torch_xla's metrics report prints these percentiles (nearest rank).
  for (int p : {1, 5, 10, 20, 50, 80, 90, 95, 99}) {
    if (v.empty()) break;
    const size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
    pct[fmt::format("p{}", p)] = v[std::min(v.size() - 1, rank ? rank - 1 : 0)];
  }
  // Every sample, compactly: the distinct values ascending with their counts. Replayed steps repeat
  // the same few values, so this stays small on long runs; `tpusim metrics` derives its
  // percentiles from it (workloads/report/metrics_report.h).
  json samples = json::array();
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j < v.size() && v[j] == v[i]) ++j;
    samples.push_back({v[i], j - i});
    i = j;
  }
  return {{"count", v.size()}, {"total_" + unit, total}, {"mean_" + unit, v.empty() ? 0.0 : total / double(v.size())},
          {"percentiles_" + unit, pct}, {"samples_" + unit, samples}};
}

json step_json(const StepRecord& s) {
  json j = {{"index", s.index},       {"kind", enum_name(s.kind)},
          {"graph", enum_name(s.graph)},         {"grad_buffers", s.grad_buffers},
          {"epoch", s.epoch},         {"compiling_processes", s.compiling_processes},
          {"batch", s.batch},         {"seq", s.seq},
          {"examples", s.examples},   {"compile", s.compiled ? "compiled" : s.persistent_hit ? "persistent" : "cached"},
          {"first_execution", s.first_execution},
          {"compile_s", s.compile_s}, {"host_s", s.host_s},
          {"setup_s", s.setup_s},     {"device_s", s.device_s},
          {"allreduce_s", s.allreduce_s}, {"collective_s", s.collective_s}, {"start_s", s.start_s},
          {"collectives_s", collective_times_json(s.collectives)},
          {"end_s", s.end_s},         {"step_time_s", s.step_time_s}};
  if (s.repeat > 1) j["repeat"] = s.repeat;  // identical steps folded into this record (kStepsListedInFull)
  return j;
}

// The offloaded activations every device of one host holds in its memory at once.
uint64_t host_memory_per_host(const HwConfig& hw, const TrainingRunResult& r) {
  return pinned_host_bytes(hw, r.host_memory_bytes);
}

json program_json(const ProgramRecord& p) {
  json allreduces = json::array();
  for (const auto& a : p.allreduces)
    allreduces.push_back({{"bytes", a.bytes}, {"algorithm", a.algorithm}, {"starts_after", a.starts_after},
                          {"overlapped", a.overlapped}});
  json j = {{"name", p.name}, {"graph", enum_name(p.graph)}, {"key", p.key}, {"batch", p.batch}, {"seq", p.seq},
            {"graph_nodes", p.graph_nodes}, {"hlo_ops", p.hlo_ops}, {"kernels", p.kernels},
            {"persistent_bytes", p.persistent_bytes}, {"peak_hbm_bytes", p.peak_hbm_bytes},
            {"parameter_bytes", p.parameter_bytes}, {"optimizer_state_bytes", p.optimizer_state_bytes},
            {"cmem_bytes_per_chip", p.cmem_bytes_per_chip},
            {"allreduce_bytes", p.allreduce_bytes}, {"allgather_bytes", p.allgather_bytes},
            {"reducescatter_bytes", p.reducescatter_bytes}, {"dcn_bytes", p.dcn_bytes},
            {"collectives_s", collective_times_json(p.collectives)},
            {"collectives_exposed_s", collective_times_json(p.collectives, true)}, {"memory", memory_json(p.memory)},
            {"flops", p.flops}, {"compile_s", p.compile_s},
            {"allreduces", allreduces}, {"device_s", p.device_s}, {"executions", p.executions},
            {"cores", p.cores}, {"simulated_cores", p.simulated_cores},
            {"op_profile", p.op_profile ? op_profile_json(*p.op_profile) : json::array()}};
  if (p.op_profile) j["op_profile_core"] = {{"chip", p.op_profile->chip}, {"core", p.op_profile->core}};
  if (p.host_memory_bytes > 0)  // host offload: only then (earlier reports unchanged)
    j["host_offload"] = {{"bytes_per_step", p.host_offload_bytes}, {"host_memory_bytes", p.host_memory_bytes}};
  if (p.remat.values > 0)  // XLA's rematerialization ran: only then
    j["rematerialization"] = {{"values", p.remat.values}, {"bytes", p.remat.bytes},
                              {"recomputed_flops", p.remat.flops}, {"peak_hbm_bytes_before", p.remat.peak_bytes_before}};
  return j;
}

json step_program_units() {
  return {{"steps[].batch", "examples (per device)"},
          {"steps[].seq", "tokens"},
          {"steps[].examples", "examples"},
          {"steps[].compile_s", "s"},
          {"steps[].host_s", "s"},
          {"steps[].setup_s", "s"},
          {"steps[].device_s", "s"},
          {"steps[].allreduce_s", "s"},
          {"steps[].collective_s", "s"},
          {"steps[].start_s", "s"},
          {"steps[].end_s", "s"},
          {"steps[].collectives_s", "s (the profiled core)"},
          {"programs[].collectives_s", "s (the profiled core, per execution)"},
          {"programs[].collectives_exposed_s", "s (the profiled core, per execution)"},
          {"programs[].allgather_bytes", "bytes (per core)"},
          {"programs[].reducescatter_bytes", "bytes (per core)"},
          {"programs[].dcn_bytes", "bytes (per core, sent to other slices)"},
          {"programs[].host_offload.bytes_per_step", "bytes (per core and execution, each way over PCIe)"},
          {"programs[].host_offload.host_memory_bytes", "bytes (per device, held at once)"},
          {"programs[].rematerialization.values", "count (values recomputed to fit HBM)"},
          {"programs[].rematerialization.bytes", "bytes (per device: the recomputed values' buffers)"},
          {"programs[].rematerialization.recomputed_flops", "flop (per core and execution)"},
          {"programs[].rematerialization.peak_hbm_bytes_before", "bytes (per device, the plan before recomputing)"},
          {"programs[].memory.*", "bytes (per device, at the peak)"},
          {"steps[].step_time_s", "s"}, {"steps[].repeat", "steps"},
          {"programs[].batch", "examples (per device)"},
          {"programs[].seq", "tokens"},
          {"programs[].graph_nodes", "count"},
          {"programs[].hlo_ops", "count"},
          {"programs[].kernels", "count"},
          {"programs[].persistent_bytes", "bytes (per device)"},
          {"programs[].peak_hbm_bytes", "bytes (per device)"},
          {"programs[].cmem_bytes_per_chip", "bytes (per chip)"},
          {"programs[].parameter_bytes", "bytes (per device)"},
          {"programs[].optimizer_state_bytes", "bytes (per device)"},
          {"programs[].allreduce_bytes", "bytes (per core)"},
          {"programs[].allreduces[].bytes", "bytes (per core)"},
          {"programs[].flops", "flop (per device)"},
          {"programs[].compile_s", "s"},
          {"programs[].device_s", "s"},
          {"programs[].executions", "count"},
          {"programs[].cores", "cores"},
          {"programs[].simulated_cores", "cores"},
          {"programs[].op_profile[].count", "count (per execution)"},
          {"programs[].op_profile[].time_s", "s (per execution)"},
          {"programs[].op_profile[].flops", "flop (per core, per execution)"},
          {"programs[].op_profile[].hbm_bytes", "bytes (per core, per execution)"},
          {"programs[].op_profile[].vpu_vreg_ops", "count (vector-register operations, per core, per execution)"},
          {"programs[].op_profile[].ici_bytes", "bytes (sent to other chips, per core, per execution)"},
          {"programs[].op_profile[].compute_bound_s", "s (per execution)"},
          {"programs[].op_profile[].memory_bound_s", "s (per execution)"},
          {"programs[].op_profile[].vpu_bound_s", "s (per execution)"},
          {"programs[].op_profile[].ici_bound_s", "s (per execution)"},
          {"programs[].op_profile_core", "chip and core index"},
          {"steps[].compiling_processes", "count"}};
}

json make_training_report(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunResult& r,
                          const RunContext& ctx) {
  const TrainingWorkload& t = w.training();
  json j;
  j["tpusim"] = {{"version", TPUSIM_VERSION}, {"config_hash", config_hash(ctx.hw_dump, ctx.workload_dump)}};
  j["run"] = {{"engine", r.engine},
              {"full_sim", r.full_sim},
              {"hw_file", ctx.hw_file},
              {"workload_file", ctx.workload_file},
              {"simulations", r.simulations},
              {"replays", r.replays},
              {"memoized", r.memoized},
              {"wall_time_s", {{"compile", r.compile_wall_s}, {"simulate", r.simulate_wall_s}, {"total", ctx.total_wall_s}}}};
  j["hw"] = {{"name", hw.name},
             {"generation", hw.chip.generation},
             {"chips", hw.slice.chips()},
             {"slices", hw.multislice.slices},
             {"cores_per_chip", hw.chip.cores},
             {"megacore", hw.chip.megacore},
             {"device", hw.chip.megacore ? "chip" : "core"},  // what "per device" figures are per
             {"cores_per_device", cores_per_device(hw.chip)},
             {"hbm_bytes_per_core", r.hbm_bytes_per_core},
             {"core_peak_tflop_per_s", resolve_hw(hw).core_peak_tflop_per_s},
             {"host_cpus", hw.host.cpus},
             {"host_cpu_ghz", hw.host.cpu_ghz},
             {"host_ram_gib", hw.host.ram_gib}};
  j["workload"] = {{"name", w.name},         {"kind", enum_name(w.kind())},
                   {"model", t.model},       {"task", enum_name(t.task)},
                   // The parameters of the class `tpusim models` counts (BertModel, GPT2LMHeadModel with
                   // its tied head once, ViTModel): no task head.
                   {"model_parameters", base_model_parameters(t)},
                   {"framework", enum_name(t.framework)}, {"precision", enum_name(t.precision)},
                   {"optimizer", enum_name(t.optimizer)}, {"padding", t.padding.to_string()},
                   {"max_length", t.max_length}, {"per_device_batch_size", config::json_count(t.per_device_batch_size)},
                   {"eval_per_device_batch_size", config::json_count(t.eval_per_device_batch_size)},
                   {"global_batch", r.global_batch}, {"processes", r.processes},
                   {"replicas", r.replicas}, {"clients", r.framework},
                   {"steps_per_execution", t.steps_per_execution}, {"tpu_runtime", enum_name(t.tpu_runtime)},
                   {"data_location", enum_name(t.data_location)},
                   {"epochs", t.epochs},     {"launcher", enum_name(t.launcher)},
                   {"sharding", enum_name(t.sharding)}, {"fsdp_grad_ckpt", t.fsdp_grad_ckpt}, {"overlap_collectives", t.overlap_collectives},
                   {"ignored_keys", t.ignored_keys}};  // Hugging Face / Accelerate names without effect
  if (t.task == Task::kSeq2seq) {  // the targets (other tasks' reports carry no such keys)
    j["workload"]["max_target_length"] = t.max_target_length;
    j["workload"]["train_target"] = t.dataset.train_target;
  }
  const TimeBreakdown& b = r.breakdown;
  j["summary"] = {{"total_time_s", r.total_time_s},
                  {"steady_step_time_s", r.steady_step_time_s},
                  {"examples_per_s", r.examples_per_s},
                  {"steady_examples_per_s", r.steady_examples_per_s},
                  {"steady_tokens_per_s_per_chip", r.steady_tokens_per_s_per_chip},
                  {"compiles", r.compiles},
                  {"compile_time_s", r.compile_time_s},
                  {"busiest_process", r.busiest_process},
                  {"warmup_time_s", r.warmup_time_s},
                  {"upload_time_s", r.upload_time_s},
                  {"peak_hbm_bytes", r.peak_hbm_bytes},
                  {"mxu_utilization", r.mxu_utilization},
                  {"mfu", r.mfu},
                  {"mfu_6nd", mfu_6nd(hw, t, r)},
                  {"allreduce_share", r.allreduce_share},
                  {"collective_share", r.collective_share},
                  {"padding_waste", r.padding_waste},
                  {"train_steps", r.train_steps},
                  {"eval_steps", r.eval_steps},
                  {"optimizer_steps", r.optimizer_steps},
                  {"train_examples", r.train_examples},
                  {"epochs_run", r.epochs_run},
                  {"breakdown_s",
                   {{"compile", b.compile}, {"warmup", b.warmup}, {"host", b.host}, {"device", b.device},
                    {"allreduce", b.allreduce}, {"eval", b.eval}}}};
  j["summary"]["sharding"] = enum_name(t.sharding);
  const models::Mesh mesh = run_mesh(t, r, hw);
  j["summary"]["mesh"] = {{"data", mesh[models::MeshAxis::kData]}, {"fsdp", mesh[models::MeshAxis::kFsdp]},
                          {"sequence", mesh[models::MeshAxis::kSequence]}, {"tensor", mesh[models::MeshAxis::kTensor]},
                          {"dcn_data", mesh.slices}};
  j["summary"]["energy"] = training_energy_json(training_energy(hw, r));
  j["summary"]["cost"] = cost_json(training_cost(hw, r));
  // Trainer settings off by default: their fields appear only when set (earlier reports unchanged).
  if (r.batch_search.used) {
    j["workload"]["per_device_batch_size_used"] = r.batch_search.used;
    j["workload"]["per_device_batch_sizes_tried"] = r.batch_search.tried;
    j["summary"]["breakdown_s"]["batch_search"] = b.batch_search;
  }
  if (t.logging_steps) j["summary"]["logging_syncs"] = {{"count", r.logging_syncs}, {"time_s", r.logging_sync_s}};
  if (t.eval_strategy != EvalStrategy::kEpoch) j["workload"]["eval_strategy"] = enum_name(t.eval_strategy);
  if (t.spmd) j["workload"]["spmd"] = true;  // torch_xla's SPMD mode (earlier reports unchanged)
  if (t.eval_precision != EvalPrecision::kSame) j["workload"]["eval_precision"] = enum_name(t.eval_precision);
  j["summary"]["memory"] = memory_json(r.peak_memory);
  const CollectiveStats& ct = r.collective_time;
  auto kind_json = [&](isa::Collective k, uint64_t bytes) {
    return json{{"time_s", ct[k].busy_s}, {"exposed_s", ct[k].exposed_s}, {"bytes", bytes}};
  };
  j["summary"]["collectives"] = {{"allreduce", kind_json(isa::Collective::kAllReduce, r.allreduce_bytes)},
                                 {"allgather", kind_json(isa::Collective::kAllGather, r.allgather_bytes)},
                                 {"reducescatter", kind_json(isa::Collective::kReduceScatter, r.reducescatter_bytes)},
                                 {"dcn", kind_json(isa::Collective::kDcnAllReduce, r.dcn_bytes)}};
  json by_axis = json::object();  // every axis, 0 where nothing ran along it
  for (size_t a = 1; a < ct.axes.size(); ++a)
    by_axis[axis_name(a)] = {{"time_s", ct.axes[a].busy_s}, {"exposed_s", ct.axes[a].exposed_s},
                             {"bytes_sent", ct.axes[a].bytes}};
  j["summary"]["collectives_by_axis"] = by_axis;
  j["summary"]["dcn_bytes"] = r.dcn_bytes;
  j["summary"]["host_offload"] = {{"host_memory_bytes", r.host_memory_bytes},
                                  {"host_memory_bytes_per_host", host_memory_per_host(hw, r)}};
  j["metrics"] = {{"CompileTime", metric_json(r.compile_time)},
                  {"ExecuteTime", metric_json(r.execute_time)},
                  {"TransferToDeviceTime", metric_json(r.transfer_to_device)},
                  {"TransferFromDeviceTime", metric_json(r.transfer_from_device)},
                  {"InboundData", metric_json(r.inbound_bytes, "bytes")},
                  {"OutboundData", metric_json(r.outbound_bytes, "bytes")},
                  {"UncachedCompile", r.compiles},
                  {"CachedCompile", r.cached_compiles},
                  {"PersistentCacheHit", r.persistent_hits},
                  {"MarkStep", r.mark_steps}};
  for (const auto& [op, n] : r.fallback_counters) j["metrics"][op] = n;  // CPU fallbacks, e.g. aten::nonzero
  json diags = json::array();
  for (const XlaDiagnostic& d : r.diagnostics)
    diags.push_back({{"severity", "warning"}, {"construct", d.construct}, {"code", d.code}, {"rule", d.rule},
                     {"rewrite", d.rewrite}, {"message", d.message}, {"occurrences", d.occurrences}});
  j["diagnostics"] = diags;
  json steps = json::array();
  for (const StepRecord& s : r.steps) steps.push_back(step_json(s));
  j["steps"] = steps;
  json programs = json::array();
  for (const ProgramRecord& p : r.programs) programs.push_back(program_json(p));
  j["programs"] = programs;
  json procs = json::array();
  for (const ProcessRecord& p : r.process_records)
    procs.push_back({{"index", p.index}, {"chip", p.chip}, {"core", p.core}, {"cores", p.cores}, {"host", p.host},
                     {"train_examples", p.train_examples}, {"eval_examples", p.eval_examples},
                     {"compiles", p.compiles}, {"cached_compiles", p.cached_compiles},
                     {"persistent_hits", p.persistent_hits}, {"compile_time_s", p.compile_time_s}});
  j["processes"] = procs;
  // Units of every numeric field, by path ([] = every element of an array); the summary's from the
  // field catalogue.
  json u = {{"hw.chips", "count"}, {"hw.slices", "count (slices joined by the data-center network; chips is per slice)"},
            {"hw.cores_per_chip", "count"}, {"hw.hbm_bytes_per_core", "bytes (per device: the chip's under megacore)"},
            {"hw.cores_per_device", "count"},
            {"hw.core_peak_tflop_per_s", "TFLOP/s"}, {"hw.host_cpus", "count"}, {"hw.host_cpu_ghz", "GHz"},
            {"hw.host_ram_gib", "GiB"}, {"run.simulations", "count"}, {"run.replays", "count"},
            {"run.memoized", "count"}, {"run.wall_time_s", "s"}, {"workload.max_length", "tokens"},
            {"workload.per_device_batch_size", "examples"}, {"workload.eval_per_device_batch_size", "examples"},
            {"workload.global_batch", "examples"}, {"workload.processes", "count"}, {"workload.epochs", "count"},
            {"workload.replicas", "count"}, {"workload.steps_per_execution", "steps"},
            {"workload.model_parameters", "count (BertModel: no task head)"},
            {"processes[].cores", "count"}, {"processes[].host", "host index"},
            {"metrics.*.count", "count"}, {"metrics.*.total_s", "s"}, {"metrics.*.mean_s", "s"},
            {"metrics.*.percentiles_s", "s"}, {"metrics.*.samples_s", "[s, count] pairs"},
            {"metrics.*.total_bytes", "bytes"}, {"metrics.*.mean_bytes", "bytes"},
            {"metrics.*.percentiles_bytes", "bytes"}, {"metrics.*.samples_bytes", "[bytes, count] pairs"}, {"metrics.UncachedCompile", "count"},
            {"metrics.CachedCompile", "count"}, {"metrics.PersistentCacheHit", "count"}, {"metrics.MarkStep", "count"},
            {"metrics.aten::*", "count"}, {"diagnostics[].occurrences", "count (train steps)"},
            {"processes[].compiles", "count"}, {"processes[].compile_time_s", "s"},
            {"processes[].cached_compiles", "count"}, {"processes[].persistent_hits", "count"},
            {"processes[].train_examples", "examples (incl. even_batches fill)"},
            {"processes[].eval_examples", "examples (incl. even_batches fill)"}};
  u.update(step_program_units());
  add_summary_units(u, kTrainingReport, j);
  add_energy_units(u);
  if (r.batch_search.used) {
    u["workload.per_device_batch_size_used"] = "examples";
    u["workload.per_device_batch_sizes_tried"] = "examples";
  }
  j["units"] = u;
  j["config"] = {{"hw_yaml", ctx.hw_dump}, {"workload_yaml", ctx.workload_dump}};
  return j;
}

std::string format_training_summary(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunResult& r,
                                    const RunContext& ctx) {
  const TrainingWorkload& t = w.training();
  std::string o;
  auto line = [&](const char* k, const std::string& v) { o += fmt::format("{:<10} {}\n", k, v); };
  line("configs", ctx.hw_file + " + " + ctx.workload_file);
  const std::string length = t.steps > 0 ? fmt::format("{} steps", t.steps) : fmt::format("{} epochs", t.epochs);
  // An image task has one sequence fixed by the image: padding and max_length do not apply.
  const uint32_t image_seq = image_tokens(t);
  const std::string shape = image_seq ? fmt::format("image_size {} ({} tokens)", t.image_size, image_seq)
                                      : fmt::format("padding {}, max_length {}", t.padding.to_string(), t.max_length);
  const std::string data = t.dataset.train_target.empty() ? t.dataset.train
                                                         : fmt::format("{} -> {}", t.dataset.train, t.dataset.train_target);
  const std::string seq2seq = t.task == Task::kSeq2seq ? fmt::format(", max_target_length {}", t.max_target_length) : "";
  line("workload", fmt::format("{} {} on {}, {}, {}{}, precision {}, {}", t.model, enum_name(t.task), data, length,
                               shape, seq2seq, enum_name(t.precision), enum_name(t.optimizer)));
  line("hardware", fmt::format("{} ({}{} chips x {} TensorCore{}{}), {}, {} host{} of {} CPUs at {} GHz",
                               hw.name,
                               hw.multislice.slices > 1 ? fmt::format("{} slices joined by the data-center network, each ",
                                                                      hw.multislice.slices)
                                                        : "",
                               hw.slice.chips(), hw.chip.cores, hw.chip.cores == 1 ? "" : "s",
                               r.megacore ? ", one megacore device per chip" : "",
                               r.framework, hw.slice.hosts,
                               hw.slice.hosts == 1 ? "" : "s", hw.host.cpus,
                               hw.host.cpu_ghz));
  const char* device = r.megacore ? "chip" : "core";
  line("batches", fmt::format("{} per {}, global {}; eval {} per {}; {} train steps ({} optimizer), {} eval steps",
                              r.batch_search.used ? r.batch_search.used : t.per_device_batch_size, device, r.global_batch, t.eval_per_device_batch_size, device, r.train_steps,
                              r.optimizer_steps, r.eval_steps));
  if (!t.ignored_keys.empty())
    line("ignored", fmt::format("{} Hugging Face / Accelerate key{} without effect on time (report.json workload.ignored_keys)",
                                t.ignored_keys.size(), t.ignored_keys.size() == 1 ? "" : "s"));
  if (r.batch_search.used)
    line("", fmt::format("auto_find_batch_size: settled on {} per {} (tried {}; the failed attempts took {})",
                         r.batch_search.used, device, fmt::join(r.batch_search.tried, ", "), dur(r.batch_search.failed_s)));
  uint32_t cores = 0, simulated = 0;  // the widest program's, and the most cores any program simulated
  for (const ProgramRecord& p : r.programs) {
    cores = std::max(cores, p.cores);
    simulated = std::max(simulated, p.simulated_cores);
  }
  const std::string replicas =
      simulated < cores ? fmt::format("; at most {} of {} cores simulated (symmetric replicas, exact)", simulated, cores) : "";
  const std::string memoized =
      r.memoized ? fmt::format(" ({} of them by another run, read from the program memo)", r.memoized) : "";
  line("engine", fmt::format("{}{}; {} programs simulated{}, {} executions replayed{}", r.engine,
                             r.full_sim ? " (--full-sim)" : "", r.simulations, memoized, r.replays, replicas));
  o += "\n";
  line("total", dur(r.total_time_s));
  line("steady", fmt::format("{} per step, {:.1f} examples/s ({:.1f} examples/s end to end), {:.0f} tokens/s per chip",
                             dur(r.steady_step_time_s), r.steady_examples_per_s, r.examples_per_s,
                             r.steady_tokens_per_s_per_chip));
  bool same = true;
  for (const ProcessRecord& p : r.process_records) same = same && p.compiles == r.compiles;
  if (same)
    line("compiles", r.processes == 1 ? fmt::format("{}, {} of compilation (one client compiles for every replica)",
                                                    r.compiles, dur(r.compile_time_s))
                                      : fmt::format("{} per process, {} of compilation (each of the {} processes "
                                                    "compiles its own)", r.compiles, dur(r.compile_time_s), r.processes));
  else
    line("compiles", fmt::format("{} on the busiest process (#{}), {} of compilation; the {} processes' batch "
                                 "shapes differ, so do their compiles (processes[] in report.json)",
                                 r.compiles, r.busiest_process, dur(r.compile_time_s), r.processes));
  line("warm-up", fmt::format("{} until the first step without a compile or an allocation", dur(r.warmup_time_s)));
  line("HBM", fmt::format("peak {} of {} per {}", gib(r.peak_hbm_bytes), gib(r.hbm_bytes_per_core), device));
  if (r.host_memory_bytes > 0) {
    uint64_t pcie = 0;
    for (const ProgramRecord& p : r.programs) pcie = std::max(pcie, p.host_offload_bytes);
    line("host", fmt::format("{} of offloaded activations per {} in host memory ({} per host); {} per core over PCIe "
                             "each way per step", gib(r.host_memory_bytes), device, gib(host_memory_per_host(hw, r)),
                             gib(pcie)));
  }
  for (const ProgramRecord& p : r.programs)
    if (p.remat.values > 0)
      line("remat", fmt::format("'{}': {} values recomputed ({}) to fit HBM, as XLA's rematerialization does "
                                "(its plan needed {}); {:.2f} TFLOP more per core and step",
                                p.name, p.remat.values, gib(p.remat.bytes), gib(p.remat.peak_bytes_before),
                                double(p.remat.flops) * 1e-12));
  if (has_cmem(hw.chip)) {
    uint64_t cmem = 0;
    for (const ProgramRecord& p : r.programs) cmem = std::max(cmem, p.cmem_bytes_per_chip);
    line("CMEM", fmt::format("{:.1f} MiB placed of {:.0f} MiB per chip (largest program)", double(cmem) / (1 << 20),
                             double(cmem_size_bytes(hw.chip)) / (1 << 20)));
  }
  const compiler::MemoryBreakdown& m = r.peak_memory;
  const models::Mesh mesh = run_mesh(t, r, hw);
  std::string layout = std::string(enum_name(t.sharding));
  if (mesh[models::MeshAxis::kTensor] > 1 || mesh.slices > 1) {  // name the mesh's axes of more than one device
    layout = "mesh";
    for (int a = 0; a < models::kMeshAxes; ++a)
      if (mesh.size[size_t(a)] > 1)
        layout += fmt::format("{} {} {}", layout == "mesh" ? "" : " x", enum_name(models::MeshAxis(a)), mesh.size[size_t(a)]);
    if (mesh.slices > 1) layout += fmt::format(" x dcn data {} (slices)", mesh.slices);
  }
  line("", fmt::format("{}: parameters {}{}, gradients {}, optimizer state {}, activations {}", layout,
                       gib(m.parameter_bytes),
                       m.gathered_parameter_bytes ? fmt::format(" (+ {} gathered)", gib(m.gathered_parameter_bytes)) : "",
                       gib(m.gradient_bytes), gib(m.optimizer_state_bytes), gib(m.activation_bytes)));
  const CollectiveStats& ct = r.collective_time;
  auto ici = [&](isa::Collective k, uint64_t bytes) {
    return fmt::format("{} {} ({} exposed, {})", collective_kind_name(k), dur(ct[k].busy_s), dur(ct[k].exposed_s), gib(bytes));
  };
  if (r.allreduce_bytes + r.allgather_bytes + r.reducescatter_bytes > 0)
    line("ICI", fmt::format("over the train steps (the last core to finish): {}, {}, {}",
                            ici(isa::Collective::kAllReduce, r.allreduce_bytes),
                            ici(isa::Collective::kAllGather, r.allgather_bytes),
                            ici(isa::Collective::kReduceScatter, r.reducescatter_bytes)));
  std::string axes;  // the mesh axes collectives ran along, when more than one did
  int along = 0;
  for (size_t a = 1; a < ct.axes.size(); ++a)
    if (ct.axes[a].busy_s > 0) {
      axes += fmt::format("{}{} {} ({} exposed)", along++ ? ", " : "", axis_name(a), dur(ct.axes[a].busy_s),
                          dur(ct.axes[a].exposed_s));
    }
  if (along > 1) line("mesh axes", "collective time along each, over the train steps: " + axes);
  if (r.dcn_bytes > 0)
    line("DCN", fmt::format("over the train steps: {} ({} exposed) in the all-reduces across the {} slices, {} per "
                            "core sent ({:.2f} GB/s per chip)",
                            dur(ct[isa::Collective::kDcnAllReduce].busy_s), dur(ct[isa::Collective::kDcnAllReduce].exposed_s),
                            hw.multislice.slices, gib(r.dcn_bytes),
                            hw.chip.dcn ? hw.chip.dcn->bandwidth_gbyte_per_s : 0.0));
  line("MXU", fmt::format("{:.1f}% utilization while executing, MFU {:.1f}% of steady steps (6ND: {:.1f}%); padding "
                          "wastes {:.1f}% of tokens", 100 * r.mxu_utilization, 100 * r.mfu, 100 * mfu_6nd(hw, t, r),
                          100 * r.padding_waste));
  if (const std::string e = training_energy_text(training_energy(hw, r), training_cost(hw, r)); !e.empty())
    line("energy", e);
  for (const XlaDiagnostic& d : r.diagnostics)
    o += fmt::format("warning: {} (in {} train steps)\n", d.message, d.occurrences);
  o += "\nwhere did the time go\n";
  const TimeBreakdown& b = r.breakdown;
  const std::pair<const char*, double> rows[] = {
      {"compile (XLA, blocks the step)", b.compile}, {"warm-up (program load, parameter upload)", b.warmup},
      {"host (tracing, dispatch, sync)", b.host},   {"device compute", b.device},
      {"gradient all-reduce", b.allreduce},          {"evaluation", b.eval}};
  for (const auto& [name, s] : rows)
    o += fmt::format("  {:<42} {:>14} {:>6.1f}%\n", name, dur(s), r.total_time_s > 0 ? 100 * s / r.total_time_s : 0);
  if (b.batch_search > 0)
    o += fmt::format("  {:<42} {:>14} {:>6.1f}%\n", "batch search (failed attempts)", dur(b.batch_search),
                     r.total_time_s > 0 ? 100 * b.batch_search / r.total_time_s : 0);
  if (r.logging_syncs)
    o += fmt::format("  host includes {} logging syncs (loss.item() every {} optimizer steps), {} of sync and copy\n",
                     r.logging_syncs, t.logging_steps, dur(r.logging_sync_s));
  o += fmt::format("  {:<42} {:>14}\n", "total", dur(r.total_time_s));
  // What the rows mean where they differ from the lines above (docs/training.md, "Report").
  o += "  compile: the devices' wait for compilations, each step's slowest process; it exceeds the busiest\n"
       "    process's own compile time (the compiles line) when processes compile at different steps.\n"
       "  gradient all-reduce: the train steps' time in the gradient all-reduce while the core computes nothing\n"
       "    (its exposed time); summary.allreduce_share in report.json is the steady steps' all-reduce time over\n"
       "    their device time, not over the step time. The ICI line is time inside collectives, hidden or not,\n"
       "    and the part of it exposed.\n";
  o += "\nprograms\n";
  size_t width = 26;
  for (const ProgramRecord& p : r.programs) width = std::max(width, p.name.size());
  for (const ProgramRecord& p : r.programs)
    o += fmt::format("  {:<{}} {:>6} runs  compile {:>9}  device {:>9}  peak HBM {}\n", p.name, width, p.executions,
                     dur(p.compile_s), dur(p.device_s), gib(p.peak_hbm_bytes));
  if (const ProgramRecord* mp = steady_train_program(r)) {
    const OpProfile& op = *mp->op_profile;
    o += fmt::format("\nwhere the step time goes: {}, {} per step (chip {} core {})\n"
                     "  the costliest kernels, a layer's copies as one row (every kernel: programs[].op_profile)\n",
                     mp->name, dur(op.time_s), op.chip, op.core);
    o += format_op_profile(group_op_profile(op), 10);
    o += "  " + op_bound_shares(op) + "\n";
  }
  o += "\n";
  line("wall time", fmt::format("compile {}, simulate {}, total {}", dur(r.compile_wall_s), dur(r.simulate_wall_s),
                                ctx.total_wall_s >= 0 ? dur(ctx.total_wall_s) : "-"));
  return o;
}

}  // namespace tpusim
