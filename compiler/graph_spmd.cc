#include "compiler/graph_spmd.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/fusion.h"
#include "compiler/lowering.h"
#include "compiler/memory_plan.h"
#include "compiler/program_builder.h"
#include "compiler/replicas.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim::compiler {

SpmdProgram compile_graph_spmd(const models::Graph& g, const HwConfig& hw, const std::string& name,
                               const std::vector<CoreId>& cores, const SpmdOptions& options) {
  if (cores.empty()) throw std::invalid_argument("compile_graph_spmd: no cores");
  std::set<std::pair<uint32_t, uint32_t>> seen;
  std::map<uint32_t, uint32_t> on_chip;
  uint32_t sharers = 0;  // the most of `cores` on one chip: they share its CMEM
  for (const CoreId& c : cores) {
    if (!seen.insert({c.chip, c.core}).second)
      throw std::invalid_argument("compile_graph_spmd: core " + std::to_string(c.chip) + "." +
                                  std::to_string(c.core) + " listed twice");
    sharers = std::max(sharers, ++on_chip[c.chip]);
  }
  SpmdProgram out;
  isa::Program& prog = out.program;
  prog.name = name;
  ReplicaStreams streams(prog, cores, hw.chip.core.vmem.size_bytes());
  ProgramBuilder& b0 = streams.main();
  FusionPlan plan = plan_fusions(g);
  out.kernels = uint32_t(plan.fusions.size());
  // The module's inputs are where the framework's runtime put them (HBM), as for a training step.
  MemoryPlan mp = plan_memory(g, plan, [&](int id) { return buffer_kind_of_role(g.node(id).role); });
  out.memory = mp;
  if (cores_per_device(hw.chip) > 1) plan_device_memory(out.memory, uint32_t(sharers), {});
  // Lowering a program that cannot be allocated would only spend time (as a training step's).
  if (out.memory.peak_bytes > resolve_hw(hw).device_hbm_bytes) {
    out.lowered = false;
    return out;
  }
  // A collective's operand and result stay in HBM, where its transfers read and write them.
  std::vector<int> transferred;
  for (const auto& f : plan.fusions)
    if (f.kind == FusionKind::kCollective) {
      for (int x : kernel_outputs(f)) transferred.push_back(x);
      transferred.insert(transferred.end(), f.inputs.begin(), f.inputs.end());
    }
  place_in_cmem(mp, g.nodes().size(), hw.chip, sharers, /*inputs_in_hbm=*/true, transferred);
  LowerContext cx{g, plan, hw, b0};
  cx.cmem_node = &mp.cmem_node;
  CollectiveOptions copt;
  copt.piece_bytes = options.piece_bytes;
  copt.algorithm = options.algorithm;
  // Asynchronous collectives (XLA's -start/-done): per node, the instruction ending it; a kernel
  // reading one waits for it, the kernels in between run with its staging VMEM reserved.
  std::vector<uint32_t> async_done(g.nodes().size(), kNoInstr);
  uint32_t previous = kNoInstr;  // the last asynchronous collective: they run one at a time
  for (const auto& f : plan.fusions) {
    isa::Deps entry = b0.entry_deps();
    for (int in : f.inputs)
      if (async_done[size_t(in)] != kNoInstr && std::find(entry.begin(), entry.end(), async_done[size_t(in)]) == entry.end())
        entry.push_back(async_done[size_t(in)]);
    b0.set_entry_deps(entry);
    if (f.kind != FusionKind::kCollective) {
      lower_fusion(cx, f);
      continue;
    }
    out.collectives.push_back(emit_graph_collective(streams, cx, f, cores, copt, previous));
    const GraphCollective& c = out.collectives.back();
    // The emitters name the kernel after its kind; the op profile and trace show the instruction's
    // name (unique in the plan), as for every other kernel.
    if (!prog.cores[0].kernels.empty()) prog.cores[0].kernels.back().name = isa::Label(f.name);
    if (c.background && c.done != kNoInstr) {
      previous = c.done;
      for (int x : kernel_outputs(f)) async_done[size_t(x)] = c.done;
      b0.reserve_vmem_top(staging_bytes(copt.piece_bytes));
    }
  }
  streams.finish();
  prog.info.flops = cx.flops;
  prog.info.hbm_bytes = cx.hbm_bytes;
  prog.info.cmem_bytes = cx.cmem_bytes;
  prog.info.cmem_resident_bytes = mp.cmem_peak_bytes;
  prog.info.fusions = out.kernels;
  return out;
}

}  // namespace tpusim::compiler
