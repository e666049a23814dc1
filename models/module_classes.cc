#include "models/module_classes.h"

#include <algorithm>
#include <cstddef>

namespace tpusim::models {
namespace {

std::vector<std::string> components(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (size_t dot = s.find('.'); dot != std::string::npos; dot = s.find('.', start)) {
    out.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
  out.push_back(s.substr(start));
  return out;
}

// One component against a pattern component with '*' wildcards.
bool component_matches(const std::string& pattern, const std::string& s, size_t p = 0, size_t i = 0) {
  if (p == pattern.size()) return i == s.size();
  if (pattern[p] == '*') {
    for (size_t k = i; k <= s.size(); ++k)
      if (component_matches(pattern, s, p + 1, k)) return true;
    return false;
  }
  return i < s.size() && pattern[p] == s[i] && component_matches(pattern, s, p + 1, i + 1);
}

bool matches(const std::vector<std::string>& pattern, size_t p, const std::vector<std::string>& path, size_t i) {
  if (p == pattern.size()) return i == path.size();
  if (pattern[p] == "**") {
    for (size_t k = i; k <= path.size(); ++k)
      if (matches(pattern, p + 1, path, k)) return true;
    return false;
  }
  return i < path.size() && component_matches(pattern[p], path[i]) && matches(pattern, p + 1, path, i + 1);
}

}  // namespace

bool path_matches(const std::string& pattern, const std::string& path) {
  return matches(components(pattern), 0, components(path), 0);
}

ModuleClassTable::ModuleClassTable(std::vector<std::pair<Head, std::string>> roots, std::vector<ModuleRule> rules,
                                   std::string otherwise)
    : roots_(std::move(roots)), rules_(std::move(rules)), otherwise_(std::move(otherwise)) {
  auto add = [&](const std::string& c) {
    if (c != "ModuleList" && std::find(classes_.begin(), classes_.end(), c) == classes_.end()) classes_.push_back(c);
  };
  for (const auto& [head, cls] : roots_) add(cls);
  for (const ModuleRule& r : rules_) add(r.cls);
  add(otherwise_);
}

std::string ModuleClassTable::class_of(const std::string& path, Head head) const {
  if (path.empty()) {
    for (const auto& [h, cls] : roots_)
      if (h == head) return cls;
    return roots_.front().second;
  }
  for (const ModuleRule& r : rules_)
    if (path_matches(r.pattern, path)) return r.cls;
  return otherwise_;
}

}  // namespace tpusim::models
