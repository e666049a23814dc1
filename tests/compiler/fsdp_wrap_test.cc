// FSDP wrapping policies (compiler/step/fsdp_wrap.h): the units transformer_auto_wrap_policy and
// size_based_auto_wrap_policy give a small BERT, and what the units change in a compiled step
// (all-gather bytes, peak memory, device time).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/step/fsdp.h"
#include "compiler/step/fsdp_graphs.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

using Units = std::vector<std::pair<std::string, uint64_t>>;

// 4 layers, H=256, I=1024, vocab 2048, 128 positions, 2 labels. Parameter elements: a BertLayer
// 4 (H^2 + H) + 2 H I + I + H + 4 H = 789,760 (attention 263,680, intermediate.dense 263,168,
// output.dense 262,400, output.LayerNorm 512); embeddings (2048 + 128 + 2) H + 2 H = 558,080 of
// which word_embeddings 524,288; pooler 65,792; classifier 514.
models::ModelArch small_bert() {
  models::ModelArch c = models::find_preset("bert-tiny");
  c.layers = 4;
  c.hidden = 256;
  c.heads = 4;
  c.intermediate = 1024;
  c.vocab = 2048;
  c.max_position = 128;
  return c;
}

std::unique_ptr<FsdpGraphs> graphs(const FsdpWrapPolicy& wrap) {
  models::BertGraphOptions o;
  o.batch = 2;
  o.seq = 64;
  return build_fsdp_graphs(models::build_bert(small_bert(), o), 8, false, models::OptimizerConfig{}, true, wrap);
}

Units layers(const std::string& suffix, uint64_t elems) {
  Units u;
  for (int l = 0; l < 4; ++l) u.push_back({"bert.encoder.layer." + std::to_string(l) + suffix, elems});
  return u;
}

Units cat(Units a, const Units& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(FsdpWrap, DefaultUnitsAreEmbeddingsLayersAndHeads) {
  EXPECT_EQ(fsdp_unit_sizes(*graphs({})),
            cat(cat({{"bert.embeddings", 558080}}, layers("", 789760)), {{"heads", 65792 + 514}}));
}

TEST(FsdpWrap, LayerClassesWrapTheNamedModulesAndTheRestIsTheRoot) {
  const auto f = graphs({.layer_classes = {"BertLayer"}});
  EXPECT_EQ(fsdp_unit_sizes(*f), cat(layers("", 789760), {{"root", 558080 + 65792 + 514}}));
  EXPECT_TRUE(f->step.units.back().whole_step);
  EXPECT_FALSE(f->step.units.front().whole_step);
  EXPECT_EQ(fsdp_unit_sizes(*graphs({.layer_classes = {"BertLayer", "BertEmbeddings"}})),
            cat(cat({{"bert.embeddings", 558080}}, layers("", 789760)), {{"root", 65792 + 514}}));
  // Nested classes: the attention is its own unit inside each layer's.
  Units nested;
  for (int l = 0; l < 4; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    nested.push_back({p, 789760 - 263680});
    nested.push_back({p + ".attention", 263680});
  }
  Units got = fsdp_unit_sizes(*graphs({.layer_classes = {"BertLayer", "BertAttention"}}));
  got.pop_back();  // root
  std::sort(nested.begin(), nested.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, nested);
}

TEST(FsdpWrap, MinNumParamsWrapsBottomUp) {
  // >= 500k: word_embeddings (an Embedding leaf) and each layer (its sub-modules are all smaller);
  // the embeddings' rest (33,792), the encoder (nothing left) and the pooler stay in the root.
  EXPECT_EQ(fsdp_unit_sizes(*graphs({.min_num_params = 500000, .layer_classes = {}})),
            cat(cat({{"bert.embeddings.word_embeddings", 524288}}, layers("", 789760)),
                {{"root", 33792 + 65792 + 514}}));
  // >= 200k: inside each layer the attention, intermediate.dense and output.dense; the layer's
  // remaining LayerNorm (512) is below 200k, so the layer is not a unit.
  Units small;
  for (int l = 0; l < 4; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    small.push_back({p + ".attention", 263680});
    small.push_back({p + ".intermediate.dense", 263168});
    small.push_back({p + ".output.dense", 262400});
  }
  EXPECT_EQ(fsdp_unit_sizes(*graphs({.min_num_params = 200000, .layer_classes = {}})),
            cat(cat({{"bert.embeddings.word_embeddings", 524288}}, small), {{"root", 33792 + 65792 + 514 + 4 * 512}}));
  // Above the model's size nothing is wrapped: one root unit.
  const Units all = fsdp_unit_sizes(*graphs({.min_num_params = 100000000, .layer_classes = {}}));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].second, 558080 + 4 * 789760 + 65792 + 514);
}

TEST(FsdpWrap, UnitsChangeGathersMemoryAndTime) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  auto compiled = [&](const FsdpWrapPolicy& w) {
    const auto f = graphs(w);
    return compile_spmd_step(fsdp_step(*f, hw), hw, "fsdp");
  };
  const CompiledStep def = compiled({}), layer = compiled({.layer_classes = {"BertLayer"}}),
                     encoder = compiled({.layer_classes = {"BertEncoder"}}), fine = compiled({.min_num_params = 200000, .layer_classes = {}});
  // The root unit (embeddings + heads) is gathered once instead of twice.
  EXPECT_LT(layer.allgather_bytes, def.allgather_bytes);
  // Each gradient is still reduce-scattered once (up to the units' shard padding).
  EXPECT_NEAR(double(layer.reducescatter_bytes), double(def.reducescatter_bytes), 0.01 * double(def.reducescatter_bytes));
  // One unit for the whole encoder: all four layers' parameters gathered at once.
  EXPECT_GT(encoder.memory.peak_bytes, def.memory.peak_bytes);
  // Smaller units: less gathered at a time.
  EXPECT_LT(fine.memory.peak_bytes, def.memory.peak_bytes);
  EXPECT_NE(def.key, layer.key);
  // Three times the collectives, each with its fixed latency: a slower step.
  const auto engine = make_engine("analytical", hw);
  EXPECT_GT(engine->run(fine.program, nullptr).device_time_s, engine->run(def.program, nullptr).device_time_s);
}

}  // namespace
}  // namespace tpusim::compiler
