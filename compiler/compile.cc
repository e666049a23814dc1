#include "compiler/compile.h"

#include <cmath>
#include <optional>
#include <vector>

#include "base/config_error.h"
#include "compiler/collectives/graph_collectives.h"
#include "compiler/lower/kernel_key.h"
#include "compiler/lower/lowering.h"
#include "compiler/plan/fusion.h"
#include "compiler/plan/layout.h"
#include "compiler/plan/memory_plan.h"
#include "models/kernels.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim::compiler {

namespace {

// A dot or vector kernel: replayed from the builder's record of an equal one
// (compiler/lower/kernel_cache.h), else lowered and recorded.
void lower_kernel(LowerContext& cx, const Fusion& f) {
  ProgramBuilder& pb = cx.pb;
  std::optional<KernelShape> shape;
  if (pb.can_record() && pb.caches_kernels()) shape = kernel_shape(cx, f);
  if (shape) {
    if (const KernelRecord* r = pb.kernel_cache().find(shape->key)) {
      std::vector<isa::Label> labels;
      labels.reserve(r->labels.size());
      for (const KernelRecord::LabelUse& u : r->labels)
        labels.emplace_back(f.name + ":" + u.prefix + (u.node >= 0 ? cx.graph.node(shape->nodes[size_t(u.node)]).name : u.what));
      pb.replay(*r, f.name, labels);
      cx.flops += r->flops;
      cx.hbm_bytes += r->hbm_bytes;
      cx.cmem_bytes += r->cmem_bytes;
      return;
    }
  }
  const ProgramBuilder::Mark mark = pb.mark();
  const uint64_t flops = cx.flops, hbm_bytes = cx.hbm_bytes, cmem_bytes = cx.cmem_bytes;
  if (f.kind == FusionKind::kDot)
    lower_dot_kernel(cx, f);
  else if (f.kind == FusionKind::kAttention)
    lower_attention_kernel(cx, f);
  else
    lower_vector_kernel(cx, f);
  KernelRecord r;
  if (!shape || !pb.record_since(mark, r)) return;
  // A label with a prefix ("load ", "store ") names a node of the key, or is kReductionsLabel.
  for (KernelRecord::LabelUse& u : r.labels) {
    if (u.prefix.empty()) continue;
    for (size_t k = 0; k < shape->nodes.size() && u.node < 0; ++k)
      if (cx.graph.node(shape->nodes[k]).name == u.what) u.node = int(k);
    if (u.node < 0 && u.what != kReductionsLabel) return;  // named after something the key does not hold
  }
  r.flops = cx.flops - flops;
  r.hbm_bytes = cx.hbm_bytes - hbm_bytes;
  r.cmem_bytes = cx.cmem_bytes - cmem_bytes;
  pb.kernel_cache().add(std::move(shape->key), std::move(r));
}

}  // namespace

void lower_fusion(LowerContext& cx, const Fusion& f) {
  const uint64_t flops = cx.flops, hbm_bytes = cx.hbm_bytes;
  if (f.kind == FusionKind::kCollectiveDone)
    return;  // no work: where a core waits for its collective (compile_spmd_step)
  if (f.kind == FusionKind::kCollective)
    lower_collective_alone(cx, f);  // across replicas: compile_spmd_step
  else if (f.kind == FusionKind::kHostCopy)
    lower_host_copy(cx, f);
  else
    lower_kernel(cx, f);
  cx.pb.add_kernel_costs(cx.flops - flops, cx.hbm_bytes - hbm_bytes);
}

isa::Program compile_graph(const models::Graph& g, const HwConfig& hw, const std::string& name, uint32_t chip,
                           uint32_t core) {
  isa::Program prog;
  prog.name = name;
  prog.cores.emplace_back();
  prog.cores.back().chip = chip;
  prog.cores.back().core = core;
  ProgramBuilder pb(prog.cores.back(), hw.chip.core.vmem.size_bytes());
  FusionPlan plan = plan_fusions(g);
  // CMEM: this program runs alone on its chip, so it may use the chip's whole CMEM; its operands
  // are candidates (a standalone kernel's inputs are assumed resident where they were placed).
  MemoryPlan mp = plan_memory(g, plan, [&](int id) { return buffer_kind_of_role(g.node(id).role); });
  place_in_cmem(mp, g.nodes().size(), hw.chip, 1, /*inputs_in_hbm=*/false);
  LowerContext cx{g, plan, hw, pb};
  cx.cmem_node = &mp.cmem_node;
  for (const auto& f : plan.fusions) lower_fusion(cx, f);
  prog.info.flops = cx.flops;
  prog.info.hbm_bytes = cx.hbm_bytes;
  prog.info.cmem_bytes = cx.cmem_bytes;
  prog.info.cmem_resident_bytes = mp.cmem_peak_bytes;
  prog.info.fusions = uint32_t(plan.fusions.size());
  uint64_t min_bytes = 0;
  for (const auto& n : g.nodes())
    if (n.kind == models::OpKind::kParameter) min_bytes += stored_bytes(g, n.id);
  for (int o : g.outputs()) min_bytes += stored_bytes(g, o);
  prog.info.hbm_bytes_min = min_bytes;
  return prog;
}

models::Graph build_kernel_graph(const KernelRequest& req, const HwConfig& hw) {
  models::KernelArgs args{req.kernel, req.shape, req.dtype, req.precision};
  std::string shape_text;
  for (const auto& [k, v] : req.shape) shape_text += (shape_text.empty() ? "" : ", ") + k + ": " + std::to_string(v);
  models::Graph g;
  try {
    g = models::build_kernel(args);
  } catch (const std::length_error& e) {
    throw ConfigError({"", "shape", 0, "{" + shape_text + "}", std::string("is too large: ") + e.what(),
                       "use dimensions whose tensors fit in HBM"});
  }
  // Every tensor of a kernel is resident in the core's HBM.
  const uint64_t hbm = resolve_hw(hw).device_hbm_bytes;
  for (const auto& n : g.nodes()) {
    const uint64_t bytes = uint64_t(models::num_elements(n.shape)) * models::dtype_bytes(n.dtype);
    if (hbm > 0 && bytes > hbm)
      throw ConfigError({"", "shape", 0, "{" + shape_text + "}",
                         "is too large: tensor '" + n.name + "' needs " + std::to_string(bytes >> 20) + " MiB, more than the " +
                             std::to_string(hbm >> 20) + " MiB of HBM a core of TPU " + hw.chip.generation + " holds",
                         "use smaller dimensions"});
  }
  return g;
}

isa::Program compile_kernel(const KernelRequest& req, const HwConfig& hw) {
  const models::Graph g = build_kernel_graph(req, hw);
  std::string name = req.kernel;
  for (const auto& [k, v] : req.shape) name += "_" + k + std::to_string(v);
  return compile_graph(g, hw, name, req.chip, req.core);
}

IdealCycles ideal_cycles(const isa::Program& program, const HwConfig& hw) {
  const ResolvedHw r = resolve_hw(hw);
  IdealCycles c;
  c.compute_cycles = uint64_t(std::ceil(double(program.info.flops) / r.core_peak_flop_per_cycle));
  c.hbm_cycles = uint64_t(std::ceil(double(program.info.hbm_bytes_min) / r.hbm_core_peak_bytes_per_cycle));
  return c;
}

}  // namespace tpusim::compiler
