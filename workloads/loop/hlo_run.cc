#include "workloads/loop/hlo_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "base/config_error.h"
#include "compiler/collectives/collectives.h"
#include "sim/engine/engine.h"
#include "sim/hw/resolved_hw.h"
#include "workloads/loop/framework.h"
#include "workloads/loop/hlo_module.h"
#include "workloads/loop/hlo_step.h"

namespace tpusim {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

void run_imported_steps(const HwConfig& hw, ImportedStep& source, uint32_t cores, FrameworkKind framework,
                        uint64_t steps, const std::string& advice, const LoopOptions& o, LoopResult& r) {
  LoopSetup setup;
  setup.framework = framework_personality(framework);
  setup.devices = (cores + cores_per_device(hw.chip) - 1) / cores_per_device(hw.chip);
  setup.launcher = "one per device";
  setup.make_cache = [] { return compiler::CompileCache(1024); };  // one program: any capacity holds it
  // A replica's buffers must fit its device's HBM, as a training step's must (XLA's "Resource
  // exhausted" when the program is allocated).
  setup.out_of_hbm_advice = [advice](bool) { return advice; };
  StepLoop loop(hw, std::move(setup), source, o, r);
  loop.set_steps_total(steps);
  for (uint64_t i = 0; i < steps; ++i) loop.step({GraphKind::kImported, false, false, 0, nullptr});
  loop.finish();
}

HloRunResult run_hlo(const HwConfig& hw, const WorkloadConfig& w, const HloRunOptions& o) {
  if (w.kind() != WorkloadKind::kHlo)
    throw ConfigError({w.name, "kind", 0, enum_name(w.kind()), "this driver runs only workloads of kind 'hlo'", ""});
  const HloWorkload& h = w.hlo();
  // An unknown engine is bad input: fail before parsing a large module.
  (void)make_engine(o.engine, hw);
  HloRunResult r;

  if (o.on_stage) o.on_stage("parse");
  const auto t0 = std::chrono::steady_clock::now();
  const hlo::Module m = load_step_module(h, &r.module_file);
  r.module_name = m.name;
  r.module_replica_count = m.replica_count;
  r.module_num_partitions = m.num_partitions;
  r.cores = hlo_replicas(hw, h, m.replica_count, m.num_partitions);
  hlo::ImportOptions io;
  if (h.while_trip_count > 0) io.while_trip_count = int64_t(h.while_trip_count);
  io.replicas = int64_t(r.cores);  // collectives span the cores the module runs on
  // A pre-partitioning module becomes one partition's program (each core runs one partition).
  hlo::SpmdResult spmd = partition_step_module(h, m, r.cores);
  r.spmd = std::move(spmd.report);
  if (spmd.module) r.module_stats = hlo::hlo_statistics(m);
  hlo::HloImport imp = hlo::import_hlo(spmd.module ? *spmd.module : m, io);
  r.stats = std::move(imp.stats);
  for (const hlo::SpmdNote& n : r.spmd.unmodelled) r.stats.unmodelled.push_back({n.instruction, n.opcode, n.line, n.reason});
  r.parse_wall_s = seconds_since(t0);

  if (o.on_stage) o.on_stage("compile");
  std::vector<compiler::CoreId> cores = compiler::ring_order(hw);
  cores.resize(r.cores);
  ImportedStep source(hw, std::move(imp.graph), std::move(imp.donated), m.name, std::move(cores), r.stats.parameter_bytes);

  if (o.on_stage) o.on_stage("simulate");
  run_imported_steps(hw, source, r.cores, h.framework, h.steps,
                     "Partition the module over more cores (num_partitions with sharding annotations), run it with a "
                     "smaller batch, or on a chip with more HBM (--hw).",
                     o, r);
  r.device_time_s = r.programs.empty() ? 0 : r.programs.front().device_s;
  return r;
}

}  // namespace tpusim
