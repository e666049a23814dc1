#include "workloads/loop/kernel_run.h"

#include <chrono>

#include "base/config_error.h"

namespace tpusim {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The compiler's shape error names the whole `shape` map without a file: point it at the key the
// user wrote with the largest value (the dimension that overflows or makes a tensor too large).
[[noreturn]] void rethrow_at_shape_key(const ConfigError& e, const KernelWorkload& k) {
  ConfigErrorInfo i = e.info();
  const std::string* largest = nullptr;
  for (const auto& [key, v] : k.shape)
    if (!largest || v > k.shape.at(*largest)) largest = &key;
  if (largest) {
    i.yaml_path = "shape." + *largest;
    i.value = std::to_string(k.shape.at(*largest)) + " (shape " + i.value + ")";
    if (const auto o = k.shape_origins.find(*largest); o != k.shape_origins.end()) i.file = o->second.file, i.line = o->second.line;
  }
  throw ConfigError(i);
}

}  // namespace

void check_kernel_shape(const HwConfig& hw, const WorkloadConfig& w) {
  if (w.kind() != WorkloadKind::kKernel) return;
  try {
    (void)compiler::build_kernel_graph(kernel_request(w.kernel()), hw);
  } catch (const ConfigError& e) {
    if (e.info().yaml_path != "shape") throw;
    rethrow_at_shape_key(e, w.kernel());
  }
}

compiler::KernelRequest kernel_request(const KernelWorkload& k) {
  compiler::KernelRequest req;
  req.kernel = k.kernel;
  req.shape = k.shape;
  req.dtype = k.dtype;
  req.precision = k.precision;
  req.chip = k.chip;
  req.core = k.core;
  return req;
}

KernelRunResult run_kernel(const HwConfig& hw, const WorkloadConfig& workload, const KernelRunOptions& opts) {
  if (workload.kind() != WorkloadKind::kKernel) {
    ConfigErrorInfo e;
    e.file = workload.name;
    e.yaml_path = "kind";
    e.value = enum_name(workload.kind());
    e.rule = "this driver runs only workloads of kind 'kernel'";
    throw ConfigError(e);
  }
  // Build the engine first: an unknown engine name is bad input and should fail before compiling.
  std::unique_ptr<Engine> engine = make_engine(opts.engine, hw);

  KernelRunResult r;
  r.engine = std::string(engine->name());

  if (opts.on_stage) opts.on_stage("compile");
  auto t0 = std::chrono::steady_clock::now();
  isa::Program program;
  try {
    program = compiler::compile_kernel(kernel_request(workload.kernel()), hw);
  } catch (const ConfigError& e) {
    if (e.info().yaml_path != "shape") throw;
    rethrow_at_shape_key(e, workload.kernel());
  }
  r.ideal = compiler::ideal_cycles(program, hw);
  r.compile_wall_s = seconds_since(t0);

  r.program_name = program.name;
  r.info = program.info;
  r.cores_used = uint32_t(program.cores.size());
  for (size_t c = 0; c < program.cores.size(); ++c) r.instructions += program.stream(c).stream_size();

  const bool trace = opts.trace != nullptr;
  check_run_limits(estimate_run(program, engine->name(), trace, current_rss_bytes()), opts.limits, program.name,
                     engine->name(), trace);
  if (opts.on_stage) opts.on_stage("simulate");
  if (opts.on_progress)
    engine->set_progress([&](uint64_t done, uint64_t total) { opts.on_progress({0, 0, program.name, done, total}); });
  t0 = std::chrono::steady_clock::now();
  r.run = engine->run(program, opts.trace);
  r.simulate_wall_s = seconds_since(t0);
  return r;
}

}  // namespace tpusim
