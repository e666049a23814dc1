#include "workloads/step_cache.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "compiler/collectives.h"
#include "compiler/fsdp_graphs.h"
#include "compiler/fusion.h"
#include "compiler/memory_breakdown.h"
#include "models/autodiff.h"
#include "models/optimizers.h"

namespace tpusim {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Compute dtype, stored-parameter dtype and optimizer-state dtype of a precision setting
// (workload_config.cc documents them).
models::DType activation_dtype(Precision precision) {
  return precision == Precision::kFp32 ? models::DType::kF32 : models::DType::kBF16;
}
models::DType state_dtype(Precision precision) {
  return precision == Precision::kBf16 || precision == Precision::kBf16Downcast ? models::DType::kBF16 : models::DType::kF32;
}
std::optional<models::DType> param_dtype(Precision precision) {
  if (precision == Precision::kMixedBf16) return models::DType::kF32;  // autocast keeps f32 master weights
  return std::nullopt;
}

// Adds each gradient to its parameter's persistent .grad buffer (an input donated to the sum):
// what backward() does when .grad already exists. Returns the sums, in `grads` order.
std::vector<int> add_grad_buffers(models::Graph& g, const models::Gradients& grads, compiler::DataParallelStep& dp) {
  std::vector<int> sums;
  for (size_t i = 0; i < grads.params.size(); ++i) {
    const auto& p = g.node(grads.params[i]);
    const int acc = g.parameter(p.name + ".grad", p.shape, p.dtype, models::ParamRole::kOptimizerState);
    const int sum = g.ew(models::EwOp::kAdd, acc, grads.grads[i], p.name + ".grad_accumulate");
    dp.donated[sum] = acc;
    sums.push_back(sum);
  }
  return sums;
}

// A megacore device's program is compiled per core at ceil(B/cores) examples; its cache key also
// holds the device's batch B (XLA compiles the device program, whose shapes differ for B = 3 and 4).
compiler::CacheKey device_key(compiler::CacheKey k, const HwConfig& hw, uint32_t batch) {
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

const char* graph_kind_name(GraphKind k) {
  switch (k) {
    case GraphKind::kTrain: return "train";
    case GraphKind::kTrainFirstStep: return "train_first_step";
    case GraphKind::kAccumulate: return "accumulate";
    case GraphKind::kEval: return "eval";
  }
  return "?";
}

StepPrograms::StepPrograms(const HwConfig& hw, const TrainingWorkload& w, const std::string& engine, bool full_sim)
    : hw_(hw), w_(w), model_(make_model(w)), full_sim_(full_sim), engine_(make_engine(engine, hw)) {}

StepPrograms::~StepPrograms() = default;

// The step graph of a variant, with what the data-parallel compiler needs to know about it; for
// sharding: fsdp, the FSDP step's graphs instead (`fsdp` set, `fwd` moved into it).
struct StepPrograms::StepGraph {
  models::ModelGraph fwd;
  compiler::DataParallelStep dp;
  std::unique_ptr<compiler::FsdpGraphs> fsdp;
};

bool StepPrograms::bf16_eval(const StepVariant& v) const {
  return v.kind == GraphKind::kEval && w_.choices.eval_precision == EvalPrecision::kBf16 && activation_dtype(w_.choices.precision) == models::DType::kF32;
}

uint32_t StepPrograms::fsdp_cores() const { return uint32_t(compiler::ring_order(hw_).size()); }

std::unique_ptr<StepPrograms::StepGraph> StepPrograms::build_graph(const StepVariant& v) const {
  models::StepShape o;
  // A megacore device's cores each compute half of its batch (compiler/data_parallel.h); an odd
  // batch gives both cores the larger half (SPMD: one program shape).
  o.batch = (v.batch + cores_per_device(hw_.chip) - 1) / cores_per_device(hw_.chip);
  o.seq = v.seq;
  o.dtype = activation_dtype(w_.choices.precision);
  o.param_dtype = param_dtype(w_.choices.precision);
  o.training = v.kind != GraphKind::kEval;
  if (bf16_eval(v)) {
    // bf16_full_eval: bf16 activations; the stored f32 weights are converted where the eval step
    // uses them (fused into the consumer, as under autocast), see eval_bf16 in docs/training.md.
    o.dtype = models::DType::kBF16;
    o.param_dtype = models::DType::kF32;
  }
  models::OptimizerConfig opt;
  opt.kind = w_.choices.optimizer;
  opt.state_dtype = state_dtype(w_.choices.precision);
  opt.first_step = v.kind == GraphKind::kTrainFirstStep;

  auto sg = std::make_unique<StepGraph>();
  sg->fwd = model_->build_forward(o);
  if (w_.choices.sharding == Sharding::kFsdp) {  // accumulation micro-steps are rejected by the config check
    sg->fsdp = compiler::build_fsdp_graphs(std::move(sg->fwd), fsdp_cores(), w_.fsdp_grad_ckpt, opt,
                                           v.kind != GraphKind::kEval,
                                           {w_.fsdp_min_num_params, w_.fsdp_wrap_layer_classes});
    sg->fsdp->step.overlap = w_.overlap_collectives;
    return sg;
  }
  models::Graph& g = sg->fwd.graph;
  compiler::DataParallelStep& dp = sg->dp;
  if (v.kind != GraphKind::kEval) {
    models::Gradients grads = models::build_backward(g, sg->fwd.loss, sg->fwd.params);
    if (v.grad_buffers) grads.grads = add_grad_buffers(g, grads, dp);
    if (v.kind == GraphKind::kAccumulate) {
      // A non-sync micro-step (Accelerate's accumulate()): the gradients stay in the .grad
      // buffers, neither all-reduced nor applied.
      for (int gr : grads.grads) g.mark_output(gr);
    } else {
      const models::OptimizerGraph upd = models::append_optimizer(g, grads, opt);
      dp.grads = grads.grads;
      for (auto [in, out] : upd.donated) dp.donated[out] = in;
    }
  }
  dp.graph = &g;
  dp.overlap_allreduce = w_.overlap_collectives;
  return sg;
}

const StepInfo& StepPrograms::info(const StepVariant& v) {
  if (auto it = info_.find(v); it != info_.end()) return it->second;
  const auto t0 = Clock::now();
  const std::unique_ptr<StepGraph> sg = build_graph(v);
  StepInfo i;
  i.name = fmt::format("{}{} B={} S={}{}", graph_kind_name(v.kind), v.grad_buffers ? "+grad" : "", v.batch, v.seq,
                       bf16_eval(v) ? " bf16" : "");
  if (sg->fsdp) {
    const compiler::FsdpGraphs& f = *sg->fsdp;
    i.graph_nodes = f.graph.nodes().size() + f.optimizer.graph.nodes().size();
    i.key = device_key(compiler::fsdp_step_cache_key(f.step), hw_, v.batch);
    i.hlo_ops = i.graph_nodes;
    i.kernels = uint32_t(compiler::plan_fusions(f.graph).fusions.size() +
                         compiler::plan_fusions(f.optimizer.graph).fusions.size());
    i.parameter_bytes = f.parameter_bytes * cores_per_device(hw_.chip);  // the slices are per core
    i.optimizer_state_bytes = f.optimizer_state_bytes * cores_per_device(hw_.chip);
    compile_wall_s_ += since(t0);
    return info_.emplace(v, std::move(i)).first->second;
  }
  const models::Graph& g = sg->fwd.graph;
  i.graph_nodes = g.nodes().size();
  i.key = device_key(compiler::step_cache_key(sg->dp), hw_, v.batch);
  i.hlo_ops = g.nodes().size();
  i.kernels = uint32_t(compiler::plan_fusions(g).fusions.size());
  i.parameter_bytes = role_bytes(g, models::ParamRole::kTrainable);
  i.optimizer_state_bytes = role_bytes(g, models::ParamRole::kOptimizerState);
  compile_wall_s_ += since(t0);
  return info_.emplace(v, std::move(i)).first->second;
}

BuiltStep& StepPrograms::get(const StepVariant& v) {
  if (auto it = built_.find(v); it != built_.end()) return it->second;
  const StepInfo& i = info(v);
  const auto t0 = Clock::now();
  const std::unique_ptr<StepGraph> sg = build_graph(v);
  BuiltStep s;
  s.variant = v;
  s.name = i.name;
  s.graph_nodes = i.graph_nodes;
  s.parameter_bytes = i.parameter_bytes;
  s.optimizer_state_bytes = i.optimizer_state_bytes;
  if (sg->fsdp) {
    s.compiled = compiler::compile_fsdp_step(sg->fsdp->step, hw_, s.name);
    s.memory = compiler::breakdown_at_peak(s.compiled.memory);
  } else {
    s.compiled = compiler::compile_data_parallel_step(sg->dp, hw_, s.name);
    s.memory = compiler::breakdown_at_peak(s.compiled.memory, {sg->dp.grads.begin(), sg->dp.grads.end()});
  }
  s.compiled.key = i.key;  // with the device's batch on a megacore
  compile_wall_s_ += since(t0);
  return built_.emplace(v, std::move(s)).first->second;
}

// The step alone on one core: what the all-reduce's exposed time is measured against. Compiled and
// simulated on the same engine (one core's stream: a fraction of the whole step's simulation).
double StepPrograms::solo_device_s(const BuiltStep& s) {
  if (auto it = solo_.find(s.compiled.key); it != solo_.end()) return it->second;
  auto t0 = Clock::now();
  const std::unique_ptr<StepGraph> sg = build_graph(s.variant);
  const compiler::CompiledStep solo = compiler::compile_data_parallel_step(sg->dp, hw_, s.name + " (1 replica)", 1);
  compile_wall_s_ += since(t0);
  t0 = Clock::now();
  engine_->set_op_profile(false);  // only its device time is read
  const double d = engine_->run(solo.program, nullptr).device_time_s;
  engine_->set_op_profile(true);
  simulate_wall_s_ += since(t0);
  return solo_.emplace(s.compiled.key, d).first->second;
}

DeviceRun StepPrograms::execute(BuiltStep& s, TraceSink* trace) {
  if (!full_sim_) {
    if (auto it = replay_.find(s.compiled.key); it != replay_.end()) {
      ++replays_;
      DeviceRun r = it->second;
      r.replayed = true;
      return r;
    }
  }
  const auto t0 = Clock::now();
  // FSDP programs' collectives are timed through the engine's trace hook (per-event callbacks
  // slow a simulation down, so data-parallel programs are not: their all-reduce's exposed time is
  // DeviceRun::allreduce_s below).
  CollectiveTimer timer(trace);
  const bool timed = s.compiled.allgather_bytes + s.compiled.reducescatter_bytes > 0;
  RunResult rr = engine_->run(s.compiled.program, timed ? &timer : trace);
  simulate_wall_s_ += since(t0);
  ++simulations_;
  DeviceRun r{rr.device_time_s, rr.device_cycles, 0, false, timer.times(),
              std::make_shared<const OpProfile>(std::move(rr.op_profile))};
  if (s.compiled.allreduce_bytes > 0 && s.compiled.program.cores.size() > 1)
    r.allreduce_s = std::max(0.0, r.device_s - solo_device_s(s));
  replay_.emplace(s.compiled.key, r);
  if (!full_sim_) {
    s.compiled.program.cores.clear();
    s.compiled.program.cores.shrink_to_fit();
  }
  return r;
}

}  // namespace tpusim
