// A training workload's step graph for the HLO export and round-trip tests: the workload YAML of
// configs/workloads with overrides, built for its hardware (workloads/loop/step_builder.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config/hw_loader.h"
#include "config/override.h"
#include "workloads/loop/step_builder.h"

namespace tpusim::hlo::testing {

struct Step {
  WorkloadConfig w;
  HwConfig hw;
  std::unique_ptr<models::Model> model;
  std::unique_ptr<StepGraph> sg;
};

inline std::unique_ptr<Step> step(const std::string& workload, const std::string& hw,
                                  const std::vector<std::string>& sets, GraphKind kind = GraphKind::kTrain) {
  const std::string configs = std::string(TPUSIM_SOURCE_DIR) + "/configs/";
  auto s = std::make_unique<Step>();
  std::vector<Override> ovs;
  for (const std::string& o : sets) ovs.push_back(parse_override(o));
  s->w = load_workload_config(configs + "workloads/" + workload + ".yaml", ovs);
  s->hw = load_hw_config(configs + "hw/" + hw + ".yaml");
  s->model = make_model(s->w.training());
  const TrainingWorkload& t = s->w.training();
  StepVariant v{kind, variant_batch(t, s->hw, t.per_device_batch_size), image_tokens(t) ? image_tokens(t) : t.max_length};
  if (t.task == Task::kSeq2seq) v.target = t.max_target_length;
  s->sg = build_step_graph(*s->model, t, s->hw, v);
  return s;
}

}  // namespace tpusim::hlo::testing
