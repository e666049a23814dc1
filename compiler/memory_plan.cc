#include "compiler/memory_plan.h"

#include <algorithm>
#include <set>

#include "compiler/lowering.h"

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
  }
  return "?";
}

MemoryPlan plan_memory(const models::Graph& g, const FusionPlan& plan,
                       const std::function<BufferKind(int)>& kind_of, const std::map<int, int>& donated) {
  const int kernels = int(plan.fusions.size());
  const int last = std::max(0, kernels - 1);
  std::map<int, int> producer;  // value -> kernel index
  std::map<int, int> last_use;  // value -> last kernel reading it
  for (int k = 0; k < kernels; ++k) {
    const auto& f = plan.fusions[k];
    producer[f.root] = k;
    for (int r : f.merged_reduces) producer[r] = k;
    for (int in : f.inputs) last_use[in] = std::max(last_use.count(in) ? last_use[in] : 0, k);
  }
  std::set<int> outputs(g.outputs().begin(), g.outputs().end());

  MemoryPlan mp;
  for (const auto& n : g.nodes()) {
    HbmBuffer b;
    b.name = n.name;
    b.node = n.id;
    b.bytes = stored_bytes(g, n.id);
    if (n.kind == models::OpKind::kParameter) {
      b.kind = kind_of(n.id);
      b.first_kernel = 0;
      b.last_kernel = (b.kind == BufferKind::kInput && last_use.count(n.id)) ? last_use[n.id] : last;
      if (b.kind != BufferKind::kInput) mp.persistent_bytes += b.bytes;
    } else if (producer.count(n.id)) {
      if (donated.count(n.id)) continue;  // written in place over its parameter
      b.kind = outputs.count(n.id) ? BufferKind::kOutput : BufferKind::kTemporary;
      b.first_kernel = producer[n.id];
      b.last_kernel = outputs.count(n.id) ? last : (last_use.count(n.id) ? last_use[n.id] : b.first_kernel);
    } else {
      continue;  // not materialized: lives only in VMEM inside a kernel
    }
    mp.buffers.push_back(std::move(b));
  }
  // Sweep the kernel sequence for the peak of non-persistent buffers.
  std::vector<uint64_t> live(kernels > 0 ? kernels : 1, 0);
  for (const auto& b : mp.buffers) {
    if (b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState) continue;
    for (int k = b.first_kernel; k <= b.last_kernel && k < int(live.size()); ++k) live[k] += b.bytes;
  }
  mp.peak_kernel = int(std::max_element(live.begin(), live.end()) - live.begin());
  mp.peak_bytes = mp.persistent_bytes + live[mp.peak_kernel];
  for (size_t i = 0; i < mp.buffers.size(); ++i) {
    const auto& b = mp.buffers[i];
    bool persistent = b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState;
    if (persistent || (b.first_kernel <= mp.peak_kernel && mp.peak_kernel <= b.last_kernel)) mp.live_at_peak.push_back(i);
  }
  std::sort(mp.live_at_peak.begin(), mp.live_at_peak.end(),
            [&](size_t a, size_t b) { return mp.buffers[a].bytes > mp.buffers[b].bytes; });
  return mp;
}

}  // namespace tpusim::compiler
