// "Did you mean": the closest valid name to a misspelled one.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::config {

// Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps cost 1.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate that `word` is plausibly a typo of (small edit distance, or a long shared prefix such
// as "bandwidth" for "bandwidth_gbyte_per_s"); nullopt when none is close.
std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& candidates);

// "did you mean 'x'?" when a candidate is close, else "<label>: a, b, c".
std::string suggest(std::string_view word, const std::vector<std::string>& candidates,
                    std::string_view label = "valid keys");

// Like suggest(), when a key may also be written under other accepted names (`aliases`: name -> what
// it is, e.g. "Trainer's name for per_device_batch_size"): a typo of either kind finds its name.
std::string suggest_with_aliases(std::string_view word, const std::vector<std::string>& candidates,
                                 const std::map<std::string, std::string>& aliases, std::string_view label = "valid keys");

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace tpusim::config
