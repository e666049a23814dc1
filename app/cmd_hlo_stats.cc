// `tpusim hlo-stats FILE [--json] [--simulate [--hw NAME]]`: parses an XLA HLO text module
// (compiler/hlo/, docs/hlo.md), prints its computations, opcode histogram and op statistics
// (dot/convolution flops, parameter/output bytes, what the import does not model), and with
// --simulate imports the ENTRY computation, lowers it for one core and runs it on the analytical
// engine (device time and the op profile's top kernels). Exit 2 with file, line and column on bad input.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "compiler/compile.h"
#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_parser.h"
#include "sim/engine/engine.h"
#include "workloads/report/hlo_report.h"

namespace tpusim::app {
namespace {

struct HloStatsArgs {
  std::string file;
  bool json = false;
  bool simulate = false;
  std::string hw;  // --hw: file or built-in name; empty: the default
};

// How many op profile entries --simulate prints.
constexpr size_t kTopKernels = 10;

struct Simulated {
  RunResult run;
  OpProfile profile;  // grouped as the run summaries list it (op_group_name: "dot.12" -> "dot.*")
  size_t graph_nodes = 0;
  std::string hw_origin;
};

Simulated simulate(const HloStatsArgs& a, const hlo::HloImport& imp, const std::string& name) {
  RunArgs ra;
  ra.hw_file = a.hw;
  Simulated s;
  const HwConfig hw = load_hw(ra, {}, &s.hw_origin);
  const isa::Program p = compiler::compile_graph(imp.graph, hw, name, 0, 0);
  s.run = make_engine("analytical", hw)->run(p, nullptr);
  s.profile = group_op_profile(s.run.op_profile);
  s.graph_nodes = imp.graph.nodes().size();
  return s;
}

int hlo_stats(const HloStatsArgs& a) {
  const hlo::Module m = hlo::parse_hlo_file(a.file);
  // The unmodelled list comes from the import; without --simulate it is still run (cheap) so that
  // the statistics say what a simulation would approximate.
  const hlo::HloImport imp = hlo::import_hlo(m);
  std::optional<Simulated> sim;
  if (a.simulate) sim = simulate(a, imp, m.name);
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
    j["hlo"] = hlo_stats_json(imp.stats);
    if (sim) {
      nlohmann::ordered_json top = nlohmann::ordered_json::array();
      const std::vector<OpProfileEntry>& e = sim->profile.entries;
      for (size_t i = 0; i < std::min(e.size(), kTopKernels); ++i)
        top.push_back({{"name", e[i].name}, {"count", e[i].count}, {"time_s", e[i].time_s}, {"flops", e[i].flops},
                       {"hbm_bytes", e[i].hbm_bytes}, {"bound", op_bound_name(e[i].bound)}});
      j["simulation"] = {{"hw", sim->hw_origin}, {"engine", "analytical"}, {"graph_nodes", sim->graph_nodes},
                         {"device_time_s", sim->run.device_time_s}, {"device_cycles", sim->run.device_cycles},
                         {"top_kernels", top}};
    }
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
  const hlo::HloStats& st = imp.stats;
  std::cout << "\nstatistics\n"
            << "  dot flops          " << st.dot_flops << "\n"
            << "  convolution flops  " << st.convolution_flops << "\n"
            << "  parameter bytes    " << st.parameter_bytes << "\n"
            << "  output bytes       " << st.output_bytes << "\n"
            << "  unmodelled         " << st.unmodelled.size() << "\n";
  for (const hlo::Unmodelled& u : st.unmodelled)
    std::cout << "    line " << u.line << "  " << u.instruction << " (" << u.opcode << "): " << u.reason << "\n";
  if (sim) {
    std::cout << "\nsimulation (" << sim->hw_origin << ", analytical engine, one core, " << sim->graph_nodes
              << " graph nodes)\n"
              << "  device time  " << std::setprecision(6) << sim->run.device_time_s * 1e6 << " us ("
              << sim->run.device_cycles << " cycles)\n"
              << "  top kernels\n";
    const std::vector<OpProfileEntry>& e = sim->profile.entries;
    for (size_t i = 0; i < std::min(e.size(), kTopKernels); ++i)
      std::cout << "    " << std::left << std::setw(40) << e[i].name << std::right << std::setw(12)
                << e[i].time_s * 1e6 << " us  x" << e[i].count << "  " << op_bound_name(e[i].bound) << "\n";
  }
  return 0;
}

}  // namespace

Subcommand add_hlo_stats_command(CLI::App& cli) {
  auto args = std::make_shared<HloStatsArgs>();
  CLI::App* cmd = cli.add_subcommand(
      "hlo-stats", "Parse an XLA HLO text module and print its computations, opcode histogram and op statistics; "
                   "--simulate runs its ENTRY computation on one core (docs/hlo.md)");
  cmd->add_option("FILE", args->file, "HLO text (e.g. an XLA --xla_dump_hlo_as_text dump)")->required();
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  cmd->add_flag("--simulate", args->simulate,
                "Import the ENTRY computation, compile it for one core and run it on the analytical engine");
  cmd->add_option("--hw", args->hw, "Hardware YAML or built-in name for --simulate (default v3-8)")->type_name("FILE|NAME");
  return {cmd, [args] { return hlo_stats(*args); }};
}

}  // namespace tpusim::app
