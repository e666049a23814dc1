// The miniature Llama the LLM-wing tests vary (meshes, remat policies, quantization): 2 layers,
// hidden 256, 8 query heads of 32 and 4 key/value heads, MLP 512, vocabulary 1024, 256 tokens, 2
// sequences per device, bf16, framework jax, 2 steps, on a v6e-8 unless the test passes another.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config/hw_loader.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/step_builder.h"

namespace tpusim::test {

// `overrides`: --set style (path, value), applied after `extra`.
inline WorkloadConfig tiny_decoder(const std::string& extra, const std::vector<Override>& overrides = {}) {
  return load_workload_config_text(
      "kind: training\nhw: v6e-8\nmodel: meta-llama/Llama-2-7b-hf\ntask: causal_lm\n"
      "model_config: {layers: 2, hidden: 256, heads: 8, kv_heads: 4, intermediate: 512, vocab: 1024}\n"
      "max_length: 256\nper_device_batch_size: 2\ndataset: {train: 'fixed:256:64'}\nsteps: 2\nprecision: bf16\n"
      "framework: jax\n" + extra,
      "tiny_decoder.yaml", overrides);
}

inline HwConfig hw_named(const std::string& name) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml");
}

inline const HwConfig& v6e8() {
  static const HwConfig hw = hw_named("v6e-8");
  return hw;
}

// The train step's graph of `w` at its 2 x 256 shape on `hw` (the step builder's, before compiling).
inline std::unique_ptr<StepGraph> train_step_graph(const WorkloadConfig& w, const HwConfig& hw = v6e8()) {
  const std::unique_ptr<models::Model> model = make_model(w.training());
  StepVariant v;
  v.kind = GraphKind::kTrain;
  v.batch = variant_batch(w.training(), hw, 2);  // 2 per device: a tensor x sequence group's together
  v.seq = 256;
  return build_step_graph(*model, w.training(), hw, v);
}

}  // namespace tpusim::test
