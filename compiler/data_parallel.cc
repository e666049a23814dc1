#include "compiler/data_parallel.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/collectives.h"
#include "compiler/fusion.h"
#include "compiler/lowering.h"
#include "compiler/program_builder.h"
#include "compiler/replicas.h"
#include "sim/hw/resolved_hw.h"

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

// Replicas sharing one chip (and its CMEM): the most ring members on any chip.
uint32_t replicas_per_chip(const std::vector<CoreId>& ring) {
  std::map<uint32_t, uint32_t> on;
  uint32_t most = 0;
  for (const CoreId& c : ring) most = std::max(most, ++on[c.chip]);
  return most;
}

// Megacore (chip.megacore): core j of a device updates the parameters of the 1/c share of the
// reduced gradient the device all-reduce leaves it (collectives_device.cc), so every core runs the
// optimizer kernels on 1/c of each tensor. They are lowered on a view of the graph in which every
// value those kernels compute or read has its first dimension longer than 1 cut to 1/c (rounded
// up): same node ids, so the fusion plan and the CMEM placement apply unchanged.
models::Graph share_view(const models::Graph& g, const std::vector<const Fusion*>& kernels, uint32_t c) {
  std::vector<bool> cut(g.nodes().size(), false);
  for (const Fusion* f : kernels) {
    for (int x : f->nodes) cut[size_t(x)] = true;
    for (int x : f->inputs) cut[size_t(x)] = true;
    for (int x : kernel_outputs(*f)) cut[size_t(x)] = true;
  }
  models::Graph v;
  for (const models::Node& n : g.nodes()) {
    models::Node m = n;
    if (cut[size_t(n.id)])
      for (int64_t& d : m.shape)
        if (d > 1) {
          d = (d + c - 1) / c;
          break;
        }
    v.append_copy(std::move(m));
  }
  for (int o : g.outputs()) v.mark_output(o);
  return v;
}

}  // namespace

CacheKey step_cache_key(const DataParallelStep& step) {
  std::vector<int> donated_inputs;
  for (const auto& [out, in] : step.donated) donated_inputs.push_back(in);
  return graph_cache_key(*step.graph, donated_inputs);
}

std::vector<std::vector<int>> gradient_buckets(const models::Graph& g, std::vector<int> grads,
                                              const std::vector<size_t>& producer, uint64_t bucket_bytes) {
  // In the order the kernels produce them (the fusion plan's kernel order, which is a topological
  // order but not that of the node ids: a bias gradient may come kernels later than its weight's).
  std::sort(grads.begin(), grads.end(), [&](int a, int b) {
    return std::pair(producer[size_t(a)], a) < std::pair(producer[size_t(b)], b);
  });
  std::vector<std::vector<int>> buckets;
  uint64_t filled = 0;
  for (int gr : grads) {
    const uint64_t bytes = stored_bytes(g, gr);
    if (buckets.empty() || filled + bytes > bucket_bytes) {
      buckets.push_back({});
      filled = 0;
    }
    buckets.back().push_back(gr);
    filled += bytes;
  }
  return buckets;
}

models::Graph graph_with_allreduces(const DataParallelStep& step, uint32_t replicas) {
  const models::Graph& g = *step.graph;
  const FusionPlan plan = plan_fusions(g);
  std::vector<size_t> producer(g.nodes().size(), plan.fusions.empty() ? 0 : plan.fusions.size() - 1);
  for (size_t k = 0; k < plan.fusions.size(); ++k)
    for (int r : kernel_outputs(plan.fusions[k])) producer[size_t(r)] = k;
  // What reads a gradient (transitively) runs after the all-reduces: the optimizer update.
  const std::set<int> grads(step.grads.begin(), step.grads.end());
  std::vector<bool> after(g.nodes().size(), false);
  for (const auto& node : g.nodes())  // node ids are topological
    for (int in : node.inputs)
      if (grads.count(in) || after[size_t(in)]) after[size_t(node.id)] = true;
  models::Graph out;
  std::vector<int> id(g.nodes().size(), -1);
  std::map<int, int> reduced;  // gradient -> its all-reduce
  auto copy = [&](const models::Node& x) {
    models::Node c = x;
    for (int& in : c.inputs) in = reduced.count(in) ? reduced[in] : id[size_t(in)];
    id[size_t(x.id)] = out.append_copy(std::move(c));
  };
  for (const auto& node : g.nodes())
    if (!after[size_t(node.id)]) copy(node);
  if (replicas > 1) {
    const auto buckets = gradient_buckets(g, step.grads, producer, step.allreduce_bucket_bytes);
    for (size_t b = 0; b < buckets.size(); ++b) {
      models::CollectiveAttrs a;
      a.op = models::CollectiveOp::kAllReduce;
      a.replicas = replicas;
      a.async = step.overlap_allreduce;
      a.combine = buckets[b].size() > 1 ? int64_t(b) : -1;
      for (int gr : buckets[b]) reduced[gr] = out.collective(id[size_t(gr)], a, "gradient_all_reduce." + std::to_string(b));
    }
  }
  for (const auto& node : g.nodes())
    if (after[size_t(node.id)]) copy(node);
  for (int o : g.outputs()) out.mark_output(id[size_t(o)]);
  return out;
}

CompiledStep compile_data_parallel_step(const DataParallelStep& step, const HwConfig& hw, const std::string& name,
                                        uint32_t replicas) {
  const models::Graph& g = *step.graph;
  CompiledStep out;
  out.key = step_cache_key(step);
  out.hlo_ops = g.nodes().size();

  std::vector<CoreId> ring = ring_order(hw);
  const uint32_t cmem_sharers = replicas_per_chip(ring);  // of the whole slice, so that a 1-replica
                                                           // compile places what each replica does
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
  // Core 0's stream is compiled whole; the other replicas record only their collective sections.
  ReplicaStreams streams(prog, ring, hw.chip.core.vmem.size_bytes());
  ProgramBuilder& b0 = streams.main();

  // Infeed: the next batch's inputs cross PCIe while this step computes, contending for the
  // chip's PCIe link and HBM.
  out.infeed_bytes = emit_next_batch_infeed(b0, g, step.prefetch_next_batch);

  // CMEM: every replica on a chip places the same buffers in its share of the chip's CMEM; the
  // gradients stay in HBM, where the all-reduce's transfers read and write them.
  out.memory = plan_memory(g, plan, [&](int id) { return role_kind(g.node(id)); }, step.donated);
  place_in_cmem(out.memory, g.nodes().size(), hw.chip, cmem_sharers, /*inputs_in_hbm=*/true, step.grads);
  // Megacore: the device's memory is the chip's; parameters, optimizer state and the combined
  // gradients are stored once in its shared HBM, and so is what the optimizer's kernels write
  // (each core its share of every tensor: e.g. the state the first step creates); the rest (the
  // activations of each core's half of the batch, its inputs and temporaries) once per core.
  const uint32_t device_cores = cores_per_device(hw.chip);
  if (device_cores > 1) {
    std::set<int> once(step.grads.begin(), step.grads.end());
    for (const Fusion* f : post) {
      for (int x : kernel_outputs(*f)) once.insert(x);
    }
    plan_device_memory(out.memory, device_cores, [&](const HbmBuffer& b) {
      return b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState || once.count(b.node) > 0;
    });
  }
  // Lowering a program that cannot be allocated would only spend time and memory (a 10^12-parameter
  // custom model lowers to billions of instructions).
  if (out.memory.peak_bytes > resolve_hw(hw).device_hbm_bytes) {
    out.lowered = false;
    prog.cores.clear();
    return out;
  }
  LowerContext cx{g, plan, hw, b0};
  cx.cmem_node = &out.memory.cmem_node;
  // The optimizer's kernels on a megacore: each core updates its share of every parameter.
  const bool shared_update = device_cores > 1 && !step.grads.empty() && !post.empty();
  const models::Graph view = shared_update ? share_view(g, post, device_cores) : models::Graph{};
  LowerContext pcx{shared_update ? view : g, plan, hw, b0};
  pcx.cmem_node = &out.memory.cmem_node;
  auto lower = [&](const Fusion& f) { lower_fusion(cx, f); };
  // XLA's all-reduce combiner: the gradients, in the order the backward pass produces them, are
  // combined into all-reduces of at most `allreduce_bucket_bytes` (a gradient larger than that
  // is one all-reduce); the algorithm is chosen per combined tensor (choose_algorithm).
  struct Bucket {
    uint64_t bytes = 0;
    size_t ready = 0;  // overlap: the position in `pre` of the last kernel producing its gradients
  };
  std::vector<Bucket> buckets;
  std::vector<size_t> producer(g.nodes().size(), pre.empty() ? 0 : pre.size() - 1);
  for (size_t k = 0; k < pre.size(); ++k) {
    for (int r : kernel_outputs(*pre[k])) producer[size_t(r)] = k;
  }
  if (!step.grads.empty() && n > 1) {
    for (const std::vector<int>& combined : gradient_buckets(g, step.grads, producer, step.allreduce_bucket_bytes)) {
      buckets.push_back({});
      for (int gr : combined) {
        out.allreduce_bytes += stored_bytes(g, gr);
        buckets.back().bytes += stored_bytes(g, gr);
        buckets.back().ready = std::max(buckets.back().ready, producer[size_t(gr)]);
      }
    }
    for (size_t k = 1; k < buckets.size(); ++k)  // they run one after another
      buckets[k].ready = std::max(buckets[k].ready, buckets[k - 1].ready);
  }
  const bool overlap = step.overlap_allreduce && !buckets.empty();
  CollectiveOptions opt;
  opt.piece_bytes = step.allreduce_piece_bytes;
  opt.algorithm = step.allreduce_algorithm;
  opt.background = overlap;
  opt.per_device = hw.chip.megacore;  // megacore: the device all-reduce (collectives_device.cc)
  std::vector<std::vector<uint32_t>> done(n);
  auto record = [&](size_t k, const CollectiveResult& r, const std::string& after) {
    opt.tag_base += r.tags_used;
    for (uint32_t i = 0; i < n; ++i) done[i].push_back(r.done[i]);
    out.allreduces.push_back({buckets[k].bytes, r.algorithm, after, overlap});
  };
  // The optimizer waits for every combined all-reduce (one instruction, so that the next kernel
  // depends on all of them) and for the backward pass.
  auto emit_join = [&](std::vector<ProgramBuilder*>& bptr, const isa::Deps& backward) {
    for (uint32_t i = 0; i < n; ++i) {
      isa::Deps deps(done[i].begin(), done[i].end());
      for (uint32_t x : backward)
        if (std::find(deps.begin(), deps.end(), x) == deps.end()) deps.push_back(x);
      bptr[i]->begin_kernel("all-reduce", isa::Collective::kAllReduce);
      bptr[i]->vpu({}, deps, "gradients reduced");
      bptr[i]->end_kernel();
    }
  };

  size_t next = 0;  // with overlap: the next combined all-reduce to start
  for (size_t k = 0; k < pre.size(); ++k) {
    lower(*pre[k]);
    for (; overlap && next < buckets.size() && buckets[next].ready == k; ++next) {
      // Started by this kernel's end, in the background, one at a time (they share the staging
      // VMEM and the background queues); the kernels after it run with its staging VMEM reserved.
      const uint32_t previous = done[0].empty() ? kNoInstr : done[0].back();
      record(next, emit_collective_after_kernel(streams, ring, hw, CollectiveKind::kAllReduce, buckets[next].bytes, opt, previous),
             pre[k]->name);
      b0.reserve_vmem_top(staging_bytes(opt.piece_bytes));
    }
  }
  if (!buckets.empty()) {
    const isa::Deps backward = b0.entry_deps();
    std::vector<ProgramBuilder*> bptr = streams.begin_section();
    const std::string last = pre.empty() ? "" : pre.back()->name;
    // Without overlap every combined all-reduce waits for the end of the backward pass.
    const std::vector<std::vector<uint32_t>> wait(n, std::vector<uint32_t>(backward.begin(), backward.end()));
    for (size_t k = 0; !overlap && k < buckets.size(); ++k)
      record(k, emit_collective(CollectiveKind::kAllReduce, bptr, ring, hw, buckets[k].bytes, wait, opt), last);
    emit_join(bptr, backward);
    streams.end_section();
    b0.reserve_vmem_top(0);
  }
  for (const Fusion* f : post) lower_fusion(pcx, *f);
  streams.finish();

  prog.info.flops = cx.flops + pcx.flops;
  prog.info.hbm_bytes = cx.hbm_bytes + pcx.hbm_bytes;
  prog.info.cmem_bytes = cx.cmem_bytes + pcx.cmem_bytes;
  prog.info.cmem_resident_bytes = out.memory.cmem_peak_bytes;
  prog.info.fusions = out.kernels;
  uint64_t min_bytes = 0;
  for (const auto& node : g.nodes())
    if (node.kind == models::OpKind::kParameter) min_bytes += stored_bytes(g, node.id);
  for (int o : g.outputs()) min_bytes += stored_bytes(g, o);
  prog.info.hbm_bytes_min = min_bytes;
  return out;
}

}  // namespace tpusim::compiler
