#include "compiler/step/fsdp_wrap.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "models/graph.h"
#include "models/model.h"

namespace tpusim::compiler {

namespace {

struct Module {
  std::string path, cls;
  std::vector<int> children;  // module indices, in order of first parameter
  std::vector<int> own;       // parameter nodes held directly
  uint64_t total = 0;         // parameter elements of the subtree
};

class Wrapper {
 public:
  Wrapper(const models::Graph& g, const std::vector<int>& params, const models::ModuleTree& tree) : g_(g), tree_(tree) {
    mods_.push_back({"", tree_.module_class(""), {}, {}, 0});
    index_[""] = 0;
    for (int p : params) {
      const std::string& name = g.node(p).name;
      const size_t dot = name.rfind('.');
      const int m = module(dot == std::string::npos ? "" : name.substr(0, dot));
      mods_[size_t(m)].own.push_back(p);
      for (int a = m; a >= 0; a = parent_[size_t(a)]) mods_[size_t(a)].total += uint64_t(models::num_elements(g.node(p).shape));
    }
    assigned_.assign(g.nodes().size(), false);
  }

  // transformer_auto_wrap_policy: every module of a listed class (post-order; the root is the
  // outer FSDP instance itself).
  void by_class(int m, const std::vector<std::string>& classes) {
    for (int c : mods_[size_t(m)].children) by_class(c, classes);
    if (m != 0 && std::find(classes.begin(), classes.end(), mods_[size_t(m)].cls) != classes.end()) unit(m);
  }

  // size_based_auto_wrap_policy (torch_xla wrap.py _recursive_wrap): recurse into a module of >= N
  // parameters; wrap it when what its wrapped children leave reaches N (never a ModuleList; the
  // root only wraps children). Returns the parameter elements wrapped in the subtree.
  uint64_t by_size(int m, uint64_t n) {
    const Module& mod = mods_[size_t(m)];
    if (mod.total < n) return 0;
    uint64_t wrapped = 0;
    for (int c : mod.children) wrapped += by_size(c, n);
    if (m != 0 && mod.total - wrapped >= n && mod.cls != "ModuleList") {
      unit(m);
      return mod.total;
    }
    return wrapped;
  }

  std::vector<FsdpWrapUnit> finish(const std::vector<int>& params) {
    FsdpWrapUnit root{"root", {}, true};
    for (int p : params)
      if (!assigned_[size_t(p)]) root.params.push_back(p);
    std::sort(units_.begin(), units_.end(), [](const FsdpWrapUnit& a, const FsdpWrapUnit& b) { return a.params[0] < b.params[0]; });
    if (!root.params.empty()) units_.push_back(std::move(root));
    return std::move(units_);
  }

 private:
  int module(const std::string& path) {
    if (auto it = index_.find(path); it != index_.end()) return it->second;
    const size_t dot = path.rfind('.');
    const int parent = module(dot == std::string::npos ? "" : path.substr(0, dot));
    const int m = int(mods_.size());
    mods_.push_back({path, tree_.module_class(path), {}, {}, 0});
    parent_.resize(mods_.size(), -1);
    parent_[size_t(m)] = parent;
    mods_[size_t(parent)].children.push_back(m);
    index_[path] = m;
    return m;
  }
  // The subtree's parameters that no wrapped descendant took.
  void collect(int m, std::vector<int>& out) {
    for (int p : mods_[size_t(m)].own)
      if (!assigned_[size_t(p)]) out.push_back(p), assigned_[size_t(p)] = true;
    for (int c : mods_[size_t(m)].children) collect(c, out);
  }
  void unit(int m) {
    FsdpWrapUnit u{mods_[size_t(m)].path, {}, false};
    collect(m, u.params);
    std::sort(u.params.begin(), u.params.end());
    if (!u.params.empty()) units_.push_back(std::move(u));
  }

  const models::Graph& g_;
  const models::ModuleTree& tree_;
  std::vector<Module> mods_;
  std::vector<int> parent_ = {-1};
  std::map<std::string, int> index_;
  std::vector<bool> assigned_;
  std::vector<FsdpWrapUnit> units_;
};

}  // namespace

std::vector<FsdpWrapUnit> fsdp_wrap_units(const models::Graph& g, const std::vector<int>& params,
                                          const FsdpWrapPolicy& policy, const models::ModuleTree& modules) {
  if (!policy.custom()) throw std::invalid_argument("fsdp_wrap_units: no wrapping policy given");
  Wrapper w(g, params, modules);
  if (!policy.layer_classes.empty()) w.by_class(0, policy.layer_classes);
  else w.by_size(0, policy.min_num_params);
  return w.finish(params);
}

}  // namespace tpusim::compiler
