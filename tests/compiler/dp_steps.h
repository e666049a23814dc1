// Data-parallel BERT training steps for compiler tests (data_parallel_test, overlap_test).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/step/data_parallel.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"

namespace tpusim::compiler::test {

inline HwConfig v3_8() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }

// The graph and the compiler's view of it (dp points into s).
struct Step {
  models::BertTrainingStep s;
  DataParallelStep dp;
};

inline Step make_step(const std::string& preset, int64_t batch, int64_t seq, models::DType dtype = models::DType::kF32) {
  models::BertGraphOptions o;
  o.batch = batch;
  o.seq = seq;
  o.dtype = dtype;
  models::OptimizerConfig opt;
  opt.state_dtype = dtype;
  Step st{models::build_training_step(models::find_preset(preset), o, opt), {}};
  st.dp.graph = &st.s.model.graph;
  shard_data_parallel(st.s.model.graph, st.s.grads.grads);
  for (auto [in, out] : st.s.optimizer.donated) st.dp.donated[out] = in;
  return st;
}

// The step's combined gradient all-reduces, in program order.
inline std::vector<GraphCollective> allreduces(const CompiledStep& c) {
  std::vector<GraphCollective> r;
  for (const GraphCollective& x : c.collectives)
    if (x.op == models::CollectiveOp::kAllReduce) r.push_back(x);
  return r;
}

}  // namespace tpusim::compiler::test
