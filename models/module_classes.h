// Which Hugging Face module class sits at each state_dict prefix of a model, as a table per family
// (models/family.h) instead of code: FSDP's wrapping policies read it (compiler/step/fsdp_wrap.h through
// ModuleTree, models/model.h), and `fsdp_wrap_layer_classes` is checked against its class list.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "models/heads.h"

namespace tpusim::models {

// A path pattern and the class of the modules it matches. Patterns are state_dict prefixes split at
// '.': "**" stands for any number of components (none included), '*' inside a component for any
// characters, e.g. "bert.encoder.layer.*" (each layer), "**.LayerNorm", "**.*_embeddings".
struct ModuleRule {
  std::string pattern;
  std::string cls;
};

class ModuleClassTable {
 public:
  ModuleClassTable() = default;
  // `roots`: the model's own class ("" path) per head, the first for any other head; `rules`: the
  // first that matches decides ("ModuleList" for containers); `otherwise`: every other module's class
  // (Linear, Conv1D).
  ModuleClassTable(std::vector<std::pair<Head, std::string>> roots, std::vector<ModuleRule> rules, std::string otherwise);

  std::string class_of(const std::string& path, Head head) const;
  // Every class a wrapping policy may name (fsdp_wrap_layer_classes): the roots', the rules' and
  // `otherwise`, in that order, once each.
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::vector<std::pair<Head, std::string>> roots_;
  std::vector<ModuleRule> rules_;
  std::string otherwise_;
  std::vector<std::string> classes_;
};

// Whether `path` matches `pattern` (above).
bool path_matches(const std::string& pattern, const std::string& path);

}  // namespace tpusim::models
