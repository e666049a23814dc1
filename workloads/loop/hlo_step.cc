#include "workloads/loop/hlo_step.h"

#include <chrono>

#include "compiler/step/spmd_step.h"

namespace tpusim {

ImportedStep::ImportedStep(const HwConfig& hw, models::Graph graph, std::map<int, int> donated, const std::string& name,
                           std::vector<compiler::CoreId> cores, uint64_t parameter_bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t nodes = graph.nodes().size();
  compiler::SpmdStep step;
  std::vector<int> donated_inputs;
  for (const auto& [out, in] : donated) donated_inputs.push_back(in);
  step.key = compiler::graph_cache_key(graph, donated_inputs);
  step.donated = std::move(donated);
  step.graph = std::move(graph);
  step.cores = std::move(cores);
  built_.variant = {GraphKind::kImported, 0, 0};
  built_.name = name;
  built_.compiled = compiler::compile_spmd_step(step, hw, name);
  built_.memory = compiler::breakdown_at_peak(built_.compiled.memory);
  built_.graph_nodes = nodes;
  built_.parameter_bytes = parameter_bytes;
  info_.name = name;
  info_.key = built_.compiled.key;
  info_.graph_nodes = nodes;
  info_.hlo_ops = nodes;  // as a training step's: the graph's nodes
  info_.kernels = built_.compiled.kernels;
  info_.parameter_bytes = parameter_bytes;
  compile_wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tpusim
