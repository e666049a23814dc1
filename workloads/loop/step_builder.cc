#include "workloads/loop/step_builder.h"

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "base/config_error.h"
#include "compiler/collectives/collectives.h"
#include "compiler/step/partition.h"
#include "compiler/step/sharding_rules.h"
#include "models/autodiff.h"
#include "models/optimizers.h"
#include "models/recompute.h"

namespace tpusim {

namespace {

// The mesh a step builder is given without a tensor axis: none of its own (the step lays its replicas
// along data, or fsdp), only the slices it spans (multislice).
models::Mesh slices_only(const models::Mesh& m) {
  models::Mesh out;
  out.slices = m.slices;
  return out;
}

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

// sharding: fsdp shards over every core of the slice.
uint32_t fsdp_cores(const HwConfig& hw) { return uint32_t(compiler::ring_order(hw).size()); }

// quantization: int8 / fp8 as the dot precision of the layers' projections, on a chip whose MXU has
// the format (ConfigError at the workload's key otherwise).
models::DotPrecision quantized_precision(const TrainingWorkload& w, const HwConfig& hw) {
  if (w.quantization == Quantization::kNone) return models::DotPrecision::kDefault;
  const bool int8 = w.quantization == Quantization::kInt8;
  const uint32_t rate = int8 ? hw.chip.core.mxu.int8_rate : hw.chip.core.mxu.fp8_rate;
  if (rate == 0) {
    ConfigErrorInfo i{"workload", "quantization", 0, std::string(enum_name(w.quantization)),
                      "the TPU " + hw.chip.generation + " MXU has no " + std::string(enum_name(w.quantization)) +
                          " matmul (int8: v4 at the bf16 rate, v5e, v5p and v6e at twice it; fp8: v6e)",
                      int8 ? "use a v4, v5e, v5p or v6e slice" : "use a v6e slice, or quantization: int8"};
    if (const auto o = w.origins.find("quantization"); o != w.origins.end()) i.file = o->second.file, i.line = o->second.line;
    throw ConfigError(i);
  }
  return int8 ? models::DotPrecision::kInt8 : models::DotPrecision::kFp8;
}

// Rematerialization (remat_policy): each decoder layer's activations the policy does not keep are
// recomputed in its backward (models/recompute.h). The caller plans the kernels in trace order then,
// so that a layer's recomputation runs at its backward (compiler/step/fsdp_schedule.h, plan_fsdp_fusions).
void recompute_layers(StepGraph& sg, int last_forward, const models::RematSpec& remat, std::vector<int>& grads) {
  std::vector<models::ModuleRange> layers;
  for (const auto& u : sg.fwd.units)
    if (u.layer) layers.push_back(u);
  models::Recomputed r = models::recompute_in_backward(sg.fwd.graph, last_forward, layers, remat);
  sg.fwd.graph = std::move(r.graph);
  sg.recompute_flops = r.flops;
  for (int& gr : grads) gr = r.new_id[size_t(gr)];
  std::map<int, int> donated;
  for (const auto& [out, in] : sg.dp.donated) donated[r.new_id[size_t(out)]] = r.new_id[size_t(in)];
  sg.dp.donated = std::move(donated);
}

// Tensor parallelism (mesh.tensor > 1): the shardings the model annotated (its split weights)
// propagated through the forward, backward and update (compiler/step/sharding_rules.h), and the
// all-reduces the partitioner finds along the tensor axis written into the graph; the gradients'
// node ids and the donations follow the rewrite.
void partition_tensor_axis(models::Graph& g, std::vector<int>& grads, compiler::DataParallelStep& dp) {
  compiler::propagate_shardings(g);
  std::vector<int> id;
  g = compiler::with_collectives(g, dp.mesh, models::MeshAxis::kTensor, &id);
  for (int& gr : grads) gr = id[size_t(gr)];
  std::map<int, int> donated;
  for (const auto& [out, in] : dp.donated) donated[id[size_t(out)]] = id[size_t(in)];
  dp.donated = std::move(donated);
}

}  // namespace

namespace {

// The devices the mesh spans: TensorCores, or chips under megacore.
uint32_t mesh_devices(const HwConfig& hw) { return uint32_t(compiler::ring_order(hw).size()) / cores_per_device(hw.chip); }

}  // namespace

uint32_t variant_batch(const TrainingWorkload& w, const HwConfig& hw, double per_device, const std::string& key) {
  return shard_examples(w, per_device, resolve_mesh(w, mesh_devices(hw), hw.multislice.slices), key);
}

bool bf16_eval(const TrainingWorkload& w, const StepVariant& v) {
  return v.kind == GraphKind::kEval && w.eval_precision == EvalPrecision::kBf16 && activation_dtype(w.precision) == models::DType::kF32;
}

std::unique_ptr<StepGraph> build_step_graph(const models::Model& model, const TrainingWorkload& w, const HwConfig& hw,
                                            const StepVariant& v) {
  models::StepShape o;
  const uint32_t per_device = cores_per_device(hw.chip);
  o.seq = v.seq;
  o.target = v.target;
  o.dtype = activation_dtype(w.precision);
  o.param_dtype = param_dtype(w.precision);
  o.training = v.kind != GraphKind::kEval;
  o.flash_attention = uses_flash_attention(w);
  o.flash_block_q = w.sa_block_q;
  o.flash_block_kv = w.sa_block_kv;
  const models::Mesh device_mesh = resolve_mesh(w, mesh_devices(hw), hw.multislice.slices);
  // MaxText's batch: per_device_batch_size examples per device, the batch split over the data axes
  // only, so each tensor group of T devices runs T devices' examples (a tensor replica computes 1/T
  // of their work), and a sequence group of n devices n devices' examples, each device 1/n of each
  // one's tokens (models/llama.cc): the variant's batch is such a batch shard's (shard_examples). A
  // megacore device's cores each compute half of its examples (compiler/step/data_parallel.h); an
  // odd count gives both cores the larger half (SPMD: one program shape). The replicas are the cores
  // then: the batch axis takes the chip's cores (core_mesh).
  o.tensor = device_mesh[models::MeshAxis::kTensor];
  o.tensor_activations_sharded = uses_sharded_stream(w);
  const uint32_t device_examples = v.batch;
  o.batch = (device_examples + per_device - 1) / per_device;
  const models::Mesh mesh = compiler::core_mesh(
      device_mesh, per_device, w.sharding == Sharding::kFsdp ? models::MeshAxis::kFsdp : models::MeshAxis::kData);
  o.mesh = mesh;
  o.sequence_load_balance = w.context_parallel_load_balance;
  const uint32_t sequence = device_mesh[models::MeshAxis::kSequence];
  o.quantization = quantized_precision(w, hw);
  if (bf16_eval(w, v)) {
    // bf16_full_eval: bf16 activations; the stored f32 weights are converted where the eval step
    // uses them (fused into the consumer, as under autocast), see eval_bf16 in docs/training.md.
    o.dtype = models::DType::kBF16;
    o.param_dtype = models::DType::kF32;
  }
  models::OptimizerConfig opt;
  opt.kind = w.optimizer;
  opt.state_dtype = state_dtype(w.precision);
  opt.first_step = v.kind == GraphKind::kTrainFirstStep;

  auto sg = std::make_unique<StepGraph>();
  sg->device_examples = device_examples;
  sg->fwd = model.build_forward(o);
  const models::RematPolicy remat = effective_remat_policy(w);
  const models::RematSpec spec = models::remat_spec(effective_remat_tensors(w));
  if (w.sharding == Sharding::kFsdp) {  // accumulation micro-steps are rejected by the config check
    // FSDP over every core, or over the fsdp axis of an fsdp x tensor or data x fsdp (hybrid) mesh.
    // A sequence axis shards the weights too (MaxText: `embed` over fsdp and sequence): FSDP over
    // the two, one axis of fsdp x sequence replicas (the sequence innermost, as the replica ids
    // have it, so the model's sequence all-gathers keep their groups).
    models::Mesh fsdp_mesh = mesh;
    fsdp_mesh.size[size_t(models::MeshAxis::kFsdp)] *= sequence;
    fsdp_mesh.size[size_t(models::MeshAxis::kSequence)] = 1;
    const bool own_mesh = o.tensor > 1 || mesh[models::MeshAxis::kData] > 1 || sequence > 1;
    const uint32_t fsdp = own_mesh ? fsdp_mesh[models::MeshAxis::kFsdp] : fsdp_cores(hw);
    sg->fsdp = compiler::build_fsdp_graphs(std::move(sg->fwd), fsdp, remat != models::RematPolicy::kNone, opt,
                                           v.kind != GraphKind::kEval, {w.fsdp_min_num_params, w.fsdp_wrap_layer_classes},
                                           own_mesh ? fsdp_mesh : slices_only(mesh), spec);
    sg->fsdp->step.overlap = w.overlap_collectives;
    return sg;
  }
  models::Graph& g = sg->fwd.graph;
  compiler::DataParallelStep& dp = sg->dp;
  dp.mesh = o.tensor > 1 ? mesh : slices_only(mesh);  // else the replicas' data axis (a megacore's cores, not its chips)
  std::vector<int> synced;  // the gradients the update reads
  const int last_forward = int(g.nodes().size()) - 1;
  if (v.kind != GraphKind::kEval) {
    models::Gradients grads = models::build_backward(g, sg->fwd.loss, sg->fwd.params);
    if (v.grad_buffers) grads.grads = add_grad_buffers(g, grads, dp);
    if (v.kind == GraphKind::kAccumulate) {
      // A non-sync micro-step (Accelerate's accumulate()): the gradients stay in the .grad
      // buffers, neither all-reduced nor applied.
      for (int gr : grads.grads) g.mark_output(gr);
    } else {
      const models::OptimizerGraph upd = models::append_optimizer(g, grads, opt);
      for (auto [in, out] : upd.donated) dp.donated[out] = in;
      synced = grads.grads;
    }
  }
  const bool recompute = remat != models::RematPolicy::kNone && v.kind != GraphKind::kEval;
  if (recompute) recompute_layers(*sg, last_forward, spec, synced);
  if (o.tensor > 1) partition_tensor_axis(g, synced, dp);
  if (recompute) sg->fusions = compiler::plan_fsdp_fusions(g);
  compiler::shard_data_parallel(g, synced);
  dp.graph = &g;
  dp.overlap_allreduce = w.overlap_collectives;
  return sg;
}

}  // namespace tpusim
