// An imported module's program as a step source (step_source.h): compiled once, on construction, by
// the SPMD step compiler for the cores that run it; every step variant the loop asks for is that one
// program (its shapes are the module's).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "models/graph.h"
#include "sim/hw/hw_config.h"
#include "workloads/loop/step_source.h"

namespace tpusim {

class ImportedStep : public StepSource {
 public:
  // `graph`: one replica's program (the import's, partitioned when the module was), `donated` its
  // input_output_alias (hlo::HloImport::donated); `name`: the module's; `parameter_bytes`: a
  // replica's inputs (what the first execution uploads).
  ImportedStep(const HwConfig& hw, models::Graph graph, std::map<int, int> donated, const std::string& name,
               std::vector<compiler::CoreId> cores, uint64_t parameter_bytes);

  const StepInfo& info(const StepVariant&) override { return info_; }
  BuiltStep& get(const StepVariant&) override { return built_; }
  double compile_wall_s() const override { return compile_wall_s_; }
  bool fixed_shapes() const override { return true; }

 private:
  StepInfo info_;
  BuiltStep built_;
  double compile_wall_s_ = 0;
};

}  // namespace tpusim
