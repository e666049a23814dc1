#include "workloads/loop/native_steps.h"

#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "compiler/plan/fusion.h"
#include "compiler/plan/memory_breakdown.h"
#include "compiler/step/fsdp.h"
#include "compiler/step/fsdp_graphs.h"

namespace tpusim {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A megacore device's program is compiled per core at ceil(B/cores) examples; its cache key also
// holds the device's batch B (XLA compiles the device program, whose shapes differ for B = 3 and 4).
// A program over HBM compiles differently without rematerialization (nothing is recomputed to fit):
// its key has a bit of its own.
compiler::CacheKey device_key(compiler::CacheKey k, const HwConfig& hw, const TrainingWorkload& w, uint32_t batch) {
  if (!w.rematerialization) k.hi ^= 0x52454d4154ull * 0x9e3779b97f4a7c15ull;  // "REMAT"
  if (cores_per_device(hw.chip) == 1) return k;
  k.hi ^= (uint64_t(batch) + 0x4d43ull) * 0x9e3779b97f4a7c15ull;  // "MC"
  k.lo ^= (uint64_t(batch) << 17) * 0x100000001b3ull;
  return k;
}

uint64_t role_bytes(const models::Graph& g, models::ParamRole role) {
  uint64_t b = 0;
  for (const auto& n : g.nodes())
    if (n.kind == models::OpKind::kParameter && n.role == role)
      b += uint64_t(models::num_elements(n.shape)) * models::dtype_bytes(n.dtype);
  return b;
}


}  // namespace

NativeSteps::NativeSteps(const HwConfig& hw, const TrainingWorkload& w) : hw_(hw), w_(w), model_(make_model(w)) {}

NativeSteps::~NativeSteps() = default;

// Each variant's graph is built once: info() alone builds it and keeps it for a get() of the same
// variant (one graph at a time: a process's lookup of a variant the device never runs does not
// pile up graphs); get() builds it if info() did not and compiles it.
const StepInfo& NativeSteps::remember_info(const StepVariant& v, StepGraph& sg) {
  if (auto it = info_.find(v); it != info_.end()) return it->second;
  StepInfo i;
  i.name = fmt::format("{}{} B={} S={}{}{}", graph_kind_name(v.kind), v.grad_buffers ? "+grad" : "", v.batch, v.seq,
                       v.target ? fmt::format(" T={}", v.target) : "", bf16_eval(w_, v) ? " bf16" : "");
  if (sg.fsdp) {
    const compiler::FsdpGraphs& f = *sg.fsdp;
    i.graph_nodes = f.graph.nodes().size() + f.optimizer.graph.nodes().size();
    i.key = device_key(compiler::fsdp_step_cache_key(f.step), hw_, w_, v.batch);
    i.hlo_ops = i.graph_nodes;
    i.kernels = uint32_t(compiler::plan_fusions(f.graph).fusions.size() +
                         compiler::plan_fusions(f.optimizer.graph).fusions.size());
    i.parameter_bytes = f.parameter_bytes * cores_per_device(hw_.chip);  // the slices are per core
    i.optimizer_state_bytes = f.optimizer_state_bytes * cores_per_device(hw_.chip);
    return info_.emplace(v, std::move(i)).first->second;
  }
  const models::Graph& g = sg.fwd.graph;
  i.graph_nodes = g.nodes().size();
  i.key = device_key(compiler::step_cache_key(sg.dp), hw_, w_, v.batch);
  i.hlo_ops = g.nodes().size();
  if (!sg.fusions) sg.fusions = compiler::plan_fusions(g);  // the step compile reads it too
  i.kernels = uint32_t(sg.fusions->fusions.size());
  i.parameter_bytes = role_bytes(g, models::ParamRole::kTrainable);
  i.optimizer_state_bytes = role_bytes(g, models::ParamRole::kOptimizerState);
  return info_.emplace(v, std::move(i)).first->second;
}

std::unique_ptr<StepGraph> NativeSteps::take_graph(const StepVariant& v) {
  if (spare_.second && spare_.first == v) return std::move(spare_.second);
  ++graph_builds_;
  return build_step_graph(*model_, w_, hw_, v);
}

const StepInfo& NativeSteps::info(const StepVariant& v) {
  if (auto it = info_.find(v); it != info_.end()) return it->second;
  const auto t0 = Clock::now();
  std::unique_ptr<StepGraph> sg = take_graph(v);
  const StepInfo& i = remember_info(v, *sg);
  if (!built_.count(v)) spare_ = {v, std::move(sg)};
  compile_wall_s_ += since(t0);
  return i;
}

BuiltStep& NativeSteps::get(const StepVariant& v) {
  if (auto it = built_.find(v); it != built_.end()) return it->second;
  const auto t0 = Clock::now();
  std::unique_ptr<StepGraph> sg = take_graph(v);
  const StepInfo& i = remember_info(v, *sg);
  BuiltStep s;
  s.variant = v;
  s.name = i.name;
  s.graph_nodes = i.graph_nodes;
  s.parameter_bytes = i.parameter_bytes;
  s.optimizer_state_bytes = i.optimizer_state_bytes;
  s.recompute_flops = sg->fsdp ? sg->fsdp->recompute_flops : sg->recompute_flops;
  s.device_examples = sg->device_examples;
  compiler::SpmdStep spmd;
  if (sg->fsdp) {
    spmd = compiler::fsdp_step(*sg->fsdp, hw_);
  } else {
    sg->dp.fusions = sg->fusions ? &*sg->fusions : nullptr;
    spmd = compiler::data_parallel_step(sg->dp, std::move(sg->fwd.graph), hw_);  // sg is discarded below
  }
  sg.reset();  // the SPMD step holds its own graph: the model's is not needed while it compiles
  spmd.rematerialize = w_.rematerialization;
  for (const models::Node& n : spmd.graph.nodes()) s.recompute_flops += models::attention_recompute_flops(spmd.graph, n);
  s.compiled = compiler::compile_spmd_step(spmd, hw_, s.name);
  s.recompute_flops += s.compiled.remat.flops;  // what XLA's rematerialization recomputes to fit HBM
  s.memory = compiler::breakdown_at_peak(s.compiled.memory);
  // As the host counts them for its compile: the step graph's ops and kernels, before the
  // partitioner adds its collectives; the key with the device's batch on a megacore.
  s.compiled.key = i.key;
  s.compiled.hlo_ops = i.hlo_ops;
  s.compiled.kernels = i.kernels;
  compile_wall_s_ += since(t0);
  return built_.emplace(v, std::move(s)).first->second;
}

}  // namespace tpusim
