#include "config/suggest.h"

#include <algorithm>
#include <cctype>

namespace tpusim::config {

size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

namespace {
size_t common_prefix(std::string_view a, std::string_view b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && std::tolower(a[i]) == std::tolower(b[i])) ++i;
  return i;
}
}  // namespace

std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& candidates) {
  // A typo changes about one character in three; shorter words allow one edit.
  const size_t max_edits = std::max<size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  size_t best_d = max_edits + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (best) return best;
  // Units live in key names, so "bandwidth" or "size_gb" for "bandwidth_gbyte_per_s" / "size_gib" are
  // common: accept a shared prefix covering most of the word.
  size_t best_p = 0;
  for (const auto& c : candidates) {
    const size_t p = common_prefix(word, c);
    if (p >= 4 && 2 * p >= word.size() && p > best_p) best_p = p, best = c;
  }
  return best;
}

std::string suggest(std::string_view word, const std::vector<std::string>& candidates, std::string_view label) {
  if (auto c = closest(word, candidates)) return "did you mean '" + *c + "'?";
  return std::string(label) + ": " + join(candidates);
}

std::string suggest_with_aliases(std::string_view word, const std::vector<std::string>& candidates,
                                 const std::map<std::string, std::string>& aliases, std::string_view label) {
  std::vector<std::string> all = candidates;
  for (const auto& [name, what] : aliases)
    if (std::find(all.begin(), all.end(), name) == all.end()) all.push_back(name);
  const auto c = closest(word, all);
  if (!c) return std::string(label) + ": " + join(candidates);  // the aliases are too many to list
  const auto a = aliases.find(*c);
  const bool native = std::find(candidates.begin(), candidates.end(), *c) != candidates.end();
  return "did you mean '" + *c + "'" + (a != aliases.end() && !native ? " (" + a->second + ")" : "") + "?";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += sep;
    s += items[i];
  }
  return s;
}

}  // namespace tpusim::config
