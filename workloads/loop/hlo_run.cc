#include "workloads/loop/hlo_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "base/config_error.h"
#include "compiler/collectives.h"
#include "compiler/graph_spmd.h"
#include "sim/engine/engine.h"
#include "sim/hw/resolved_hw.h"
#include "workloads/loop/framework.h"
#include "workloads/loop/hlo_module.h"
#include "workloads/loop/host_costs.h"

namespace tpusim {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// The framework's clients for `replicas` cores: how many, how many of them compile on one host at
// once (sharing its CPUs: host_costs.h compile_time_s), and their description.
struct Clients {
  uint32_t processes = 1, per_host = 1;
  std::string text;
};

Clients clients_of(const FrameworkPersonality& fw, const HwConfig& hw, uint32_t replicas) {
  const uint32_t devices = ceil_div(replicas, cores_per_device(hw.chip));
  const uint32_t per_host = std::max(1u, devices_per_host(hw));
  Clients c;
  switch (fw.clients) {
    case FrameworkPersonality::Clients::kPerDevice:
      c.processes = devices;
      c.per_host = std::min(devices, per_host);
      c.text = fmt::format("{} process{} (one per device)", devices, devices == 1 ? "" : "es");
      break;
    case FrameworkPersonality::Clients::kPerHost:
      c.processes = ceil_div(devices, per_host);
      c.text = fmt::format("{} process{} (one per host, jax.distributed)", c.processes, c.processes == 1 ? "" : "es");
      break;
    case FrameworkPersonality::Clients::kOne:
      c.text = "1 client (TPUStrategy)";
      break;
  }
  return c;
}

}  // namespace

uint32_t hlo_replicas(const HwConfig& hw, const HloWorkload& h, int64_t replica_count, int64_t num_partitions) {
  const uint32_t cores = hw.slice.chips() * hw.chip.cores;
  if (h.replicas > 0) {
    if (h.replicas > cores)
      throw ConfigError({h.replicas_origin.file, "replicas", h.replicas_origin.line, std::to_string(h.replicas),
                         fmt::format("is more than the {} cores of {}", cores, hw.name),
                         fmt::format("use replicas <= {}, or a larger slice (--hw)", cores)});
    return h.replicas;
  }
  const int64_t own = replica_count * num_partitions;
  if (own > int64_t(cores))
    throw ConfigError({h.module_origin.file, "module", h.module_origin.line, h.module,
                       fmt::format("the module's replica_count x num_partitions ({} x {} = {}) is more than the {} cores "
                                   "of {}", replica_count, num_partitions, own, cores, hw.name),
                       fmt::format("set replicas <= {}, or use a larger slice (--hw)", cores)});
  return uint32_t(std::max<int64_t>(1, own));
}

HloRunResult run_hlo(const HwConfig& hw, const WorkloadConfig& w, const HloRunOptions& o) {
  if (w.kind != "hlo")
    throw ConfigError({w.name, "kind", 0, w.kind, "this driver runs only workloads of kind 'hlo'", ""});
  const HloWorkload& h = w.hlo;
  // An unknown engine is bad input: fail before parsing a large module.
  std::unique_ptr<Engine> engine = make_engine(o.engine, hw);
  HloRunResult r;
  r.engine = std::string(engine->name());

  if (o.on_stage) o.on_stage("parse");
  auto t0 = std::chrono::steady_clock::now();
  const hlo::Module m = load_step_module(h, &r.module_file);
  r.module_name = m.name;
  r.module_replica_count = m.replica_count;
  r.module_num_partitions = m.num_partitions;
  r.replicas = hlo_replicas(hw, h, m.replica_count, m.num_partitions);
  hlo::ImportOptions io;
  if (h.while_trip_count > 0) io.while_trip_count = int64_t(h.while_trip_count);
  io.replicas = int64_t(r.replicas);  // collectives span the cores the module runs on
  // A pre-partitioning module becomes one partition's program (each core runs one partition).
  hlo::SpmdResult spmd = partition_step_module(h, m, r.replicas);
  r.spmd = std::move(spmd.report);
  if (spmd.module) r.module_stats = hlo::hlo_statistics(m);
  hlo::HloImport imp = hlo::import_hlo(spmd.module ? *spmd.module : m, io);
  r.stats = std::move(imp.stats);
  for (const hlo::SpmdNote& n : r.spmd.unmodelled) r.stats.unmodelled.push_back({n.instruction, n.opcode, n.line, n.reason});
  r.parse_wall_s = seconds_since(t0);

  if (o.on_stage) o.on_stage("compile");
  t0 = std::chrono::steady_clock::now();
  std::vector<compiler::CoreId> ring = compiler::ring_order(hw);
  ring.resize(r.replicas);
  const compiler::SpmdProgram sp = compiler::compile_graph_spmd(imp.graph, hw, m.name, ring);
  r.compile_wall_s = seconds_since(t0);
  // A replica's buffers must fit its device's HBM, as a training step's must (XLA's "Resource
  // exhausted" when the program is allocated).
  if (!sp.lowered)
    throw OutOfHbmError(
        out_of_hbm_message(sp.memory, m.name, resolve_hw(hw).device_hbm_bytes, hw.chip.megacore,
                           "Partition the module over more cores (num_partitions with sharding annotations), run it with "
                           "a smaller batch, or on a chip with more HBM (--hw)."),
        0);

  TrainingWorkload tw;  // the personality is the training workload's (framework.h)
  tw.framework = h.framework;
  tw.choices = resolve_choices(tw);
  const FrameworkPersonality fw = framework_personality(tw);
  const Clients cl = clients_of(fw, hw, r.replicas);
  r.processes = cl.processes;
  r.clients = cl.text;

  ProgramRecord& p = r.program;
  p.name = m.name;
  p.graph = "hlo";
  p.key = m.name;
  p.graph_nodes = imp.graph.nodes().size();
  p.hlo_ops = p.graph_nodes;  // as the training step's: the graph's nodes (step_cache.cc)
  p.kernels = sp.kernels;
  p.parameter_bytes = r.stats.parameter_bytes;
  p.flops = sp.program.info.flops * cores_per_device(hw.chip);  // per core (the first replica's stream) x cores of a device
  p.compile_s = compile_time_s(hw.host, p.hlo_ops, p.kernels, cl.per_host);

  // The parameters (weights, optimizer state, the batch) cross each chip's PCIe link once per
  // replica it holds, at the first execution.
  std::map<uint32_t, uint32_t> on_chip;
  uint32_t most = 0;
  for (const compiler::CoreId& c : ring) most = std::max(most, ++on_chip[c.chip]);
  r.upload_bytes = uint64_t(most) * r.stats.parameter_bytes;
  r.upload_time_s = pcie_transfer_s(hw, true, r.upload_bytes);

  const double trace_every = trace_time_s(hw.host, p.graph_nodes);  // tracing the whole step + dispatch
  const double dispatch = trace_time_s(hw.host, 0);                 // dispatch of a cached executable
  double host_t = 0, dev_t = 0;
  RunResult run;
  for (uint64_t i = 0; i < h.steps; ++i) {
    StepRecord rec;
    rec.index = i;
    rec.kind = "train";
    rec.graph = "hlo";
    TrainingTracer tracer(o.trace, o.trace_steps, hw.slice.chips(), hw.chip.cores, i);
    // The host runs at most one step ahead of the device (training_run.cc, host_side).
    host_t = std::max(host_t, i >= 2 ? r.steps[i - 2].end_s : 0.0);
    rec.host_s = (i == 0 || fw.trace_every_step) ? trace_every : dispatch;
    tracer.host("tracing", fmt::format("step {}", i), host_t, rec.host_s);
    host_t += rec.host_s;
    if (i == 0) {
      rec.compiled = true;
      rec.compiling_processes = cl.processes;
      rec.compile_s = p.compile_s;
      tracer.host("compile", p.name, host_t, rec.compile_s);
      host_t += rec.compile_s;
    }
    rec.start_s = std::max(host_t, dev_t);
    if (i == 0) {
      rec.first_execution = true;
      rec.setup_s = hw.host.program_load_s + r.upload_time_s;
      const bool traced = o.trace != nullptr;
      check_run_limits(estimate_run(sp.program, engine->name(), traced, current_rss_bytes()), o.limits,
                         sp.program.name, engine->name(), traced);
      if (o.on_stage) o.on_stage("simulate");
      if (o.on_progress)
        engine->set_progress([&](uint64_t done, uint64_t total) { o.on_progress({0, 0, sp.program.name, done, total}); });
      t0 = std::chrono::steady_clock::now();
      run = engine->run(sp.program, tracer.detail(i, true, rec.start_s + rec.setup_s));
      engine->set_progress({});
      r.simulate_wall_s = seconds_since(t0);
      p.op_profile = std::make_shared<const OpProfile>(run.op_profile);
      p.collectives = run.collectives;
      p.device_s = run.device_time_s;
      r.device_time_s = run.device_time_s;
    } else {
      rec.replayed = true;
    }
    rec.device_s = run.device_time_s;
    rec.collectives = run.collectives;
    double collective = 0;
    for (size_t k = 0; k < isa::kCollectiveKinds; ++k) collective += run.collectives[isa::Collective(k)].exposed_s;
    rec.collective_s = std::min(rec.device_s, collective);
    rec.flops = rec.model_flops = p.flops;
    const double prev_end = dev_t;
    dev_t = rec.start_s + rec.setup_s + rec.device_s;
    rec.end_s = dev_t;
    rec.step_time_s = rec.end_s - prev_end;
    if (rec.first_execution) {
      tracer.host("transfer", "program load: " + p.name, rec.start_s, hw.host.program_load_s);
      tracer.host("transfer", "parameter upload", rec.start_s + hw.host.program_load_s, r.upload_time_s);
    }
    if (tracer.traced(i, rec.first_execution, rec.start_s + rec.setup_s, rec.end_s))
      tracer.step(p.name, rec.start_s + rec.setup_s, rec.device_s);
    // The device's idle gap before the step is the compile (when there was one), else the host.
    const double gap = rec.start_s - prev_end;
    const double gap_compile = std::min(gap, rec.compile_s);
    r.breakdown.compile += gap_compile;
    r.breakdown.host += gap - gap_compile;
    r.breakdown.warmup += rec.setup_s;
    r.breakdown.device += rec.device_s;
    ++p.executions;
    r.steps.push_back(rec);
  }
  r.total_time_s = std::max(host_t, dev_t);
  r.breakdown.host += r.total_time_s - dev_t;
  r.compile_time_s = p.compile_s;
  r.warmup_time_s = r.steps.size() > 1 ? r.steps[0].end_s : r.total_time_s;
  // Steady: the last step (every step after the first runs the same program with the same host work).
  r.steady_step_time_s = r.steps.size() > 1 ? r.steps.back().step_time_s : 0;
  const double peak = resolve_hw(hw).device_peak_flop_per_s;
  r.mxu_utilization = r.device_time_s > 0 ? double(p.flops) / (r.device_time_s * peak) : 0;
  return r;
}

}  // namespace tpusim
