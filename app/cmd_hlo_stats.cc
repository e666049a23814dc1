// `tpusim hlo-stats FILE [--json]`: parses an XLA HLO text module (compiler/hlo/, docs/hlo.md) and
// prints its computations and an opcode histogram. A developer's check of the parser until the
// import into the compiler's graph exists; exit 2 with file, line and column on bad input.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "compiler/hlo/hlo_parser.h"

namespace tpusim::app {
namespace {

struct HloStatsArgs {
  std::string file;
  bool json = false;
};

int hlo_stats(const HloStatsArgs& a) {
  const hlo::Module m = hlo::parse_hlo_file(a.file);
  std::map<std::string, int64_t> opcodes;  // sorted by name: deterministic output
  for (const hlo::Computation& c : m.computations)
    for (const hlo::Instruction& in : c.instructions) ++opcodes[in.opcode];
  // Histogram order: most frequent first, ties by name.
  std::vector<std::pair<std::string, int64_t>> hist(opcodes.begin(), opcodes.end());
  std::stable_sort(hist.begin(), hist.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  // Who calls each computation (opcode of the caller), for the listing.
  std::vector<std::vector<std::string>> callers(m.computations.size());
  for (const hlo::Computation& c : m.computations)
    for (const hlo::Instruction& in : c.instructions)
      for (int callee : in.called) callers[callee].push_back(in.opcode + " " + in.name);

  if (a.json) {
    nlohmann::ordered_json j;
    j["file"] = a.file;
    j["module"] = m.name;
    j["entry"] = m.entry_computation().name;
    j["replica_count"] = m.replica_count;
    j["num_partitions"] = m.num_partitions;
    j["instructions"] = m.instruction_count();
    nlohmann::ordered_json comps = nlohmann::ordered_json::array();
    for (size_t i = 0; i < m.computations.size(); ++i) {
      const hlo::Computation& c = m.computations[i];
      comps.push_back({{"name", c.name}, {"entry", c.is_entry}, {"instructions", c.instructions.size()},
                       {"root", c.root_instruction().name}, {"root_shape", c.root_instruction().shape.to_string()},
                       {"called_by", callers[i]}});
    }
    j["computations"] = comps;
    nlohmann::ordered_json ops = nlohmann::ordered_json::object();
    for (const auto& [op, n] : opcodes) ops[op] = n;
    j["opcodes"] = ops;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "module     " << m.name << " (" << a.file << ")\n"
            << "entry      " << m.entry_computation().name << "\n"
            << "replicas   " << m.replica_count << ", partitions " << m.num_partitions << "\n"
            << "size       " << m.computations.size() << " computations, " << m.instruction_count() << " instructions\n\n"
            << "computations\n";
  for (size_t i = 0; i < m.computations.size(); ++i) {
    const hlo::Computation& c = m.computations[i];
    std::cout << "  " << std::left << std::setw(32) << c.name << std::right << std::setw(8) << c.instructions.size()
              << " instr  " << (c.is_entry ? "ENTRY" : "");
    if (!callers[i].empty()) {
      std::cout << "called by " << callers[i][0];
      if (callers[i].size() > 1) std::cout << " and " << callers[i].size() - 1 << " more";
    }
    std::cout << "\n";
  }
  std::cout << "\nopcodes\n";
  for (const auto& [op, n] : hist) std::cout << "  " << std::left << std::setw(32) << op << std::right << std::setw(8) << n << "\n";
  return 0;
}

}  // namespace

Subcommand add_hlo_stats_command(CLI::App& cli) {
  auto args = std::make_shared<HloStatsArgs>();
  CLI::App* cmd = cli.add_subcommand(
      "hlo-stats", "Parse an XLA HLO text module and print its computations and opcode histogram (docs/hlo.md; "
                   "import and simulation of HLO are not available yet)");
  cmd->add_option("FILE", args->file, "HLO text (e.g. an XLA --xla_dump_hlo_as_text dump)")->required();
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  return {cmd, [args] { return hlo_stats(*args); }};
}

}  // namespace tpusim::app
