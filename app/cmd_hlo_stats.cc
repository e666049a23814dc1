// `tpusim hlo-stats FILE [--json] [--simulate [--hw NAME] [--spmd MODE]]`: parses an XLA HLO text
// module (compiler/hlo/, docs/hlo.md), prints its computations, opcode histogram and op statistics
// (dot/convolution flops, parameter/output bytes, what the import does not model), and with
// --simulate imports the ENTRY computation, lowers it for one core (a pre-partitioning module: one
// partition per core of num_partitions cores, as a kind: hlo run partitions it) and runs it on the
// analytical engine (device time and the op profile's top kernels). Exit 2 with file, line and
// column on bad input.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "base/config_error.h"
#include "compiler/compile.h"
#include "compiler/step/spmd_step.h"
#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_spmd.h"
#include "sim/engine/engine.h"
#include "workloads/loop/hlo_run.h"
#include "workloads/report/hlo_report.h"

namespace tpusim::app {
namespace {

struct HloStatsArgs {
  std::string file;
  bool json = false;
  bool simulate = false;
  std::string hw;  // --hw: file or built-in name; empty: the default
  std::string spmd = "auto";  // --spmd: hlo::spmd_mode_named
};

// How many op profile entries --simulate prints.
constexpr size_t kTopKernels = 10;

struct Simulated {
  double device_time_s = 0;
  uint64_t device_cycles = 0;
  OpProfile profile;  // grouped as the run summaries list it (op_group_name: "dot.12" -> "dot.*")
  size_t graph_nodes = 0;
  std::string hw_origin;
  hlo::SpmdReport spmd;
  int64_t cores = 1;
};

// A module SPMD partitioning applies to (a kind: hlo run's rule and `spmd` mode, hlo_spmd.h) runs one
// partition per core on num_partitions cores of --hw, its inserted collectives between them; any
// other on one core (its collectives there at no cost: docs/hlo.md, "Collectives").
Simulated simulate(const HloStatsArgs& a, const hlo::Module& m, const hlo::HloImport& imp) {
  RunArgs ra;
  ra.hw_file = a.hw;
  Simulated s;
  const HwConfig hw = load_hw(ra, {}, &s.hw_origin);
  hlo::SpmdResult part = hlo::spmd_partition(m, {*hlo::spmd_mode_named(a.spmd), 1});
  s.spmd = std::move(part.report);
  models::Graph graph;
  std::map<int, int> donated;
  if (!part.module) {
    graph = imp.graph;
    donated = imp.donated;
  } else {
    const uint32_t cores = hw.slice.chips() * hw.chip.cores;
    if (m.num_partitions > int64_t(cores))
      throw ConfigError({a.file, "num_partitions", 0, std::to_string(m.num_partitions),
                         fmt::format("is more partitions than the {} cores of {}: each partition runs on its own core",
                                     cores, hw.name),
                         "use a larger slice (--hw), or --spmd as_written to run the module as written on one core"});
    s.cores = m.num_partitions;
    hlo::ImportOptions io;
    io.replicas = m.num_partitions;
    hlo::HloImport pi = hlo::import_hlo(*part.module, io);
    graph = std::move(pi.graph);
    donated = std::move(pi.donated);
  }
  s.graph_nodes = graph.nodes().size();
  // One step of the step loop (workloads/loop/step_loop.h), as a kind: hlo run takes it; an
  // over-full program fails as that run's does (exit 3).
  std::vector<compiler::CoreId> cores = compiler::ring_order(hw);
  cores.resize(size_t(s.cores));
  ImportedStep source(hw, std::move(graph), std::move(donated), m.name, std::move(cores), imp.stats.parameter_bytes);
  LoopOptions o;
  o.engine = "analytical";
  LoopResult r;
  run_imported_steps(hw, source, uint32_t(s.cores), FrameworkKind::kJax, 1, "Run it on a chip with more HBM (--hw).", o, r);
  const ProgramRecord& p = r.programs.at(0);
  s.device_time_s = p.device_s;
  s.device_cycles = p.device_cycles;
  s.profile = group_op_profile(*p.op_profile);
  return s;
}

int hlo_stats(const HloStatsArgs& a) {
  const hlo::Module m = hlo::parse_hlo_file(a.file);
  // The unmodelled list comes from the import; without --simulate it is still run (cheap) so that
  // the statistics say what a simulation would approximate.
  const hlo::HloImport imp = hlo::import_hlo(m);
  std::optional<Simulated> sim;
  if (a.simulate) sim = simulate(a, m, imp);
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
      j["simulation"] = {{"hw", sim->hw_origin}, {"engine", "analytical"}, {"cores", sim->cores},
                         {"graph_nodes", sim->graph_nodes}, {"device_time_s", sim->device_time_s},
                         {"device_cycles", sim->device_cycles}, {"top_kernels", top},
                         {"spmd", hlo_spmd_json(sim->spmd, sim->spmd.partitioned ? imp.stats : hlo::HloStats{})}};
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
    std::cout << "\nsimulation (" << sim->hw_origin << ", analytical engine, "
              << (sim->cores == 1 ? std::string("one core") : "one partition per core of " + std::to_string(sim->cores))
              << ", " << sim->graph_nodes << " graph nodes)\n"
              << "  spmd         " << (sim->spmd.partitioned ? "partitioned: " : "not partitioned: ") << sim->spmd.reason;
    for (const auto& [op, c] : sim->spmd.collectives) std::cout << "; " << c.count << " " << op << " inserted";
    std::cout << "\n"
              << "  device time  " << std::setprecision(6) << sim->device_time_s * 1e6 << " us ("
              << sim->device_cycles << " cycles)\n"
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
  cmd->add_option("--spmd", args->spmd,
                  "SPMD partitioning for --simulate, as a kind: hlo workload's spmd: auto (a pre-partitioning module "
                  "runs one partition per core), partition, as_written (default auto)")
      ->check(CLI::IsMember({"auto", "partition", "as_written"}));
  return {cmd, [args] { return hlo_stats(*args); }};
}

}  // namespace tpusim::app
