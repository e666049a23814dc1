// A model family: its name, presets, heads, module-class table and graph builder, and the model of
// any family behind the model interface (TransformerModel). Each family's file defines its Family
// (models/bert.h, gpt2.h, ...); the registry (models/families.h) lists them.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/heads.h"
#include "models/model.h"
#include "models/model_arch.h"
#include "models/module_classes.h"

namespace tpusim::models {

struct Family {
  ModelFamily id = ModelFamily::kBert;
  std::string name{};                        // "bert", "gpt2", ...
  std::vector<std::string> organisations{};  // hub organisations its un-prefixed preset names moved to
  // By hub name, in the order `tpusim models` lists them (derived fields may be 0: model_presets()
  // fills them, with_derived_fields).
  std::vector<ModelArch> presets{};
  std::vector<Head> heads{};                 // the heads it is built with; the first is its default
  ModuleClassTable modules{};
  bool own_head_dim = false;  // head_dim is a field of its own (T5's d_kv), kept unless hidden or heads change
  uint64_t (*parameters)(const ModelArch&) = nullptr;  // closed-form count of the presets' counted_class
  // The forward graph with the loss (ModelGraph::modules left to the caller). Throws ConfigError for
  // a shape or architecture it cannot build. Empty for a family listed before its builder exists.
  std::function<ModelGraph(const ModelArch&, const HeadOptions&, const StepShape&)> build{};
};

// A model of any family behind the model interface: an architecture and its head, the module tree
// from its family's table, the graph from its family's builder.
class TransformerModel final : public Model {
 public:
  // `family` must be the architecture's. Throws ConfigError if the family has no such head or no builder.
  TransformerModel(const Family& family, ModelArch arch, HeadOptions head);
  std::string name() const override { return arch_.name; }
  const std::vector<std::string>& module_classes() const override { return family_->modules.classes(); }
  std::string module_class(const std::string& path) const override;
  ModelGraph build_forward(const StepShape& shape) const override;
  const ModelArch& arch() const { return arch_; }
  const HeadOptions& head() const { return head_; }

 private:
  ModelArch arch_;
  HeadOptions head_;
  const Family* family_;
};

// Elements of all trainable parameters of a graph (tied weights are one parameter, counted once).
uint64_t count_parameters(const Graph& g);

}  // namespace tpusim::models
