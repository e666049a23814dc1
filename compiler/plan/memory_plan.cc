#include "compiler/plan/memory_plan.h"

#include <algorithm>
#include <set>

#include "compiler/plan/layout.h"

namespace tpusim::compiler {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::kParameter: return "parameter";
    case BufferKind::kOptimizerState: return "optimizer_state";
    case BufferKind::kInput: return "input";
    case BufferKind::kTemporary: return "temporary";
    case BufferKind::kOutput: return "output";
    case BufferKind::kGradient: return "gradient";
    case BufferKind::kGatheredParameter: return "gathered_parameter";
    case BufferKind::kHost: return "host_offloaded";
  }
  return "?";
}

BufferKind buffer_kind_of_role(models::ParamRole role) {
  switch (role) {
    case models::ParamRole::kTrainable: return BufferKind::kParameter;
    case models::ParamRole::kOptimizerState: return BufferKind::kOptimizerState;
    case models::ParamRole::kInput: return BufferKind::kInput;
  }
  return BufferKind::kInput;
}

namespace {

bool persistent(const HbmBuffer& b) { return b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState; }

// The persistent bytes, the peak over the kernel sequence of the other buffers (copies counted)
// and the buffers live at it, largest first; host-offloaded buffers apart (host_peak_bytes).
void sweep_peak(MemoryPlan& mp) {
  int kernels = 1;
  for (const HbmBuffer& b : mp.buffers) kernels = std::max(kernels, b.last_kernel + 1);
  std::vector<uint64_t> live(size_t(kernels), 0), host(size_t(kernels), 0);
  mp.persistent_bytes = 0;
  for (const HbmBuffer& b : mp.buffers) {
    const uint64_t bytes = b.bytes * b.copies;
    if (persistent(b)) {
      mp.persistent_bytes += bytes;
      continue;
    }
    std::vector<uint64_t>& into = b.kind == BufferKind::kHost ? host : live;
    for (int k = b.first_kernel; k <= b.last_kernel; ++k) into[size_t(k)] += bytes;
  }
  mp.peak_kernel = int(std::max_element(live.begin(), live.end()) - live.begin());
  mp.peak_bytes = mp.persistent_bytes + live[size_t(mp.peak_kernel)];
  mp.host_peak_bytes = *std::max_element(host.begin(), host.end());
  mp.live_at_peak.clear();
  for (size_t i = 0; i < mp.buffers.size(); ++i) {
    const HbmBuffer& b = mp.buffers[i];
    if (b.kind == BufferKind::kHost) continue;
    if (persistent(b) || (b.first_kernel <= mp.peak_kernel && mp.peak_kernel <= b.last_kernel)) mp.live_at_peak.push_back(i);
  }
  std::sort(mp.live_at_peak.begin(), mp.live_at_peak.end(), [&](size_t a, size_t b) {
    return mp.buffers[a].bytes * mp.buffers[a].copies > mp.buffers[b].bytes * mp.buffers[b].copies;
  });
}

}  // namespace

MemoryPlan plan_memory(const models::Graph& g, const FusionPlan& plan,
                       const std::function<BufferKind(int)>& kind_of, const std::map<int, int>& donated,
                       const std::map<int, int>& aliases, const std::map<int, uint64_t>& buffer_bytes) {
  const int kernels = int(plan.fusions.size());
  const int last = std::max(0, kernels - 1);
  auto buffer_of = [&](int v) {
    for (auto it = aliases.find(v); it != aliases.end(); it = aliases.find(v)) v = it->second;
    return v;
  };
  std::map<int, int> producer;  // value -> kernel index
  std::map<int, int> last_use;  // value -> last kernel reading it
  for (int k = 0; k < kernels; ++k) {
    const auto& f = plan.fusions[k];
    for (int r : kernel_outputs(f))
      if (!aliases.count(r)) producer[r] = k;
    for (int in : f.inputs) {
      const int b = buffer_of(in);
      last_use[b] = std::max(last_use.count(b) ? last_use[b] : 0, k);
    }
  }
  std::set<int> outputs;
  // An output no kernel writes is a view of a value that one does (an already-fused graph's output
  // bitcast, compiler/plan/fusion.h): that value is the output's buffer.
  for (int o : g.outputs()) {
    int src = buffer_of(o);
    outputs.insert(src);
    while (!producer.count(src) && g.node(src).kind == models::OpKind::kReshape) src = buffer_of(g.node(src).inputs[0]);
    outputs.insert(src);
  }
  std::map<int, int> readers;  // value -> kernels reading it
  for (const auto& f : plan.fusions) {
    std::set<int> read;
    for (int in : f.inputs) read.insert(buffer_of(in));
    for (int in : read) ++readers[in];
  }

  MemoryPlan mp;
  mp.donated = donated;
  for (const auto& n : g.nodes()) {
    if (aliases.count(n.id)) continue;  // another value's buffer
    HbmBuffer b;
    b.name = n.name;
    b.node = n.id;
    const auto sized = buffer_bytes.find(n.id);
    b.bytes = sized != buffer_bytes.end() ? sized->second : stored_bytes(g, n.id);
    if (n.kind == models::OpKind::kParameter) {
      b.kind = kind_of(n.id);
      b.first_kernel = 0;
      b.last_kernel = (b.kind == BufferKind::kInput && last_use.count(n.id)) ? last_use[n.id] : last;
      if (b.kind != BufferKind::kInput) mp.persistent_bytes += b.bytes;
    } else if (producer.count(n.id)) {
      if (donated.count(n.id)) continue;  // written in place over its parameter
      b.kind = n.kind == models::OpKind::kHostOffload ? BufferKind::kHost
               : outputs.count(n.id)                 ? BufferKind::kOutput
                                                     : BufferKind::kTemporary;
      b.first_kernel = producer[n.id];
      b.last_kernel = outputs.count(n.id) ? last : (last_use.count(n.id) ? last_use[n.id] : b.first_kernel);
    } else {
      continue;  // not materialized: lives only in VMEM inside a kernel
    }
    b.accesses = (readers.count(n.id) ? readers[n.id] : 0) + (producer.count(n.id) ? 1 : 0);
    for (const auto& [out, param] : donated) b.accesses += param == n.id && producer.count(out);  // its update
    mp.buffers.push_back(std::move(b));
  }
  sweep_peak(mp);
  return mp;
}

void plan_device_memory(MemoryPlan& mp, uint32_t cores, const std::function<bool(const HbmBuffer&)>& shared) {
  if (cores <= 1) return;
  mp.cores_per_device = cores;
  if (!shared) {
    for (HbmBuffer& b : mp.buffers) b.copies = cores;
    mp.persistent_bytes *= cores;
    mp.peak_bytes *= cores;
    mp.host_peak_bytes *= cores;
    return;
  }
  for (HbmBuffer& b : mp.buffers) b.copies = shared(b) ? 1 : cores;
  sweep_peak(mp);
}

void place_in_cmem(MemoryPlan& mp, size_t graph_nodes, const ChipParams& chip, uint32_t sharers, bool inputs_in_hbm,
                   const std::vector<int>& keep_in_hbm) {
  const std::set<int> keep(keep_in_hbm.begin(), keep_in_hbm.end());
  const uint64_t budget_bytes = sharers ? cmem_size_bytes(chip) / sharers : 0;
  mp.cmem_budget_bytes = budget_bytes;
  mp.cmem_peak_bytes = mp.cmem_chip_bytes = mp.cmem_buffers = 0;
  mp.cmem_node.clear();
  if (budget_bytes == 0) return;
  int kernels = 1;
  for (const auto& b : mp.buffers) kernels = std::max(kernels, b.last_kernel + 1);
  std::vector<size_t> order;
  for (size_t i = 0; i < mp.buffers.size(); ++i) {
    const HbmBuffer& b = mp.buffers[i];
    if (b.bytes == 0 || b.bytes > budget_bytes || b.accesses == 0 || b.kind == BufferKind::kHost) continue;
    if ((inputs_in_hbm && b.kind == BufferKind::kInput) || keep.count(b.node)) continue;
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const HbmBuffer &a = mp.buffers[x], &b = mp.buffers[y];
    if (a.accesses != b.accesses) return a.accesses > b.accesses;
    return a.bytes < b.bytes;
  });
  std::vector<uint64_t> used(size_t(kernels), 0);  // resident CMEM bytes per kernel
  mp.cmem_node.assign(graph_nodes, false);
  for (size_t i : order) {
    HbmBuffer& b = mp.buffers[i];
    bool fits = true;
    for (int k = b.first_kernel; k <= b.last_kernel && fits; ++k) fits = used[size_t(k)] + b.bytes <= budget_bytes;
    if (!fits) continue;
    for (int k = b.first_kernel; k <= b.last_kernel; ++k) used[size_t(k)] += b.bytes;
    b.in_cmem = true;
    ++mp.cmem_buffers;
    if (b.node >= 0 && size_t(b.node) < graph_nodes) mp.cmem_node[size_t(b.node)] = true;
  }
  for (const auto& [out, param] : mp.donated)  // an in-place update writes where its parameter lives
    if (size_t(out) < graph_nodes && size_t(param) < graph_nodes) mp.cmem_node[size_t(out)] = mp.cmem_node[size_t(param)];
  mp.cmem_peak_bytes = *std::max_element(used.begin(), used.end());
  mp.cmem_chip_bytes = mp.cmem_peak_bytes * sharers;
}

}  // namespace tpusim::compiler
