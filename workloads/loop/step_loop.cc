#include "workloads/loop/step_loop.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "compiler/collectives/collective_plan.h"
#include "sim/hw/resolved_hw.h"
#include "workloads/loop/program_memo.h"
#include "workloads/loop/host_costs.h"

namespace tpusim {
namespace {

// Per core and execution: what the step's collectives send to other slices.
uint64_t dcn_bytes(const compiler::CompiledStep& c) {
  uint64_t b = 0;
  for (const compiler::GraphCollective& g : c.collectives) b += g.dcn_bytes_per_core;
  return b;
}

void add_collectives(LoopResult& r, const compiler::CompiledStep& c, const CollectiveStats& t) {
  r.collective_time += t;
  r.allreduce_bytes += c.allreduce_bytes;
  r.allgather_bytes += c.allgather_bytes;
  r.reducescatter_bytes += c.reducescatter_bytes;
  r.dcn_bytes += dcn_bytes(c);
}

// A device's useful flops per execution: the per-core program's on each of its cores. A megacore
// device computing an odd number B of examples (the batch; times T under tensor parallelism) runs
// ceil(B/2) on each core; only B of them are useful.
// `recompute`: without the flops of activation recomputation (the model's flops, for MFU).
uint64_t device_flops(const BuiltStep& s, const HwConfig& hw, bool recompute = true) {
  const uint64_t f = s.compiled.program.info.flops - (recompute ? 0 : std::min(s.recompute_flops, s.compiled.program.info.flops));
  const uint64_t c = cores_per_device(hw.chip), b = s.device_examples ? s.device_examples : s.variant.batch,
                 per_core = (b + c - 1) / c;
  if (c == 1 || per_core == 0 || per_core * c == b) return f * c;
  return uint64_t(double(f) * double(b) / double(per_core));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

StepLoop::StepLoop(const HwConfig& hw, LoopSetup setup, StepSource& source, const LoopOptions& o, LoopResult& r)
    : hw_(hw), setup_(std::move(setup)), source_(source), executor_(hw, o.engine, o.full_sim), o_(o), r_(r) {
  executor_.set_limits(o.limits);
  if (o_.on_progress)
    executor_.set_progress([this](std::string_view program, uint64_t done, uint64_t total) {
      o_.on_progress({r_.steps.size(), steps_total_, program, done, total});
    });
  const FrameworkPersonality& fw = setup_.framework;
  const uint32_t n = fw.client_count(hw, setup_.devices);
  procs_.reserve(n);
  for (uint32_t c = 0; c < n; ++c)
    procs_.push_back({setup_.make_cache(), fw.first_device(hw, setup_.devices, c), fw.device_count(hw, setup_.devices, c),
                      fw.host_of(hw, setup_.devices, c)});
  r_.processes = n;
  r_.replicas = setup_.devices;
  r_.framework = fw.describe(hw, setup_.devices, setup_.launcher);
  r_.engine = o.engine;
  r_.full_sim = o.full_sim;
  r_.hbm_bytes_per_core = resolve_hw(hw).device_hbm_bytes;
  r_.megacore = hw.chip.megacore;
}

StepLoop::~StepLoop() = default;

void StepLoop::host_side(const LoopStep& ls, const Shape& global, StepRecord& rec, TrainingTracer& tracer) {
  const GraphKind kind = ls.kind;
  const bool grad_buffers = ls.grad_buffers, eval = ls.eval;
  // The host runs at most one step ahead: tracing step n waits for step n-2 to complete (the
  // parallel loader's mark_step hands step n-1 to the device while n is traced).
  const double ahead = steps_run_ >= 2 ? end_before_last_ : 0;
  const size_t breaks = eval ? 0 : setup_.breaks.size();
  struct Lookup {
    const StepInfo* info = nullptr;
    compiler::CacheResult result = compiler::CacheResult::kHit;
    uint32_t examples = 0;
  };
  const uint32_t gb = global.b, gs = global.s, gt = global.t;
  std::vector<Lookup> look(procs_.size());
  std::map<uint32_t, uint32_t> compiling_on_host;
  uint32_t compiling = 0;
  for (size_t p = 0; p < procs_.size(); ++p) {
    // A client compiles the shape of its own batch (torch_xla) or the global SPMD program.
    uint32_t b = 0, s = 0, t = 0;
    for (uint32_t c = procs_[p].first_device; ls.batch && c < procs_[p].first_device + procs_[p].devices; ++c) {
      b = std::max(b, ls.batch->processes[c].batch_size);
      s = std::max(s, ls.batch->processes[c].padded_length);
      t = std::max(t, ls.batch->processes[c].target_padded_length);
      look[p].examples += ls.batch->processes[c].batch_size;
    }
    if (!setup_.framework.per_client_shapes) b = gb, s = gs, t = gt;
    if (b == 0 && !source_.fixed_shapes()) continue;  // nothing to run: this process only waits for the others
    look[p].info = &source_.info({kind, b, s, grad_buffers, t});
    // Writes to the persistent cache are deferred to the step's end: processes that compile the
    // same graph at the same time all miss.
    look[p].result = procs_[p].cache.lookup_or_insert(look[p].info->key, /*defer_write=*/true);
    if (look[p].result == compiler::CacheResult::kMiss) ++compiling, ++compiling_on_host[procs_[p].host];
  }
  const double scale = host_speed_scale(hw_.host);
  // TPU Node: the batch crosses the network from the user's VM (tf.data prefetch pipelines it with
  // the device, so it is host-side time of the step).
  double remote_input_s = 0;
  if (setup_.remote_input) {
    const uint64_t bytes = source_.get({kind, gb, gs, grad_buffers, gt}).compiled.infeed_bytes * r_.replicas *
                           cores_per_device(hw_.chip);  // the program's infeed is per core
    remote_input_s = hw_.host.remote_input_latency_s + double(bytes) / (hw_.host.remote_input_gbyte_per_s * 1e9);
  }
  rec.host_s = 0;
  rec.compile_s = 0;
  for (size_t p = 0; p < procs_.size(); ++p) {
    if (!look[p].info) continue;
    Process& pr = procs_[p];
    const StepInfo& info = *look[p].info;
    pr.host_t = std::max(pr.host_t, ahead);
    // torch_xla re-records the graph every step; jit/tf.function trace only a new signature.
    // Dispatch (the Python loop, the loader) is per execution of steps_per_execution steps.
    const bool new_signature = look[p].result != compiler::CacheResult::kHit;
    const double trace_s = (setup_.framework.trace_every_step || new_signature ? double(info.graph_nodes) * hw_.host.trace_s_per_node : 0) * scale +
                           hw_.host.step_overhead_s * scale / setup_.framework.steps_per_execution + remote_input_s;
    if (p == 0) tracer.host("tracing", fmt::format("step {}", rec.index), pr.host_t, trace_s);
    pr.host_t += trace_s;
    rec.host_s = std::max(rec.host_s, trace_s);
    // Concurrent compilations (one single-threaded compiler per process) share their host's CPUs.
    const uint32_t sharing = std::max(compiling_on_host[pr.host], 1u);
    double compile_s = 0;
    switch (look[p].result) {
      case compiler::CacheResult::kMiss:
        compile_s = compile_time_s(hw_.host, info.hlo_ops, info.kernels, sharing);
        ++pr.compiles;
        pr.compile_time.add(compile_s);
        rec.compiled = true;
        break;
      case compiler::CacheResult::kPersistentHit:
        // Deserializing a cached executable costs about a compilation's fixed part, not its passes.
        compile_s = hw_.host.compile_base_s * scale;
        ++pr.persistent_hits;
        rec.persistent_hit = true;
        break;
      case compiler::CacheResult::kHit:
        ++pr.cached;
        break;
    }
    // Each graph break cuts a train step into one more graph: a compile of its fixed part when the
    // step compiles, a cache hit otherwise (xla_constructs.h).
    for (size_t i = 0; i < breaks; ++i) {
      if (look[p].result == compiler::CacheResult::kMiss) {
        const double extra = compile_time_s(hw_.host, 0, 0, sharing);
        compile_s += extra;
        pr.compile_time.add(extra);
        ++pr.compiles;
      } else {
        ++pr.cached;
      }
    }
    if (p == 0 && compile_s > 0) tracer.host("compile", info.name, pr.host_t, compile_s);
    pr.host_t += compile_s;
    rec.compile_s = std::max(rec.compile_s, compile_s);
    (eval ? pr.eval_examples : pr.train_examples) += look[p].examples;
  }
  for (size_t p = 0; p < procs_.size(); ++p)
    if (look[p].result == compiler::CacheResult::kMiss && look[p].info) procs_[p].cache.store(look[p].info->key);
  rec.compiling_processes = compiling;
  r_.mark_steps += 1;
}

void StepLoop::step(const LoopStep& ls) {
  const GraphKind kind = ls.kind;
  const bool grad_buffers = ls.grad_buffers, eval = ls.eval;
  uint64_t examples = 0;
  Shape sh;
  for (size_t c = 0; ls.batch && c < ls.batch->processes.size(); ++c) {
    const auto& p = ls.batch->processes[c];
    sh.b = std::max(sh.b, p.batch_size);
    sh.s = std::max(sh.s, p.padded_length);
    sh.t = std::max(sh.t, p.target_padded_length);
    examples += p.batch_size;
  }
  const uint32_t b = sh.b, s = sh.s;
  BuiltStep& prog = source_.get({kind, b, s, grad_buffers, sh.t});
  const std::string key = prog.compiled.key.hex();

  StepRecord rec;
  rec.index = steps_run_;
  rec.kind = eval ? StepKind::kEval : StepKind::kTrain;
  rec.graph = kind;
  rec.grad_buffers = grad_buffers;
  rec.epoch = ls.epoch;
  rec.batch = b;
  rec.seq = s;
  rec.examples = examples;

  TrainingTracer tracer(o_.trace, o_.trace_steps, hw_.slice.chips(), hw_.chip.cores, rec.index);
  host_side(ls, sh, rec, tracer);
  const size_t breaks = eval ? 0 : setup_.breaks.size();
  // The SPMD step (and its all-reduce) starts when the last process has dispatched it.
  double host_ready = 0;
  for (const Process& pr : procs_) host_ready = std::max(host_ready, pr.host_t);
  // The program was compiled (the host paid for it); allocating its buffers fails.
  if (prog.compiled.memory.peak_bytes > r_.hbm_bytes_per_core) {
    const compiler::Rematerialization& rm = prog.compiled.remat;
    const std::string tried =
        rm.values ? fmt::format("Rematerialization recomputed {} value{} ({:.2f} GiB; the plan needed {:.2f} GiB before) "
                                "and found nothing more to recompute. ",
                                rm.values, rm.values == 1 ? "" : "s", double(rm.bytes) / (1 << 30),
                                double(rm.peak_bytes_before) / (1 << 30))
                  : std::string();
    throw OutOfHbmError(out_of_hbm_message(prog.compiled.memory, prog.name, r_.hbm_bytes_per_core, hw_.chip.megacore,
                                           tried + setup_.out_of_hbm_advice(prog.compiled.memory.persistent_bytes > r_.hbm_bytes_per_core)),
                        std::max(host_ready, dev_t_));
  }
  // Offloaded activations are pinned in each host's RAM beside its processes' (the host allocation
  // fails as the device's would).
  if (const uint64_t pinned = pinned_host_bytes(hw_, prog.compiled.memory.host_peak_bytes); pinned > 0) {
    const HostRamNeed ram = host_ram_need(hw_.host, clients_per_host(), 0, false);
    if (ram.need_bytes + pinned > ram.have_bytes)
      throw SimError(fmt::format(
          "out of host RAM running program '{}': its offloaded activations need {:.2f} GiB of pinned memory on "
          "each host ({} devices) beside its processes' {:.2f} GiB, of {} GiB of host RAM. Offload fewer tensors "
          "(remat_tensors: device or remat) or run more hosts",
          prog.name, double(pinned) / (1 << 30), pinned / std::max<uint64_t>(prog.compiled.memory.host_peak_bytes, 1),
          double(ram.need_bytes) / (1 << 30), hw_.host.ram_gib));
  }

  rec.start_s = std::max(host_ready, dev_t_);
  if (executed_.insert(key).second) {
    rec.first_execution = true;
    rec.setup_s = hw_.host.program_load_s;
    if (executed_.size() == 1) {
      // The very first execution: every chip's PCIe link carries its devices' copies of the
      // parameters (one on a megacore) and its cores' shares of the first batch (which later steps
      // prefetch inside their programs).
      // The run's devices fill the chips in process order: the busiest chip holds
      // min(devices per chip, devices).
      const uint64_t on_chip = std::min(devices_per_chip(hw_.chip), setup_.devices);
      const uint64_t per_chip = on_chip * prog.parameter_bytes +
                                uint64_t(on_chip * cores_per_device(hw_.chip)) * prog.compiled.infeed_bytes;
      r_.upload_time_s = pcie_transfer_s(hw_, true, per_chip);
      r_.upload_bytes = per_chip;
      r_.transfer_to_device.add(r_.upload_time_s);
      r_.inbound_bytes.add(double(per_chip));
      rec.setup_s += r_.upload_time_s;
    }
  }
  const DeviceRun run = executor_.execute(prog, tracer.detail(rec.index, rec.first_execution, rec.start_s + rec.setup_s));
  if (memo_ && !run.replayed && !prog.memo_run) memo_->store(prog.variant, source_.info(prog.variant), prog, run);
  if (o_.on_progress) o_.on_progress({r_.steps.size() + 1, std::max<uint64_t>(steps_total_, r_.steps.size() + 1), {}, 0, 0});
  rec.device_s = run.device_s;
  rec.replayed = run.replayed;
  rec.flops = device_flops(prog, hw_);
  rec.model_flops = device_flops(prog, hw_, /*recompute=*/false);
  rec.allreduce_s = std::min(run.device_s, run.allreduce_s);
  rec.collective_s = std::min(run.device_s, run.collective_s);
  rec.collectives = run.collectives;
  const double prev_end = dev_t_;
  dev_t_ = rec.start_s + rec.setup_s + rec.device_s;
  rec.end_s = dev_t_;
  rec.step_time_s = rec.end_s - prev_end;
  if (rec.first_execution) {
    tracer.host("transfer", "program load: " + prog.name, rec.start_s, hw_.host.program_load_s);
    tracer.host("transfer", "parameter upload", rec.start_s + hw_.host.program_load_s, rec.setup_s - hw_.host.program_load_s);
  }
  if (tracer.traced(rec.index, rec.first_execution, rec.start_s + rec.setup_s, rec.end_s))
    tracer.step(prog.name, rec.start_s + rec.setup_s, rec.device_s);
  // Graph breaks: the host waits for the device, runs the fallback op on the tensor copied over
  // PCIe, and dispatches the rest of the step; the host/device overlap of the step is lost.
  for (size_t i = 0; i < breaks; ++i) {
    const XlaConstruct& c = *setup_.breaks[i];
    const uint64_t bytes =
        uint64_t(devices_per_chip(hw_.chip)) * (c.host_bytes_fixed + c.host_bytes_per_token * uint64_t(b) * s);
    wait_for_device(bytes, trace_time_s(hw_.host, 0));
    ++r_.fallback_counters[c.aten_op];
    ++r_.graph_breaks;
  }
  if (!eval)
    for (XlaDiagnostic& d : r_.diagnostics) ++d.occurrences;
  r_.execute_time.add(rec.device_s);
  if (prog.compiled.infeed_bytes) {
    r_.transfer_to_device.add(pcie_transfer_s(hw_, true, hw_.chip.cores * prog.compiled.infeed_bytes));
    r_.inbound_bytes.add(double(hw_.chip.cores * prog.compiled.infeed_bytes));
  }

  // Where the device's time went: the idle gap before the step is the compile (when there was
  // one) and otherwise the host; then setup, then the step itself.
  const double gap = rec.start_s - prev_end;
  const double gap_compile = std::min(gap, rec.compile_s);
  r_.breakdown.compile += gap_compile;
  if (eval) {
    r_.breakdown.eval += gap - gap_compile + rec.setup_s + rec.device_s;
  } else {
    r_.breakdown.host += gap - gap_compile;
    r_.breakdown.warmup += rec.setup_s;
    r_.breakdown.device += rec.device_s - rec.allreduce_s;
    r_.breakdown.allreduce += rec.allreduce_s;
    add_collectives(r_, prog.compiled, rec.collectives);
    ++r_.train_steps;
    r_.train_examples += examples;
    if (!ls.batch || ls.batch->sync) ++r_.optimizer_steps;
  }
  if (eval) ++r_.eval_steps;
  flops_ += device_flops(prog, hw_);
  device_sum_s_ += rec.device_s;

  record_program(prog, rec, run, key);
  record_step(std::move(rec));
}

void StepLoop::record_program(const BuiltStep& prog, const StepRecord& rec, const DeviceRun& run, const std::string& key) {
  auto [it, added] = program_index_.emplace(key, r_.programs.size());
  if (added) {
    ProgramRecord p;
    p.name = prog.name;
    p.graph = rec.graph;
    p.key = key;
    p.batch = rec.batch;
    p.seq = rec.seq;
    p.graph_nodes = prog.graph_nodes;
    p.hlo_ops = prog.compiled.hlo_ops;
    p.kernels = prog.compiled.kernels;
    p.persistent_bytes = prog.compiled.memory.persistent_bytes;
    p.peak_hbm_bytes = prog.compiled.memory.peak_bytes;
    p.cmem_bytes_per_chip = prog.compiled.memory.cmem_chip_bytes;
    p.parameter_bytes = prog.parameter_bytes;
    p.optimizer_state_bytes = prog.optimizer_state_bytes;
    p.allreduce_bytes = prog.compiled.allreduce_bytes;
    for (const auto& c : prog.compiled.collectives)
      if (c.op == models::CollectiveOp::kAllReduce)
        p.allreduces.push_back({c.bytes, compiler::algorithm_name(c.algorithm), c.after_kernel, c.background});
    p.allgather_bytes = prog.compiled.allgather_bytes;
    p.reducescatter_bytes = prog.compiled.reducescatter_bytes;
    p.dcn_bytes = dcn_bytes(prog.compiled);
    p.host_offload_bytes = prog.compiled.host_offload_bytes;
    p.host_memory_bytes = prog.compiled.memory.host_peak_bytes;
    p.remat = prog.compiled.remat;
    p.collectives = rec.collectives;
    p.memory = prog.memory;
    if (p.peak_hbm_bytes > r_.peak_hbm_bytes) r_.peak_memory = p.memory;
    p.flops = device_flops(prog, hw_);
    p.compile_s = compile_time_s(hw_.host, prog.compiled.hlo_ops, prog.compiled.kernels, clients_per_host());
    p.device_s = rec.device_s;
    p.device_cycles = run.device_cycles;
    p.cores = run.cores;
    p.simulated_cores = run.simulated_cores;
    p.op_profile = run.op_profile;
    r_.programs.push_back(p);
    r_.peak_hbm_bytes = std::max(r_.peak_hbm_bytes, p.peak_hbm_bytes);
    r_.host_memory_bytes = std::max(r_.host_memory_bytes, p.host_memory_bytes);
  }
  ++r_.programs[it->second].executions;
}

namespace {
bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }
// `b` is `a` again, apart from its place in the run (index, start and end) and rounding.
bool same_step(const StepRecord& a, const StepRecord& b) {
  return a.kind == b.kind && a.graph == b.graph && a.grad_buffers == b.grad_buffers && a.epoch == b.epoch &&
         a.batch == b.batch && a.seq == b.seq && a.examples == b.examples && !b.compiled && !a.compiled &&
         !b.persistent_hit && !a.persistent_hit && !b.first_execution && !a.first_execution &&
         a.compiling_processes == b.compiling_processes && a.flops == b.flops && a.model_flops == b.model_flops &&
         near(a.host_s, b.host_s) && near(a.compile_s, b.compile_s) && near(a.setup_s, b.setup_s) &&
         near(a.device_s, b.device_s) && near(a.allreduce_s, b.allreduce_s) && near(a.collective_s, b.collective_s) &&
         near(a.step_time_s, b.step_time_s) && a.collectives == b.collectives;
}
}  // namespace

void StepLoop::record_step(StepRecord rec) {
  end_before_last_ = r_.steps.empty() ? 0 : r_.steps.back().end_s;
  ++steps_run_;
  if (r_.steps.size() >= kStepsListedInFull && same_step(r_.steps.back(), rec)) {
    StepRecord& last = r_.steps.back();
    ++last.repeat;
    last.end_s = rec.end_s;
    return;
  }
  r_.steps.push_back(std::move(rec));
}

// A synchronous device->host read inside the loop (a graph break's fallback tensor, a logged loss):
// the host waits for the device, pays kGraphBreakSyncS and the PCIe copy of `bytes`, then `then_s`
// (the dispatch of a graph break's second graph). Returns the sync's own cost, s.
double StepLoop::wait_for_device(uint64_t bytes, double then_s) {
  const double xfer = pcie_transfer_s(hw_, false, bytes);
  r_.transfer_from_device.add(xfer);
  r_.outbound_bytes.add(double(bytes));
  for (Process& pr : procs_) pr.host_t = std::max(pr.host_t, dev_t_) + kGraphBreakSyncS + xfer + then_s;
  return kGraphBreakSyncS + xfer;
}

void StepLoop::sync_host(double bytes_from_device) {
  // The host blocks until the device is done, then reads the results back over PCIe.
  const double xfer = pcie_transfer_s(hw_, false, uint64_t(bytes_from_device));
  if (bytes_from_device > 0) {
    r_.transfer_from_device.add(xfer);
    r_.outbound_bytes.add(double(uint64_t(bytes_from_device)));  // the bytes the transfer time is of
  }
  for (Process& pr : procs_) pr.host_t = std::max(pr.host_t, dev_t_) + xfer;
}

void StepLoop::finish() {
  double host_t = 0;
  for (const Process& pr : procs_) host_t = std::max(host_t, pr.host_t);
  r_.total_time_s = std::max(host_t, dev_t_);
  // Time after the last execution (host reading results) is host time.
  r_.breakdown.host += r_.total_time_s - dev_t_;
  // The summary shows the busiest process's torch_xla metrics (most compiles, then most compile time).
  size_t busiest = 0;
  auto total = [](const MetricSamples& m) { double t = 0; for (double v : m.samples) t += v; return t; };
  for (size_t p = 1; p < procs_.size(); ++p) {
    const Process &a = procs_[p], &b = procs_[busiest];
    if (a.compiles > b.compiles || (a.compiles == b.compiles && total(a.compile_time) > total(b.compile_time))) busiest = p;
  }
  const Process& bp = procs_[busiest];
  r_.busiest_process = uint32_t(busiest);
  r_.compiles = bp.compiles;
  r_.cached_compiles = bp.cached;
  r_.persistent_hits = bp.persistent_hits;
  r_.compile_time = bp.compile_time;
  r_.compile_time_s = total(bp.compile_time);

  std::vector<double> steady;
  bool warm = false;
  double steady_flops = 0, steady_time = 0, steady_device = 0, steady_allreduce = 0, steady_collective = 0, steady_tokens = 0;
  for (size_t i = 0; i < r_.steps.size(); ++i) {
    const StepRecord& s = r_.steps[i];
    if (s.kind != StepKind::kTrain || s.compiled || s.persistent_hit || s.first_execution) continue;
    if (!warm) r_.warmup_time_s = i ? r_.steps[i - 1].end_s : 0;
    warm = true;
    const double n = double(s.repeat);
    steady.insert(steady.end(), s.repeat, s.step_time_s);
    steady_flops += n * double(s.model_flops);
    steady_tokens += n * double(s.examples) * double(s.seq);
    steady_time += n * s.step_time_s;
    steady_device += n * s.device_s;
    steady_allreduce += n * s.allreduce_s;
    steady_collective += n * s.collective_s;
  }
  // Flops and peaks of a device (both cores of a megacore).
  const double device_peak = resolve_hw(hw_).device_peak_flop_per_s;
  r_.mfu = steady_time > 0 ? steady_flops / (steady_time * device_peak) : 0;
  r_.allreduce_share = steady_device > 0 ? steady_allreduce / steady_device : 0;
  r_.collective_share = steady_device > 0 ? steady_collective / steady_device : 0;
  if (!warm) r_.warmup_time_s = r_.total_time_s;
  r_.steady_step_time_s = median(steady);
  r_.examples_per_s = r_.total_time_s > 0 ? double(r_.train_examples) / r_.total_time_s : 0;
  r_.steady_examples_per_s = r_.steady_step_time_s > 0 ? double(r_.global_batch) / r_.steady_step_time_s : 0;
  r_.steady_tokens_per_s_per_chip = steady_time > 0 ? steady_tokens / steady_time / double(hw_.run_chips()) : 0;
  const double peak_flop_per_s = device_peak;
  r_.mxu_utilization = device_sum_s_ > 0 ? double(flops_) / (device_sum_s_ * peak_flop_per_s) : 0;

  for (uint32_t p = 0; p < r_.processes; ++p) {
    const Process& pc = procs_[p];
    ProcessRecord pr;
    pr.index = p;
    pr.chip = pc.first_device / devices_per_chip(hw_.chip);
    pr.core = (pc.first_device % devices_per_chip(hw_.chip)) * cores_per_device(hw_.chip);
    pr.cores = pc.devices;
    pr.host = pc.host;
    pr.train_examples = pc.train_examples;
    pr.eval_examples = pc.eval_examples;
    pr.compiles = pc.compiles;
    pr.cached_compiles = pc.cached;
    pr.persistent_hits = pc.persistent_hits;
    pr.compile_time_s = total(pc.compile_time);
    r_.process_records.push_back(pr);
  }
  // A program read from a program memo was simulated for this run too, by another process.
  r_.simulations = executor_.simulations() + executor_.memoized();
  r_.replays = executor_.replays();
  r_.memoized = executor_.memoized();
  r_.compile_wall_s = source_.compile_wall_s();
  r_.simulate_wall_s = executor_.simulate_wall_s();
}

}  // namespace tpusim
