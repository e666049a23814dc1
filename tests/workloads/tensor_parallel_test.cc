// Meshes and tensor (Megatron) parallelism (docs/training.md, "Meshes"): the mesh a workload names
// resolved over the slice's devices, and a Llama step split over the tensor axis: its weights'
// shares, the all-reduces the partitioner writes in (two per layer forward, two backward, on the
// tensor groups; the gradients' along data), and the same work per device as data parallelism.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "models/families.h"
#include "workloads/config/workload_config.h"
#include "compiler/step/fsdp.h"
#include "tests/workloads/tiny_decoder.h"
#include "workloads/loop/step_builder.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

using test::tiny_decoder;
using test::train_step_graph;
using test::v6e8;

WorkloadConfig tiny(const std::string& extra) { return tiny_decoder(extra); }

models::Mesh mesh_of(const std::string& mesh, uint32_t devices = 8) {
  return resolve_mesh(tiny(mesh).training(), devices);
}

std::string error_of(const std::string& mesh, uint32_t devices = 8) {
  try {
    mesh_of(mesh, devices);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Mesh, ResolvesTheRestAndDefaultsFromSharding) {
  using models::MeshAxis;
  EXPECT_EQ(mesh_of("")[MeshAxis::kData], 8u);  // no mesh: data parallelism over every device
  EXPECT_EQ(mesh_of("mesh: {tensor: 4}")[MeshAxis::kData], 2u);  // data takes the rest
  EXPECT_EQ(mesh_of("mesh: {tensor: 4}")[MeshAxis::kTensor], 4u);
  EXPECT_EQ(mesh_of("mesh: {data: 2, tensor: -1}")[MeshAxis::kTensor], 4u);
  EXPECT_EQ(mesh_of("mesh: {data: 1, tensor: -1}")[MeshAxis::kTensor], 8u);
  const models::Mesh f = resolve_mesh(tiny("sharding: fsdp\nmesh: {fsdp: -1}\n").training(), 8);
  EXPECT_EQ(f[MeshAxis::kFsdp], 8u);
  EXPECT_EQ(f[MeshAxis::kData], 1u);
  EXPECT_EQ(resolve_mesh(tiny("sharding: fsdp\n").training(), 8)[MeshAxis::kFsdp], 8u);
}

TEST(Mesh, RefusesWhatDoesNotFitOrIsNotModelled) {
  EXPECT_NE(error_of("mesh: {data: -1, tensor: -1}").find("only one mesh axis may be -1"), std::string::npos);
  EXPECT_NE(error_of("mesh: {data: 2, tensor: 2}").find("the slice has 8"), std::string::npos);
  EXPECT_NE(error_of("mesh: {tensor: 3}").find("must divide the slice's 8 devices"), std::string::npos);
  EXPECT_NE(error_of("mesh: {sequence: 2}").find("that is sharding: fsdp"), std::string::npos);
  // Checked with the workload, before any hardware is known: fsdp is sharding: fsdp; tensor is for Llama.
  EXPECT_THROW(tiny("mesh: {fsdp: 8}\n"), ConfigError);
  EXPECT_EQ(mesh_of("sharding: fsdp\nmesh: {data: 2, tensor: 2}")[models::MeshAxis::kFsdp], 2u);  // hybrid: fsdp the rest
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:128:8'}\nmesh: {tensor: 2}\n",
                                         "bert_tp.yaml"),
               ConfigError);
}

// The train step's graph on v6e-8 with mesh {data: 2, tensor: 4}.
std::unique_ptr<StepGraph> tensor_step(const std::string& attention, const std::string& activations = "replicated") {
  return train_step_graph(tiny("mesh: {tensor: 4}\nattention: " + attention + "\ntensor_activations: " + activations + "\n"));
}

TEST(TensorParallel, SplitsTheWeightsAndAllReducesAsMegatron) {
  for (const std::string attention : {"eager", "flash"}) {
    SCOPED_TRACE(attention);
    const std::unique_ptr<StepGraph> sg = tensor_step(attention);
    const models::Graph& g = sg->fwd.graph;
    std::map<std::string, models::Dims> shape;
    for (const models::Node& n : g.nodes())
      if (n.kind == models::OpKind::kParameter) shape[n.name] = n.shape;
    // Column-parallel weights [out / 4, in], row-parallel [out, in / 4], the table's rows a quarter of
    // the vocabulary; norms whole.
    EXPECT_EQ(shape["model.layers.0.self_attn.q_proj.weight"], (models::Dims{64, 256}));
    EXPECT_EQ(shape["model.layers.0.self_attn.k_proj.weight"], (models::Dims{32, 256}));
    EXPECT_EQ(shape["model.layers.0.self_attn.o_proj.weight"], (models::Dims{256, 64}));
    EXPECT_EQ(shape["model.layers.1.mlp.down_proj.weight"], (models::Dims{256, 128}));
    EXPECT_EQ(shape["lm_head.weight"], (models::Dims{256, 256}));
    EXPECT_EQ(shape["model.embed_tokens.weight"], (models::Dims{256, 256}));
    EXPECT_EQ(shape["model.norm.weight"], (models::Dims{256}));

    // Tensor groups are 4 consecutive devices; data groups pair device i with i + 4.
    const std::vector<std::vector<int64_t>> tensor_groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
    int residual = 0, loss = 0, other = 0;
    const uint64_t rows_bytes = 2 * 4 * 256 * 256 * 2;  // [B x T x S, hidden] bf16: the group's 8 sequences
    for (const models::Node& n : g.nodes()) {
      if (n.kind != models::OpKind::kCollective) continue;
      ASSERT_EQ(n.collective.op, models::CollectiveOp::kAllReduce) << n.name;
      EXPECT_EQ(n.collective.groups, tensor_groups) << n.name;
      EXPECT_EQ(n.collective.replicas, 8);
      const uint64_t bytes = uint64_t(models::num_elements(n.shape)) * models::dtype_bytes(n.dtype);
      if (bytes == rows_bytes) ++residual;
      else if (n.shape.size() <= 1) ++loss;  // the loss's row maxima, sums and picked logits
      else ++other;
    }
    // Per layer: o_proj and down_proj forward, the inputs' gradients of q/k/v and gate/up backward;
    // the lm_head's input gradient; the embedding lookup (each replica's rows).
    EXPECT_EQ(residual, 2 * 4 + 1 + 1);
    EXPECT_GE(loss, 3);
    EXPECT_EQ(other, 0);
  }
}

// MaxText's activation_embed rule (tensor_activations: sharded, the default under framework jax):
// the residual stream is [rows, hidden / 4] on each replica. Each all-reduce of the replicated form
// becomes a reduce-scatter of the same partial sums and an all-gather before the next block's
// projections; the norms' sums are all-reduced instead ([rows] vectors, forward and backward).
TEST(TensorParallel, ShardedStreamReduceScattersAndGathersAlongTensor) {
  for (const std::string attention : {"eager", "flash"}) {
    SCOPED_TRACE(attention);
    const std::unique_ptr<StepGraph> sg = tensor_step(attention, "sharded");
    const models::Graph& g = sg->fwd.graph;
    std::map<std::string, models::Dims> shape;
    for (const models::Node& n : g.nodes())
      if (n.kind == models::OpKind::kParameter) shape[n.name] = n.shape;
    EXPECT_EQ(shape["model.norm.weight"], (models::Dims{64}));  // the norms split with the stream
    EXPECT_EQ(shape["model.layers.1.post_attention_layernorm.weight"], (models::Dims{64}));
    EXPECT_EQ(shape["model.layers.0.self_attn.q_proj.weight"], (models::Dims{64, 256}));

    const std::vector<std::vector<int64_t>> tensor_groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
    const models::Dims rows{2 * 4 * 256, 256}, columns{2 * 4 * 256, 64};  // the group's 8 sequences
    int scatters = 0, gathers = 0, norm_sums = 0, loss = 0;
    for (const models::Node& n : g.nodes()) {
      if (n.kind != models::OpKind::kCollective) continue;
      EXPECT_EQ(n.collective.groups, tensor_groups) << n.name;
      const models::Dims& in = g.node(n.inputs[0]).shape;
      switch (n.collective.op) {
        case models::CollectiveOp::kReduceScatter:
          EXPECT_EQ(in, rows) << n.name;
          EXPECT_EQ(n.shape, columns) << n.name;
          ++scatters;
          break;
        case models::CollectiveOp::kAllGather:
          EXPECT_EQ(in, columns) << n.name;
          EXPECT_EQ(n.shape, rows) << n.name;
          ++gathers;
          break;
        case models::CollectiveOp::kAllReduce:
          ASSERT_LE(n.shape.size(), 1u) << n.name;  // no [rows, hidden] all-reduce is left
          {  // a norm's: a row sum over the device's 64 columns (the loss's are over its 256 logits)
            const models::Node& sum = g.node(n.inputs[0]);
            const bool norm = sum.kind == models::OpKind::kReduce && g.node(sum.inputs[0]).shape.back() == 64;
            (norm ? norm_sums : loss) += 1;
          }
          break;
        default: ADD_FAILURE() << n.name;
      }
    }
    // Forward: the lookup and each layer's o_proj and down_proj sums scattered (1 + 2 x 2), each
    // layer's two normed inputs and the final norm's output gathered (2 x 2 + 1); backward the
    // gradients of each: a gather for each scatter, a scatter for each gather.
    EXPECT_EQ(scatters, 10);
    EXPECT_EQ(gathers, 10);
    // The five RMSNorms' mean squares forward and their gradients' row sums backward; the loss's
    // row maxima, sums and picked logits (as replicated).
    EXPECT_EQ(norm_sums, 2 * 5);
    EXPECT_GE(loss, 3);
  }
}

// Sharded and replicated streams: the same matmuls; the sharded stream holds 1/4 of the activations
// between the blocks and the norms' weights, and moves the same bytes over the tensor links.
TEST(TensorParallel, ShardedStreamSameMatmulsLessMemory) {
  TrainingRunOptions o;
  o.engine = "analytical";
  const std::string mesh = "mesh: {tensor: 4}\nremat_policy: full\n";
  const TrainingRunResult s = run_training(v6e8(), tiny(mesh + "tensor_activations: sharded\n"), o);
  const TrainingRunResult r = run_training(v6e8(), tiny(mesh + "tensor_activations: replicated\n"), o);
  ASSERT_FALSE(s.programs.empty());
  ASSERT_EQ(s.programs.size(), r.programs.size());
  EXPECT_EQ(s.programs[0].flops, r.programs[0].flops);
  EXPECT_EQ(s.programs[0].parameter_bytes, 1705216u / 4 * 2);  // every parameter a quarter, the norms too
  EXPECT_EQ(r.programs[0].parameter_bytes, (1280u + (1705216u - 1280u) / 4) * 2);
  EXPECT_LT(s.programs[0].peak_hbm_bytes, r.programs[0].peak_hbm_bytes);
  const size_t tensor_axis = 1 + size_t(models::MeshAxis::kTensor);
  EXPECT_GT(s.collective_time[isa::Collective::kReduceScatter].instructions, 0u);
  EXPECT_GT(s.collective_time[isa::Collective::kAllGather].instructions, 0u);
  EXPECT_EQ(r.collective_time[isa::Collective::kReduceScatter].instructions, 0u);
  EXPECT_GT(s.collective_time.axes[tensor_axis].busy_s, 0);
}

TEST(TensorParallel, SameWorkPerDeviceAsDataParallelAndAQuarterOfTheSplitWeights) {
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult tp = run_training(v6e8(), tiny("mesh: {tensor: 4}\ntensor_activations: replicated\n"), o);
  const TrainingRunResult dp = run_training(v6e8(), tiny("mesh: {data: 8}\n"), o);
  ASSERT_EQ(tp.programs.size(), dp.programs.size());
  ASSERT_FALSE(tp.programs.empty());
  EXPECT_EQ(tp.global_batch, dp.global_batch);  // MaxText: per_device_batch_size x devices
  // Every matmul, attention included, is split 4 ways over a 4x larger batch.
  EXPECT_EQ(tp.programs[0].flops, dp.programs[0].flops);
  // 1,705,216 parameters: the norms (1,280) on every device, the rest (the embedding table's rows too) a quarter.
  EXPECT_EQ(dp.programs[0].parameter_bytes, 1705216u * 2);
  EXPECT_EQ(tp.programs[0].parameter_bytes, (1280u + (1705216u - 1280u) / 4) * 2);
  // The all-reduces of the activations cost time data parallelism does not spend.
  EXPECT_GT(tp.programs[0].device_s, dp.programs[0].device_s);
  EXPECT_GT(tp.programs[0].allreduce_bytes, dp.programs[0].allreduce_bytes);
  // Both are all-reduces; per mesh axis they come apart: the gradients' along data, the
  // activations' along tensor (1 + models::MeshAxis), nothing else.
  const CollectiveStats& t = tp.collective_time;
  const auto axis = [](models::MeshAxis a) { return size_t(1 + int(a)); };
  EXPECT_GT(t.axes[axis(models::MeshAxis::kData)].busy_s, 0);
  EXPECT_GT(t.axes[axis(models::MeshAxis::kTensor)].busy_s, 0);
  EXPECT_GT(t.axes[axis(models::MeshAxis::kTensor)].instructions, t.axes[axis(models::MeshAxis::kData)].instructions);
  EXPECT_EQ(t.axes[0].instructions + t.axes[axis(models::MeshAxis::kFsdp)].instructions, 0u);
  EXPECT_EQ(t.axes[axis(models::MeshAxis::kData)].instructions + t.axes[axis(models::MeshAxis::kTensor)].instructions,
            t[isa::Collective::kAllReduce].instructions);
  EXPECT_LE(t[isa::Collective::kAllReduce].busy_s,
            t.axes[axis(models::MeshAxis::kData)].busy_s + t.axes[axis(models::MeshAxis::kTensor)].busy_s + 1e-12);
  // Data parallelism alone: all along data.
  EXPECT_EQ(dp.collective_time.axes[axis(models::MeshAxis::kData)].instructions,
            dp.collective_time[isa::Collective::kAllReduce].instructions);
  EXPECT_EQ(dp.collective_time.axes[axis(models::MeshAxis::kTensor)].instructions, 0u);
}

// FSDP x tensor (MaxText's 2-D mesh for large models): the units' flat shards cut over the fsdp axis
// of the tensor replicas' shares, gathered and reduce-scattered along fsdp groups, the tensor
// all-reduces along tensor groups (the recomputed layers' too); per device the same matmul work as
// FSDP alone at the same per-device batch.
TEST(TensorParallel, FsdpTimesTensorMesh) {
  const std::string fsdp = "sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\nfsdp_grad_ckpt: true\n";
  const WorkloadConfig w = tiny(fsdp + "mesh: {tensor: 4}\ntensor_activations: replicated\n");
  const models::Mesh mesh = resolve_mesh(w.training(), 8);
  EXPECT_EQ(mesh[models::MeshAxis::kFsdp], 2u);  // under sharding: fsdp the fsdp axis takes the rest
  const std::unique_ptr<StepGraph> sg = train_step_graph(w);
  ASSERT_TRUE(sg->fsdp);
  const compiler::SpmdStep step = compiler::fsdp_step(*sg->fsdp, v6e8());
  EXPECT_EQ(step.cores.size(), 8u);
  const std::vector<std::vector<int64_t>> tensor_groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  const std::vector<std::vector<int64_t>> fsdp_groups = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  int gathers = 0, scatters = 0, reduces = 0, recomputed = 0;
  for (const models::Node& n : step.graph.nodes()) {
    if (n.kind != models::OpKind::kCollective) continue;
    if (n.collective.op == models::CollectiveOp::kAllReduce) {
      EXPECT_EQ(n.collective.groups, tensor_groups) << n.name;
      ++reduces;
      recomputed += n.name.find(".recompute.") != std::string::npos;
    } else {
      EXPECT_EQ(n.collective.groups, fsdp_groups) << n.name;
      (n.collective.op == models::CollectiveOp::kAllGather ? gathers : scatters) += 1;
    }
  }
  EXPECT_GT(gathers, 0);
  EXPECT_GT(scatters, 0);
  // The 10 of data x tensor, the loss's 3 and each recomputed layer's o_proj sum (its down_proj sum
  // feeds only the layer's output, which the backward does not need: not recomputed).
  EXPECT_EQ(reduces - recomputed, 10 + 3);
  EXPECT_EQ(recomputed, 2);

  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult ft = run_training(v6e8(), w, o);
  const TrainingRunResult f = run_training(v6e8(), tiny(fsdp), o);
  ASSERT_FALSE(ft.programs.empty());
  EXPECT_EQ(ft.programs[0].flops, f.programs[0].flops);
  // The tensor replica's 427,264 parameters (the norms whole, the rest a quarter) in bf16 over 2 fsdp
  // shards, plus the 1-D shards' tile padding in HBM (FSDP alone: 11,968 bytes).
  EXPECT_NEAR(double(ft.programs[0].parameter_bytes), 427264.0, 16384.0);
  // Per mesh axis: the all-gathers and reduce-scatters along fsdp, the all-reduces along tensor.
  const CollectiveStats& c = ft.collective_time;
  const size_t fsdp_axis = 1 + size_t(models::MeshAxis::kFsdp), tensor_axis = 1 + size_t(models::MeshAxis::kTensor);
  EXPECT_EQ(c.axes[fsdp_axis].instructions,
            c[isa::Collective::kAllGather].instructions + c[isa::Collective::kReduceScatter].instructions);
  EXPECT_EQ(c.axes[tensor_axis].instructions, c[isa::Collective::kAllReduce].instructions);
  EXPECT_GT(c.axes[tensor_axis].busy_s, 0);
  EXPECT_NEAR(double(f.programs[0].parameter_bytes), 1705216.0 * 2 / 8, 16384.0);
}

// Tensor parallelism on a megacore chip (v5p: XLA's device is the chip, whose two cores each compute
// half of its batch): the mesh is over chips, the replicas are cores. A tensor group is the cores
// of one index on T consecutive chips (each core sums its half of the batch's activations with its
// counterparts), a data group holds whole chips (the gradients' device all-reduce); a chip does what
// a v6e chip of the same mesh does.
TEST(TensorParallel, OnMegacoreChipsTheCoresSplitTheBatch) {
  const HwConfig v5p8 = test::hw_named("v5p-8");  // 4 chips of 2 cores
  for (const std::string sharding : {"", "sharding: fsdp\n"}) {
    SCOPED_TRACE(sharding);
    const WorkloadConfig w = tiny(sharding + "mesh: {tensor: 2}\n");
    const std::unique_ptr<StepGraph> sg = train_step_graph(w, v5p8);
    const compiler::SpmdStep step =
        sg->fsdp ? compiler::fsdp_step(*sg->fsdp, v5p8) : compiler::data_parallel_step(sg->dp, v5p8);
    ASSERT_EQ(step.cores.size(), 8u);
    int reduces = 0;
    for (const models::Node& n : step.graph.nodes()) {
      if (n.kind != models::OpKind::kCollective) continue;
      ASSERT_EQ(n.collective.replicas, 8) << n.name;
      const bool tensor = n.collective.axis == models::MeshAxis::kTensor;
      reduces += tensor;
      for (const std::vector<int64_t>& grp : n.collective.resolved_groups()) {
        std::set<uint32_t> chips, core_index;
        for (int64_t r : grp) chips.insert(step.cores[size_t(r)].chip), core_index.insert(step.cores[size_t(r)].core);
        if (tensor) {  // 2 chips, one core index
          EXPECT_EQ(grp.size(), 2u) << n.name;
          EXPECT_EQ(chips.size(), 2u) << n.name;
          EXPECT_EQ(core_index.size(), 1u) << n.name;
        } else {  // data or fsdp: the 2 chips of the other tensor coordinate, both cores each
          EXPECT_EQ(grp.size(), 4u) << n.name;
          EXPECT_EQ(chips.size(), 2u) << n.name;
          EXPECT_EQ(core_index.size(), 2u) << n.name;
        }
      }
    }
    EXPECT_GT(reduces, 0);
  }

  // Per device (chip): the same matmul work as data parallelism at the same per-device batch, and as a
  // v6e chip's under the same mesh (each of its cores computes half of it).
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult tp = run_training(v5p8, tiny("mesh: {tensor: 2}\n"), o);
  const TrainingRunResult dp = run_training(v5p8, tiny(""), o);
  const TrainingRunResult v6e = run_training(v6e8(), tiny("mesh: {tensor: 2}\n"), o);
  ASSERT_FALSE(tp.programs.empty());
  EXPECT_EQ(tp.global_batch, dp.global_batch);
  EXPECT_EQ(tp.global_batch, 8u);  // 2 per device, 4 devices
  EXPECT_EQ(tp.programs[0].flops, dp.programs[0].flops);
  EXPECT_EQ(tp.programs[0].flops, v6e.programs[0].flops);
  EXPECT_GT(tp.programs[0].device_s, dp.programs[0].device_s);  // the activations' all-reduces
  EXPECT_GT(tp.collective_time.axes[1 + size_t(models::MeshAxis::kTensor)].busy_s, 0);
  // One sequence per chip: the tensor group's 2 examples, one on each core, both useful.
  const std::vector<Override> one{{"per_device_batch_size", "1"}};
  const TrainingRunResult tp1 = run_training(v5p8, test::tiny_decoder("mesh: {tensor: 2}\n", one), o);
  const TrainingRunResult v6e1 = run_training(v6e8(), test::tiny_decoder("mesh: {tensor: 2}\n", one), o);
  ASSERT_FALSE(tp1.programs.empty());
  EXPECT_EQ(tp1.programs[0].flops, v6e1.programs[0].flops);
}

// FSDP beside a data axis (hybrid sharding; MaxText ici_data_parallelism x ici_fsdp_parallelism): the
// units sharded over fsdp groups of 4 (gathered and reduce-scattered there), each gradient slice then
// all-reduced over the data group of 2; per device the matmul work of FSDP alone and twice its
// parameter shard.
TEST(TensorParallel, HybridFsdpBesideData) {
  const std::string fsdp = "sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\n";
  const WorkloadConfig w = tiny(fsdp + "mesh: {data: 2}\n");
  const models::Mesh mesh = resolve_mesh(w.training(), 8);
  EXPECT_EQ(mesh[models::MeshAxis::kFsdp], 4u);
  const std::unique_ptr<StepGraph> sg = train_step_graph(w);
  ASSERT_TRUE(sg->fsdp);
  const compiler::SpmdStep step = compiler::fsdp_step(*sg->fsdp, v6e8());
  const std::vector<std::vector<int64_t>> fsdp_groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  const std::vector<std::vector<int64_t>> data_groups = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  int gathers = 0, scatters = 0, reduces = 0;
  for (const models::Node& n : step.graph.nodes()) {
    if (n.kind != models::OpKind::kCollective) continue;
    if (n.collective.op == models::CollectiveOp::kAllReduce) {
      EXPECT_EQ(n.collective.groups, data_groups) << n.name;
      EXPECT_EQ(step.graph.node(n.inputs[0]).collective.op, models::CollectiveOp::kReduceScatter) << n.name;
      ++reduces;
    } else {
      EXPECT_EQ(n.collective.groups, fsdp_groups) << n.name;
      (n.collective.op == models::CollectiveOp::kAllGather ? gathers : scatters) += 1;
    }
  }
  EXPECT_GT(gathers, 0);
  EXPECT_GT(scatters, 0);
  EXPECT_EQ(reduces, scatters);  // one per unit's gradient slice

  TrainingRunOptions o;
  o.engine = "analytical";
  for (const bool overlap : {true, false}) {
    SCOPED_TRACE(overlap);
    const std::string ov = overlap ? "" : "overlap_collectives: false\n";
    const TrainingRunResult h = run_training(v6e8(), tiny(fsdp + ov + "mesh: {data: 2}\n"), o);
    const TrainingRunResult f = run_training(v6e8(), tiny(fsdp + ov), o);
    ASSERT_FALSE(h.programs.empty());
    EXPECT_EQ(h.global_batch, f.global_batch);
    EXPECT_EQ(h.programs[0].flops, f.programs[0].flops);
    EXPECT_NEAR(double(h.programs[0].parameter_bytes), 2.0 * double(f.programs[0].parameter_bytes), 16384.0);
    const CollectiveStats& c = h.collective_time;
    EXPECT_GT(c.axes[1 + size_t(models::MeshAxis::kData)].busy_s, 0);
    EXPECT_EQ(c.axes[1 + size_t(models::MeshAxis::kData)].instructions, c[isa::Collective::kAllReduce].instructions);
  }
}

}  // namespace
}  // namespace tpusim
