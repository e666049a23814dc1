// Sequence (context) parallelism (docs/training.md, "Meshes"): a mesh with a sequence axis splits
// each sequence's tokens over its replicas; attention all-gathers the keys and values along the
// sequence groups (their gradients reduce-scattered back), the weights are sharded over fsdp x
// sequence as FSDP shards them, and the step waits for the replica with the last block of queries,
// whose causal attention covers every key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/config_error.h"
#include "compiler/step/fsdp.h"
#include "models/graph.h"
#include "tests/workloads/tiny_decoder.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/step_builder.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

using test::tiny_decoder;
using test::train_step_graph;
using test::v6e8;

const std::string kFsdp = "sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\nattention: flash\n"
                          "sa_block_q: 64\nsa_block_kv: 64\n";
const std::string kContiguous = "context_parallel_load_balance: false\n";

// The attention kernels' flops of a step graph.
uint64_t attention_flops(const models::Graph& g) {
  uint64_t f = 0;
  for (const models::Node& n : g.nodes()) f += models::attention_flops(g, n);
  return f;
}

TEST(SequenceParallel, GathersKeysAndValuesAlongTheSequenceGroups) {
  const WorkloadConfig w = tiny_decoder(kFsdp + kContiguous + "mesh: {fsdp: 4, sequence: 2}\n");
  const models::Mesh mesh = resolve_mesh(w.training(), 8);
  EXPECT_EQ(mesh[models::MeshAxis::kSequence], 2u);
  EXPECT_EQ(mesh[models::MeshAxis::kFsdp], 4u);
  const std::unique_ptr<StepGraph> sg = train_step_graph(w);
  ASSERT_TRUE(sg->fsdp);
  // A sequence group of 2 devices runs 2 devices' examples (2 each), each device 128 of 256 tokens.
  EXPECT_EQ(sg->device_examples, 4u);
  const compiler::SpmdStep step = compiler::fsdp_step(*sg->fsdp, v6e8());
  const std::vector<std::vector<int64_t>> pairs = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  int gathers = 0, scatters = 0, fsdp = 0;
  for (const models::Node& n : step.graph.nodes()) {
    if (n.name == "input_ids") {
      EXPECT_EQ(n.shape, (models::Dims{4, 128}));
    }
    if (n.kind == models::OpKind::kAttention && n.attention.part == models::AttentionPart::kOut) {
      EXPECT_EQ(n.attention.q_offset, 128);
    }
    if (n.kind != models::OpKind::kCollective) continue;
    if (n.collective.axis == models::MeshAxis::kSequence) {
      EXPECT_EQ(n.collective.groups, pairs) << n.name;
      EXPECT_EQ(n.collective.dim, 2) << n.name;
      (n.collective.op == models::CollectiveOp::kAllGather ? gathers : scatters) += 1;
    } else {
      // The weights' gathers and reduce-scatters span fsdp x sequence: all 8 devices.
      EXPECT_EQ(n.collective.group_size(), 8) << n.name;
      ++fsdp;
    }
  }
  EXPECT_EQ(gathers, 4);   // k and v of 2 layers
  EXPECT_EQ(scatters, 4);  // their gradients
  EXPECT_GT(fsdp, 0);
}

// Per device the same tokens (2 x 256 = 4 x 128) and matmul work as FSDP alone. Contiguous blocks:
// the last block's replica computes more of the causal attention: with blocks of 64, its 2 query
// blocks meet 3 + 4 key blocks for each of 4 sequences (28 block pairs); FSDP alone 10 pairs for
// each of 2 sequences (20). Load-balanced (the default), replica 0's chunks 0 and 3 of 4 meet 1 and
// 4 key blocks: 20 pairs, FSDP alone's.
TEST(SequenceParallel, TheLastBlocksReplicaDoesMoreAttentionUnlessBalanced) {
  const std::unique_ptr<StepGraph> sp = train_step_graph(tiny_decoder(kFsdp + kContiguous + "mesh: {fsdp: 4, sequence: 2}\n"));
  const std::unique_ptr<StepGraph> lb = train_step_graph(tiny_decoder(kFsdp + "mesh: {fsdp: 4, sequence: 2}\n"));
  const std::unique_ptr<StepGraph> fs = train_step_graph(tiny_decoder(kFsdp + "mesh: {fsdp: 8}\n"));
  ASSERT_TRUE(sp->fsdp && lb->fsdp && fs->fsdp);
  const uint64_t a = attention_flops(sp->fsdp->graph), b = attention_flops(fs->fsdp->graph);
  ASSERT_GT(b, 0u);
  EXPECT_EQ(a * 20, b * 28);
  EXPECT_EQ(attention_flops(lb->fsdp->graph), b);
  uint64_t dots_sp = 0, dots_fs = 0;
  for (const models::Node& n : sp->fsdp->graph.nodes())
    if (n.kind == models::OpKind::kDot) dots_sp += models::dot_flops(sp->fsdp->graph, n);
  for (const models::Node& n : fs->fsdp->graph.nodes())
    if (n.kind == models::OpKind::kDot) dots_fs += models::dot_flops(fs->fsdp->graph, n);
  EXPECT_EQ(dots_sp, dots_fs);
}

TEST(SequenceParallel, RunsAndReportsTheSequenceAxis) {
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult sp = run_training(v6e8(), tiny_decoder(kFsdp + "mesh: {fsdp: 4, sequence: 2}\n"), o);
  const TrainingRunResult fs = run_training(v6e8(), tiny_decoder(kFsdp + "mesh: {fsdp: 8}\n"), o);
  EXPECT_EQ(sp.global_batch, fs.global_batch);  // MaxText: per_device_batch_size x devices
  const auto axis = [](models::MeshAxis a) { return size_t(1 + int(a)); };
  const CollectiveStats& t = sp.collective_time;
  EXPECT_GT(t.axes[axis(models::MeshAxis::kSequence)].instructions, 0u);
  EXPECT_GT(t.axes[axis(models::MeshAxis::kSequence)].busy_s, 0);
  EXPECT_EQ(fs.collective_time.axes[axis(models::MeshAxis::kSequence)].instructions, 0u);
  // The same weights per device: sharded over all 8 either way.
  EXPECT_EQ(sp.programs[0].parameter_bytes, fs.programs[0].parameter_bytes);
  EXPECT_GT(sp.programs[0].device_s, fs.programs[0].device_s);  // the gathers and the heavier attention
}

// Sequence x tensor: the sequence groups are the replicas that differ in the sequence coordinate
// only (stride 2: the tensor axis is innermost); the gathered keys and values keep their heads split
// over the tensor axis (sharding_rules.h), so the tensor axis adds only its Megatron all-reduces,
// the same count as without a sequence axis.
TEST(SequenceParallel, WithATensorAxis) {
  const std::string fsdp = "sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\nattention: flash\n";
  const std::unique_ptr<StepGraph> st = train_step_graph(tiny_decoder(fsdp + "mesh: {fsdp: 2, sequence: 2, tensor: 2}\n"));
  const std::unique_ptr<StepGraph> t = train_step_graph(tiny_decoder(fsdp + "mesh: {fsdp: 4, tensor: 2}\n"));
  ASSERT_TRUE(st->fsdp && t->fsdp);
  const std::vector<std::vector<int64_t>> sequence_groups = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
  auto count = [](const models::Graph& g, models::MeshAxis axis) {
    int n = 0;
    for (const models::Node& x : g.nodes()) n += x.kind == models::OpKind::kCollective && x.collective.axis == axis;
    return n;
  };
  for (const models::Node& n : st->fsdp->graph.nodes()) {
    if (n.kind != models::OpKind::kCollective || n.collective.axis != models::MeshAxis::kSequence) continue;
    EXPECT_EQ(n.collective.groups, sequence_groups) << n.name;
    EXPECT_EQ(n.sharding.axis_of(1), models::MeshAxis::kTensor) << n.name;  // [B, kv heads / 2, S, hd]
  }
  EXPECT_EQ(count(st->fsdp->graph, models::MeshAxis::kSequence), 8);
  EXPECT_EQ(count(st->fsdp->graph, models::MeshAxis::kTensor), count(t->fsdp->graph, models::MeshAxis::kTensor));
}

// A fraction of a sequence per device (MaxText's per_device_batch_size=0.25 with a sequence axis of
// 4): a sequence group's 4 devices share one sequence, 64 of its 256 tokens each; the global batch
// is per_device_batch_size x devices, and each device does a quarter of the work of 1 per device.
TEST(SequenceParallel, AFractionOfASequencePerDevice) {
  const std::string mesh = kFsdp + "mesh: {fsdp: 2, sequence: 4}\n";
  const WorkloadConfig quarter = tiny_decoder(mesh, {{"per_device_batch_size", "0.25"}});
  const std::unique_ptr<StepGraph> sg = train_step_graph(quarter);  // at 2 per device: 8 per group
  EXPECT_EQ(sg->device_examples, 8u);
  EXPECT_EQ(variant_batch(quarter.training(), v6e8(), 0.25), 1u);
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult q = run_training(v6e8(), quarter, o);
  const TrainingRunResult one = run_training(v6e8(), tiny_decoder(mesh, {{"per_device_batch_size", "1"}}), o);
  EXPECT_EQ(q.global_batch, 2u);  // 0.25 x 8 devices
  EXPECT_EQ(one.global_batch, 8u);
  ASSERT_FALSE(q.programs.empty());
  EXPECT_EQ(q.programs[0].batch, 1u);  // the group's one sequence
  EXPECT_EQ(4 * q.programs[0].flops, one.programs[0].flops);
  EXPECT_LT(q.programs[0].device_s, one.programs[0].device_s);
  // A fraction that does not make whole sequences over the group is refused at the key, with the rule.
  try {
    run_training(v6e8(), tiny_decoder(kFsdp + "mesh: {fsdp: 4, sequence: 2}\n", {{"per_device_batch_size", "0.25"}}), o);
    ADD_FAILURE() << "0.25 x 2 devices is not a whole sequence";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, "per_device_batch_size");
    EXPECT_NE(std::string(e.what()).find("whole number"), std::string::npos) << e.what();
  }
  // Without a sequence or tensor axis a fraction has no devices to share it.
  EXPECT_THROW(run_training(v6e8(), tiny_decoder("", {{"per_device_batch_size", "0.5"}}), o), ConfigError);
  // With a tensor axis too: 0.25 x 2 x 2 = 1.
  const WorkloadConfig both = tiny_decoder(kFsdp + "mesh: {fsdp: 2, sequence: 2, tensor: 2}\n", {{"per_device_batch_size", "0.25"}});
  EXPECT_EQ(run_training(v6e8(), both, o).global_batch, 2u);
}

std::string load_error(const std::string& extra) {
  try {
    tiny_decoder(extra);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(SequenceParallel, RefusesWhatIsNotModelled) {
  // The weights are split over the sequence axis: that is FSDP.
  EXPECT_NE(load_error("attention: flash\nmesh: {data: 4, sequence: 2}\n").find("sharding: fsdp"), std::string::npos);
  // Eager attention is refused when the step is built (the model's check).
  EXPECT_THROW(train_step_graph(tiny_decoder("sharding: fsdp\nmesh: {fsdp: 4, sequence: 2}\nattention: eager\n")),
               ConfigError);
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:128:8'}\nsharding: fsdp\nmesh: {sequence: 2}\n",
                                         "bert_sp.yaml"),
               ConfigError);
}

}  // namespace
}  // namespace tpusim
