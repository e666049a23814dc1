// The round trip of issue 14 part 6: tpusim's own step graphs exported as HLO text
// (compiler/hlo/hlo_export.h), parsed and imported back (hlo_import.h), simulate within 2% of the
// graph they came from on the analytical engine, with the same ops: BERT-base's training step and
// a small step of each model family.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "compiler/compile.h"
#include "compiler/hlo/hlo_export.h"
#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/step/data_parallel.h"
#include "compiler/step/fsdp.h"
#include "compiler/step/spmd_step.h"
#include "models/kernels.h"
#include "sim/engine/engine.h"
#include "tests/hlo/hlo_step_util.h"

namespace tpusim::hlo {
namespace {

using models::Graph;
using models::Node;
using models::OpKind;

double device_time(const Graph& g, const HwConfig& hw) {
  return make_engine("analytical", hw)->run(compiler::compile_graph(g, hw, "rt", 0, 0), nullptr).device_time_s;
}

// The graph's ops by kind (element-wise ops by their op), leaving out what costs nothing and has no
// one-to-one form in HLO: scalar constants, their broadcasts (an element-wise op's scalar operand is
// a broadcast constant in HLO) and converts.
// Only the nodes the outputs use: the import follows the ROOT's operands, and nodes no output reads
// (a parameter too: the attention mask under flash attention) cost nothing in either graph.
std::map<std::string, int> op_counts(const Graph& g) {
  std::vector<char> live(g.nodes().size(), 0);
  for (int o : g.outputs()) live[size_t(o)] = 1;
  for (size_t i = live.size(); i-- > 0;)
    if (live[i] || g.node(int(i)).kind == OpKind::kParameter)
      for (int in : g.node(int(i)).inputs) live[size_t(in)] = 1;
  std::map<std::string, int> c;
  for (const Node& n : g.nodes()) {
    if (!live[size_t(n.id)]) continue;
    if (n.kind == OpKind::kConstant) continue;
    // An element-wise op's operand of another type is a convert in HLO, which the import folds into
    // the op that reads it (as XLA fuses it): the graph's own convert there folds as well.
    if (n.kind == OpKind::kConvert) continue;
    if (n.kind == OpKind::kBroadcast && g.node(n.inputs[0]).kind == OpKind::kConstant) continue;
    std::string k = std::to_string(int(n.kind));
    if (n.kind == OpKind::kElementwise) {
      k += '.';  // apart: GCC 12's false -Wrestrict on "." + std::to_string(...)
      k += std::to_string(int(n.ew));
    }
    ++c[k];
  }
  return c;
}

void round_trip(const std::string& what, const Graph& g, const HwConfig& hw) {
  const HloImport r = import_hlo(parse_hlo_module(export_hlo(g), what + ".hlo"));
  for (const Unmodelled& u : r.stats.unmodelled) ADD_FAILURE() << what << ": " << u.instruction << ": " << u.reason;
  EXPECT_EQ(op_counts(r.graph), op_counts(g)) << what;
  EXPECT_EQ(r.graph.outputs().size(), g.outputs().size()) << what;
  const double native = device_time(g, hw), imported = device_time(r.graph, hw);
  std::printf("%-12s native %.6f ms, imported %.6f ms (%+.2f%%), %zu vs %zu nodes\n", what.c_str(), native * 1e3,
              imported * 1e3, (imported / native - 1) * 100, g.nodes().size(), r.graph.nodes().size());
  EXPECT_NEAR(imported / native, 1.0, 0.02) << what << ": " << imported << " s vs " << native << " s";
}

void round_trip_step(const std::string& what, const std::string& workload, const std::string& hw,
                     const std::vector<std::string>& sets) {
  const auto s = testing::step(workload, hw, sets, GraphKind::kTrainFirstStep);
  // FSDP: the forward and backward on the full parameters (the slice update is a program apart).
  round_trip(what, s->sg->fsdp ? s->sg->fsdp->graph : s->sg->fwd.graph, s->hw);
}

TEST(HloRoundTrip, BertBaseTrainStep) { round_trip_step("bert-base", "bert_base_mrpc_v3-8", "v3-8", {}); }

TEST(HloRoundTrip, Families) {
  const std::vector<std::string> small = {"model_config.layers=2", "max_length=64"};
  round_trip_step("gpt2", "gpt2_causal_lm_v3-8", "v3-8", small);
  round_trip_step("roberta", "roberta_base_sst2_v2-8", "v2-8", small);
  round_trip_step("distilbert", "bert_base_mrpc_v3-8", "v3-8",
                  {"model=distilbert-base-uncased", "model_config.layers=2", "max_length=64"});
  round_trip_step("albert", "bert_base_mrpc_v3-8", "v3-8", {"model=albert-base-v2", "max_length=64"});
  round_trip_step("t5", "t5_small_v3-8", "v3-8", {"model_config.layers=2", "max_length=64", "max_target_length=32"});
  round_trip_step("bart", "t5_small_v3-8", "v3-8",
                  {"model=facebook/bart-large", "model_config.layers=2", "max_length=64", "max_target_length=32"});
  round_trip_step("vit", "vit_base_v4-8", "v4-8", {"per_device_batch_size=1"});
  round_trip_step("llama", "llama3_8b_v6e-8", "v6e-8",
                  {"model_config.layers=2", "model_config.hidden=256", "model_config.heads=4",
                   "model_config.intermediate=512", "model_config.vocab=1000", "max_length=64"});
}


// A parallel step as tpusim compiles it (compiler/step/: scheduled, with its collectives; what
// `tpusim export-hlo` writes for a slice): exported, imported for the slice's cores and compiled
// across them by the same step compiler (compiler/step/spmd_step.h) as the native step, the
// asynchronous collectives overlapping the kernels in both. Exact but for what the text cannot carry
// (the next batch's infeed, off in the imported step).
// `unread`: an input no kernel reads (flash attention's attention_mask), which the import leaves
// out: its HBM is not in the imported step's peak and its infeed not in its time (`tolerance`).
void spmd_round_trip(const std::string& what, compiler::SpmdStep native_step, const HwConfig& hw,
                     const std::string& unread = "", double tolerance = 0.001) {
  const auto engine = make_engine("analytical", hw);
  native_step.prefetch_next_batch = false;
  const compiler::CompiledStep native_c = compiler::compile_spmd_step(native_step, hw, what);
  const double native = engine->run(native_c.program, nullptr).device_time_s;
  HloExportOptions eo;
  eo.donated = native_step.donated;
  const std::string text = export_hlo(native_step.graph, eo);
  ImportOptions io;
  io.replicas = int64_t(native_step.cores.size());
  const HloImport r = import_hlo(parse_hlo_module(text, what + ".hlo"), io);
  for (const Unmodelled& u : r.stats.unmodelled) ADD_FAILURE() << what << ": " << u.instruction << ": " << u.reason;
  EXPECT_TRUE(r.graph.scheduled()) << what;
  const compiler::CompiledStep sp = compiler::compile_spmd_graph(r.graph, hw, what, native_step.cores, r.donated);
  // The same collectives (a combined or flat one once), of the same bytes.
  EXPECT_EQ(sp.collectives.size(), native_c.collectives.size()) << what;
  EXPECT_EQ(sp.allreduce_bytes, native_c.allreduce_bytes) << what;
  EXPECT_EQ(sp.allgather_bytes, native_c.allgather_bytes) << what;
  EXPECT_EQ(sp.reducescatter_bytes, native_c.reducescatter_bytes) << what;
  uint64_t unread_bytes = 0;
  for (const models::Node& n : native_step.graph.nodes())
    if (!unread.empty() && n.name == unread) unread_bytes += compiler::stored_bytes(native_step.graph, n.id);
  EXPECT_EQ(sp.memory.peak_bytes + unread_bytes, native_c.memory.peak_bytes) << what;
  const double imported = engine->run(sp.program, nullptr).device_time_s;
  std::printf("%-12s on %zu cores: native %.4f ms, imported %.4f ms (%+.3f%%), %zu collectives\n", what.c_str(),
              native_step.cores.size(), native * 1e3, imported * 1e3, (imported / native - 1) * 100, sp.collectives.size());
  EXPECT_NEAR(imported / native, 1.0, tolerance) << what << ": " << imported << " s vs " << native << " s";
}

void data_parallel_round_trip(const std::string& what, const std::string& workload, const std::string& hw,
                              const std::vector<std::string>& sets) {
  const auto s = testing::step(workload, hw, sets, GraphKind::kTrainFirstStep);
  spmd_round_trip(what, compiler::data_parallel_step(s->sg->dp, s->hw), s->hw);
}

// FSDP (compiler/step/fsdp.h): each unit's flat all-gathers (forward and backward) and its flat
// reduce-scatter, exported as all-gather + slices + reshapes and reshapes + concatenate + pad +
// reduce-scatter, folded back into flat collectives by the import (hlo_import_flat.h).
void fsdp_round_trip(const std::string& what, const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"model=bert-base-uncased", "model_config.layers=2", "max_length=64"};
  all.insert(all.end(), sets.begin(), sets.end());
  const auto s = testing::step("bert_large_fsdp_v3-32", "v3-8", all, GraphKind::kTrainFirstStep);
  ASSERT_TRUE(s->sg->fsdp) << what;
  spmd_round_trip(what, compiler::fsdp_step(*s->sg->fsdp, s->hw), s->hw);
}

TEST(HloRoundTrip, FsdpStep) {
  fsdp_round_trip("fsdp-ckpt", {});  // the workload's activation checkpointing per layer
  fsdp_round_trip("fsdp", {"fsdp_grad_ckpt=false"});
  fsdp_round_trip("fsdp-sync", {"overlap_collectives=false"});
}

// Sequence parallelism (a mesh with a sequence axis): each layer's key/value all-gathers along the
// sequence groups and their gradients' reduce-scatters, the flash attention calls' queries offset
// among the gathered keys (q_offset in backend_config), beside the FSDP units' collectives over
// fsdp x sequence.
TEST(HloRoundTrip, SequenceParallelStep) {
  const auto s = testing::step("llama3.1_8b_8k_flash_v6e-8", "v6e-8",
                               {"model_config.layers=2", "model_config.hidden=256", "model_config.heads=4",
                                "model_config.kv_heads=2", "model_config.head_dim=64", "model_config.intermediate=512",
                                "model_config.vocab=1024", "max_length=1024", "sa_block_q=256", "sa_block_kv=256",
                                "mesh={fsdp: 4, sequence: 2}"},
                               GraphKind::kTrainFirstStep);
  ASSERT_TRUE(s->sg->fsdp);
  // Not exact: the attention_mask input (16 KiB, tiled) flash attention does not read, and the
  // load-balanced chunks' slices and concatenation fuse a little differently: measured -0.21%.
  spmd_round_trip("sequence", compiler::fsdp_step(*s->sg->fsdp, s->hw), s->hw, "attention_mask", 0.003);
}

// Tensor parallelism with the activations sharded (framework jax's default): each block's input
// all-gathered along the tensor groups and its row-parallel sums reduce-scattered (written by the
// model), the norms' and the loss's all-reduces (the partitioner's), beside the gradients'
// all-reduces over data.
TEST(HloRoundTrip, ShardedTensorStep) {
  const auto s = testing::step("llama3_8b_tensor8_v6e-8", "v6e-8",
                               {"model_config.layers=2", "model_config.hidden=256", "model_config.heads=8",
                                "model_config.kv_heads=4", "model_config.intermediate=512", "model_config.vocab=1024",
                                "max_length=256", "sa_block_q=128", "sa_block_kv=128", "mesh={tensor: 4}",
                                "per_device_batch_size=2"},
                               GraphKind::kTrainFirstStep);
  bool scatters = false;
  for (const models::Node& n : s->sg->dp.graph->nodes())
    scatters = scatters || (n.kind == models::OpKind::kCollective && n.collective.op == models::CollectiveOp::kReduceScatter);
  EXPECT_TRUE(scatters);
  // Not exact: the attention_mask input flash attention does not read (measured -0.035%).
  spmd_round_trip("tensor", compiler::data_parallel_step(s->sg->dp, s->hw), s->hw, "attention_mask", 0.003);
}

TEST(HloRoundTrip, BertBaseDataParallelStep) {
  data_parallel_round_trip("bert-base", "bert_base_mrpc_v3-8", "v3-8", {});
  // The all-reduces after the backward pass (synchronous). (GPT-2 with 2 layers, 64 tokens: +1.9%,
  // its largest all-reduce overlapping what the native step's kernel order leaves after it.)
  data_parallel_round_trip("bert-base-sync", "bert_base_mrpc_v3-8", "v3-8", {"overlap_collectives=false"});
}

// Flash attention: each call one custom-call to "tpu_custom_call" (a Pallas kernel, its attributes
// in backend_config), its parts get-tuple-elements; the import builds the same kernels. Grouped-query
// heads, the causal mask and a sliding window. (A parallel step's round trip is not exact here: the
// attention_mask input, which flash attention does not read, is not imported: 32 KiB of HBM and its
// infeed, 0.12% of a small data-parallel step.)
TEST(HloRoundTrip, FlashAttention) {
  const std::vector<std::string> small = {"model_config.layers=2", "model_config.hidden=256", "model_config.heads=4",
                                          "model_config.kv_heads=2", "model_config.head_dim=64",
                                          "model_config.intermediate=512", "model_config.vocab=1000", "max_length=1024",
                                          "sa_block_q=256", "sa_block_kv=256"};
  round_trip_step("llama-flash", "llama3.1_8b_8k_flash_v6e-8", "v6e-8", small);
  std::vector<std::string> window = small;  // Mistral's 4,096-key window over 8,192 tokens
  window.push_back("model=mistralai/Mistral-7B-v0.1");
  window.push_back("fsdp_wrap_layer_classes=[MistralDecoderLayer]");
  window.push_back("max_length=8192");
  window.push_back("sa_block_q=512");
  window.push_back("sa_block_kv=512");
  round_trip_step("window", "llama3.1_8b_8k_flash_v6e-8", "v6e-8", window);
}

TEST(HloRoundTrip, Kernels) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  for (const std::string k : {"layernorm", "encoder_block"}) {
    models::KernelArgs a;
    a.kernel = k;
    if (k == "encoder_block") a.shape = {{"seq", 128}, {"hidden", 256}, {"heads", 4}, {"ffn", 1024}};
    else a.shape = {{"rows", 512}, {"cols", 768}};
    round_trip(k, models::build_kernel(a), hw);
  }
}

}  // namespace
}  // namespace tpusim::hlo
