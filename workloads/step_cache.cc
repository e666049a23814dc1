#include "workloads/step_cache.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "models/autodiff.h"
#include "models/optimizers.h"

namespace tpusim {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Graph dtype and optimizer-state dtype of a precision setting (workload_config.cc documents them).
models::DType activation_dtype(const std::string& precision) {
  return precision == "fp32" ? models::DType::kF32 : models::DType::kBF16;
}
models::DType state_dtype(const std::string& precision) {
  return precision == "bf16" || precision == "bf16_downcast" ? models::DType::kBF16 : models::DType::kF32;
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
    : hw_(hw), w_(w), cfg_(models::find_preset(w.model)), full_sim_(full_sim), engine_(make_engine(engine, hw)) {
  cfg_.num_labels = w.num_labels;
}

StepPrograms::~StepPrograms() = default;

BuiltStep& StepPrograms::get(const StepVariant& v) {
  if (auto it = built_.find(v); it != built_.end()) return it->second;
  const auto t0 = Clock::now();
  models::BertGraphOptions o;
  o.head = w_.task == "masked_lm" ? models::BertHead::kMaskedLm : models::BertHead::kSequenceClassification;
  o.batch = v.batch;
  o.seq = v.seq;
  // P <= S: with `longest` padding a batch can be shorter than max_predictions_per_seq.
  o.max_predictions_per_seq = std::min<int64_t>(w_.max_predictions_per_seq, v.seq);
  o.dtype = activation_dtype(w_.precision);
  o.training = v.kind != GraphKind::kEval;
  models::OptimizerConfig opt;
  opt.kind = models::optimizer_from_name(w_.optimizer);
  opt.state_dtype = state_dtype(w_.precision);
  opt.first_step = v.kind == GraphKind::kTrainFirstStep;

  BuiltStep s;
  s.variant = v;
  s.name = fmt::format("{} B={} S={}", graph_kind_name(v.kind), v.batch, v.seq);
  compiler::DataParallelStep dp;
  models::BertTrainingStep train;
  models::BertGraph fwd;
  const models::Graph* g = nullptr;
  if (v.kind == GraphKind::kTrain || v.kind == GraphKind::kTrainFirstStep) {
    train = models::build_training_step(cfg_, o, opt);
    dp.grads = train.grads.grads;
    for (auto [in, out] : train.optimizer.donated) dp.donated[out] = in;
    g = &train.model.graph;
  } else {
    fwd = models::build_bert(cfg_, o);
    if (v.kind == GraphKind::kAccumulate) {
      // PyTorch accumulates into each parameter's .grad buffer (persistent, updated in place) and
      // neither all-reduces nor steps on a non-sync micro-step (Accelerate's accumulate()).
      const models::Gradients grads = models::build_backward(fwd.graph, fwd.loss, fwd.params);
      for (size_t i = 0; i < grads.params.size(); ++i) {
        const auto& p = fwd.graph.node(grads.params[i]);
        const int acc = fwd.graph.parameter(p.name + ".grad", p.shape, p.dtype, models::ParamRole::kOptimizerState);
        const int sum = fwd.graph.ew(models::EwOp::kAdd, acc, grads.grads[i], p.name + ".grad_accumulate");
        fwd.graph.mark_output(sum);
        dp.donated[sum] = acc;
      }
    }
    g = &fwd.graph;
  }
  dp.graph = g;
  s.graph_nodes = g->nodes().size();
  s.parameter_bytes = role_bytes(*g, models::ParamRole::kTrainable);
  s.optimizer_state_bytes = role_bytes(*g, models::ParamRole::kOptimizerState);
  s.compiled = compiler::compile_data_parallel_step(dp, hw_, s.name);
  compile_wall_s_ += since(t0);
  return built_.emplace(v, std::move(s)).first->second;
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
  const RunResult rr = engine_->run(s.compiled.program, trace);
  simulate_wall_s_ += since(t0);
  ++simulations_;
  DeviceRun r{rr.device_time_s, rr.device_cycles, false};
  replay_.emplace(s.compiled.key, r);
  if (!full_sim_) {
    s.compiled.program.cores.clear();
    s.compiled.program.cores.shrink_to_fit();
  }
  return r;
}

}  // namespace tpusim
