// Hardware names by rule: every public slice of TPU v5e (`v5litepod-N`), v6e (`v6e-N`) and v5p
// (`v5p-N`, N TensorCores) is a built-in name, whether or not configs/hw/ ships a file for it. A
// shipped file wins; any other such name is generated from the family's template file (its chip, host
// machine and host cost model) with the slice's topology and hosts by the rules below, which follow
// the Google Cloud TPU documentation's slice tables ("TPU v5e", "TPU v6e", "TPU v5p" pages):
//   * v5e and v6e: N in {1, 4, 8, 16, 32, 64, 128, 256} chips, a 2D slice [1,1], [2,2], [2,4], [4,4],
//     [4,8], [8,8], [8,16], [16,16]; one host up to 8 chips, 8 chips per host beyond (the -8 file's
//     machine type); the torus closes only for the full 256-chip pod.
//   * v5p: N TensorCores = N/2 chips, N a multiple of 8 up to 12,288 (6,144 chips); 4 chips per host.
//     Below 64 chips [2,2,1], [2,2,2], [2,2,4], [2,4,4]; from 64 chips (a multiple of 64) the slice is
//     made of 4x4x4 cubes: the most cubic A x B x C (A <= B <= C, each a multiple of 4, the largest
//     dimension as small as possible) — 4x4x12 for v5p-384, 4x12x12 for v5p-1152, 16x16x24 for
//     v5p-12288 — and every ring closes (wraparound in all three dimensions).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim {

struct RuleSlice {
  std::string template_name;  // the shipped slice file whose chip and host it takes (configs/hw/NAME.yaml)
  std::vector<int64_t> dims;
  std::vector<bool> wraparound;
  int64_t hosts = 1, chips_per_host = 1;
};

// The slice `name` names by rule; nullopt for a name no rule covers.
std::optional<RuleSlice> slice_by_rule(std::string_view name);

// The rule names of the v5e and v6e slices and of the v5p slices of 2^k TensorCores (8 ... 8,192)
// and 12,288: what error messages and docs list (every multiple of 8 is a v5p name).
std::vector<std::string> rule_slice_names();

// The YAML text of the generated slice `name`: the template's text with its name, topology and
// hosts replaced. nullopt when `templ` lacks a line the rule replaces.
std::optional<std::string> rule_slice_yaml(const std::string& name, const RuleSlice& s, const std::string& templ);

}  // namespace tpusim
