// A training workload's own steps as a step source (step_source.h): each distinct variant's graph
// (train / first optimizer step / accumulation micro-step / eval, at a padded shape) built once from
// the workload's model (step_builder.h), sharded for its parallel strategy and compiled once by the
// SPMD step compiler (compiler/step/).
#pragma once
#include <map>
#include <memory>
#include <utility>

#include "models/model.h"
#include "sim/hw/hw_config.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/step_builder.h"
#include "workloads/loop/step_source.h"

namespace tpusim {

class NativeSteps : public StepSource {
 public:
  NativeSteps(const HwConfig& hw, const TrainingWorkload& w);
  ~NativeSteps() override;

  const StepInfo& info(const StepVariant& v) override;  // builds the graph, does not lower it
  BuiltStep& get(const StepVariant& v) override;
  double compile_wall_s() const override { return compile_wall_s_; }

  uint64_t graph_builds() const { return graph_builds_; }  // step graphs built (once per variant)

 private:
  // The variant's graph, built once: what info() built (kept until get() takes it, one at a time),
  // else a new one.
  std::unique_ptr<StepGraph> take_graph(const StepVariant& v);
  const StepInfo& remember_info(const StepVariant& v, StepGraph& sg);

  const HwConfig& hw_;
  const TrainingWorkload& w_;
  std::unique_ptr<const models::Model> model_;  // the workload's model (make_model)
  std::map<StepVariant, StepInfo> info_;
  std::map<StepVariant, BuiltStep> built_;
  std::pair<StepVariant, std::unique_ptr<StepGraph>> spare_;  // built by info(), not yet by get()
  uint64_t graph_builds_ = 0;
  double compile_wall_s_ = 0;
};

}  // namespace tpusim
