#include "workloads/loop/kernel_run.h"

#include <chrono>

#include "config/config_error.h"

namespace tpusim {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

compiler::KernelRequest kernel_request(const KernelWorkload& k) {
  compiler::KernelRequest req;
  req.kernel = k.kernel;
  req.shape = k.shape;
  // The schema checked both strings (its allowed values are these parsers' names).
  req.dtype = models::parse_float_dtype(k.dtype).value();
  req.precision = models::parse_dot_precision(k.precision).value();
  req.chip = k.chip;
  req.core = k.core;
  return req;
}

KernelRunResult run_kernel(const HwConfig& hw, const WorkloadConfig& workload, const KernelRunOptions& opts) {
  if (workload.kind != "kernel") {
    ConfigErrorInfo e;
    e.file = workload.name;
    e.yaml_path = "kind";
    e.value = workload.kind;
    e.rule = "this driver runs only workloads of kind 'kernel'";
    throw ConfigError(e);
  }
  // Build the engine first: an unknown engine name is bad input and should fail before compiling.
  std::unique_ptr<Engine> engine = make_engine(opts.engine, hw);

  KernelRunResult r;
  r.engine = std::string(engine->name());

  if (opts.on_stage) opts.on_stage("compile");
  auto t0 = std::chrono::steady_clock::now();
  isa::Program program = compiler::compile_kernel(kernel_request(workload.kernel), hw);
  r.ideal = compiler::ideal_cycles(program, hw);
  r.compile_wall_s = seconds_since(t0);

  r.program_name = program.name;
  r.info = program.info;
  r.cores_used = uint32_t(program.cores.size());
  for (size_t c = 0; c < program.cores.size(); ++c) r.instructions += program.stream(c).instrs.size();

  const bool trace = opts.trace != nullptr;
  check_memory_limit(estimate_run(program, engine->name(), trace, current_rss_bytes()), opts.max_memory, program.name,
                     engine->name(), trace);
  if (opts.on_stage) opts.on_stage("simulate");
  t0 = std::chrono::steady_clock::now();
  r.run = engine->run(program, opts.trace);
  r.simulate_wall_s = seconds_since(t0);
  return r;
}

}  // namespace tpusim
