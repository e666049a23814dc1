#include "compiler/data_parallel.h"

#include <set>
#include <stdexcept>

#include "compiler/collectives.h"
#include "compiler/fusion.h"
#include "compiler/lowering.h"
#include "compiler/program_builder.h"

namespace tpusim::compiler {

namespace {

BufferKind role_kind(const models::Node& n) {
  switch (n.role) {
    case models::ParamRole::kTrainable: return BufferKind::kParameter;
    case models::ParamRole::kOptimizerState: return BufferKind::kOptimizerState;
    case models::ParamRole::kInput: return BufferKind::kInput;
  }
  return BufferKind::kInput;
}

// Appends core 0's instructions [from, end) and VMEM allocations [alloc_from, end) to the others:
// SPMD replicas run the same stream, and every collective emits the same instruction count per
// core, so indices (and therefore dependencies) are the same on every core.
void replicate_tail(std::vector<isa::CoreProgram>& cores, size_t from, size_t alloc_from) {
  const auto& src = cores[0];
  for (size_t c = 1; c < cores.size(); ++c) {
    if (cores[c].instrs.size() != from) throw std::logic_error("data parallel: replica streams diverged");
    cores[c].instrs.insert(cores[c].instrs.end(), src.instrs.begin() + long(from), src.instrs.end());
    cores[c].vmem_allocs.insert(cores[c].vmem_allocs.end(), src.vmem_allocs.begin() + long(alloc_from),
                                src.vmem_allocs.end());
  }
}

}  // namespace

CompiledStep compile_data_parallel_step(const DataParallelStep& step, const HwConfig& hw, const std::string& name,
                                        uint32_t replicas) {
  const models::Graph& g = *step.graph;
  CompiledStep out;
  std::vector<int> donated_inputs;
  for (const auto& [o, in] : step.donated) donated_inputs.push_back(in);
  out.key = graph_cache_key(g, donated_inputs);
  out.hlo_ops = g.nodes().size();

  std::vector<CoreId> ring = ring_order(hw);
  if (replicas > 0 && replicas < ring.size()) ring.resize(replicas);
  const uint32_t n = uint32_t(ring.size());

  FusionPlan plan = plan_fusions(g);
  out.kernels = uint32_t(plan.fusions.size());

  // Kernels that read (transitively) an all-reduced gradient run after the all-reduce.
  std::vector<bool> after(g.nodes().size(), false);
  std::set<int> grads(step.grads.begin(), step.grads.end());
  for (const auto& node : g.nodes())  // node ids are topological
    for (int in : node.inputs)
      if (grads.count(in) || after[in]) after[node.id] = true;
  std::vector<const Fusion*> pre, post;
  for (const auto& f : plan.fusions) (after[f.root] && !grads.count(f.root) ? post : pre).push_back(&f);

  isa::Program& prog = out.program;
  prog.name = name;
  prog.cores.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    prog.cores[i].chip = ring[i].chip;
    prog.cores[i].core = ring[i].core;
  }
  std::vector<std::unique_ptr<ProgramBuilder>> builders;
  std::vector<ProgramBuilder*> bptr;
  for (uint32_t i = 0; i < n; ++i) {
    builders.push_back(std::make_unique<ProgramBuilder>(prog.cores[i], hw.chip.core.vmem.size_bytes()));
    bptr.push_back(builders.back().get());
  }

  // Infeed: the next batch's inputs cross PCIe while this step computes (torch_xla's parallel
  // loader / tf.data prefetch), contending for the chip's PCIe link and HBM.
  for (const auto& node : g.nodes())
    if (node.kind == models::OpKind::kParameter && node.role == models::ParamRole::kInput && !node.shape.empty())
      out.infeed_bytes += stored_bytes(g, node.id);
  if (step.prefetch_next_batch && out.infeed_bytes > 0) {
    // Outside any kernel: nothing in this step waits for it, but the step ends only when it has.
    isa::Instr in;
    in.op = isa::Op::kHostLoad;
    in.bytes = out.infeed_bytes;
    in.label = "infeed:next batch";
    bptr[0]->emit(in);
  }

  LowerContext cx{g, plan, hw, *bptr[0]};
  auto lower = [&](const Fusion& f) {
    if (f.kind == FusionKind::kDot)
      lower_dot_kernel(cx, f);
    else
      lower_vector_kernel(cx, f);
  };
  for (const Fusion* f : pre) lower(*f);
  replicate_tail(prog.cores, 0, 0);

  if (!step.grads.empty() && n > 1) {
    for (int gr : step.grads) out.allreduce_bytes += stored_bytes(g, gr);
    AllReduceOptions opt;
    opt.piece_bytes = step.allreduce_piece_bytes;
    uint32_t tags = 0;
    // Every replica waits for the end of its own backward pass: the same instruction indices as
    // core 0's (the streams are identical so far), which only core 0's builder has tracked.
    const std::vector<std::vector<uint32_t>> wait(n, bptr[0]->entry_deps());
    emit_all_reduce(bptr, ring, out.allreduce_bytes, wait, opt, &tags);
  }
  const size_t tail_from = prog.cores[0].instrs.size();
  const size_t alloc_from = prog.cores[0].vmem_allocs.size();
  for (const Fusion* f : post) lower(*f);
  replicate_tail(prog.cores, tail_from, alloc_from);

  prog.info.flops = cx.flops;
  prog.info.hbm_bytes = cx.hbm_bytes;
  prog.info.fusions = out.kernels;
  uint64_t min_bytes = 0;
  for (const auto& node : g.nodes())
    if (node.kind == models::OpKind::kParameter) min_bytes += stored_bytes(g, node.id);
  for (int o : g.outputs()) min_bytes += stored_bytes(g, o);
  prog.info.hbm_bytes_min = min_bytes;

  out.memory = plan_memory(g, plan, [&](int id) { return role_kind(g.node(id)); }, step.donated);
  return out;
}

}  // namespace tpusim::compiler
