#include "compiler/plan/rematerialize.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>

#include "compiler/plan/layout.h"

namespace tpusim::compiler {
namespace {

using models::OpKind;

bool persistent(const HbmBuffer& b) { return b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState; }

bool compute_kernel(FusionKind k) { return k == FusionKind::kLoop || k == FusionKind::kReduce || k == FusionKind::kDot; }

// One value recomputed: its clone runs right before kernel `before`; readers after `peak` read it.
struct Decision {
  int value = -1, peak = 0, before = 0;
};

// The greedy walk over the memory peaks (rematerialize.h has its rules).
class Greedy {
 public:
  Greedy(const models::Graph& g, const FusionPlan& plan, const MemoryPlan& mp, const ResolvedHw& r,
         const std::set<int>& fixed)
      : g_(g), plan_(plan), mp_(mp), r_(r), fixed_(fixed) {
    const size_t n = g.nodes().size(), kernels = plan.fusions.size();
    live_.assign(std::max<size_t>(kernels, 1), 0);
    buffer_of_.assign(n, -1);
    root_kernel_.assign(n, -1);
    readers_.assign(n, {});
    first_k_.assign(n, -1);
    last_k_.assign(n, -1);
    users_.assign(n, {});
    done_.assign(n, false);
    frozen_.assign(n, false);
    for (const models::Node& x : g.nodes())
      for (int in : x.inputs) users_[size_t(in)].push_back(x.id);
    for (size_t k = 0; k < kernels; ++k) {
      const Fusion& f = plan.fusions[k];
      root_kernel_[size_t(f.root)] = int(k);
      for (int in : f.inputs)
        if (readers_[size_t(in)].empty() || readers_[size_t(in)].back() != int(k)) readers_[size_t(in)].push_back(int(k));
      for (int x : f.nodes) {
        if (first_k_[size_t(x)] < 0) first_k_[size_t(x)] = int(k);
        last_k_[size_t(x)] = int(k);
      }
    }
    ranges_.reserve(mp.buffers.size());
    for (size_t i = 0; i < mp.buffers.size(); ++i) {
      const HbmBuffer& b = mp.buffers[i];
      ranges_.push_back({b.first_kernel, b.last_kernel, b.bytes * b.copies});
      if (b.node >= 0 && size_t(b.node) < n) buffer_of_[size_t(b.node)] = int(i);
      if (!persistent(b) && b.kind != BufferKind::kHost) add(b.first_kernel, b.last_kernel, b.bytes * b.copies);
    }
  }

  // Recomputes values until the peak fits `limit`; false when the first peak has no candidate.
  bool run(uint64_t limit) {
    while (peak_bytes() > limit) {
      const int p = peak_kernel();
      int best = -1;
      uint64_t best_saving = 0;
      double best_cost = 0;
      for (size_t i = 0; i < mp_.buffers.size(); ++i) {
        uint64_t saving = 0;
        double cycles = 0;
        if (!candidate(i, p, &saving, &cycles)) continue;
        const double cost = cycles / double(saving);
        if (best < 0 || cost < best_cost || (cost == best_cost && saving > best_saving)) {
          best = int(i), best_cost = cost, best_saving = saving;
        }
      }
      if (best < 0) break;
      apply(size_t(best), p);
    }
    return !decisions_.empty();
  }

  uint64_t peak_bytes() const { return mp_.persistent_bytes + live_[size_t(peak_kernel())]; }
  const std::vector<Decision>& decisions() const { return decisions_; }
  int root_kernel(int v) const { return root_kernel_[size_t(v)]; }
  int first_kernel_of(int v) const { return first_k_[size_t(v)]; }
  uint64_t device_bytes(int v) const { return mp_.buffers[size_t(buffer_of_[size_t(v)])].bytes * mp_.buffers[size_t(buffer_of_[size_t(v)])].copies; }

 private:
  struct Range {
    int first = 0, last = 0;
    uint64_t bytes = 0;
  };

  void add(int first, int last, uint64_t bytes) {
    for (int k = std::max(first, 0); k <= last && size_t(k) < live_.size(); ++k) live_[size_t(k)] += bytes;
  }
  void remove(int first, int last, uint64_t bytes) {
    for (int k = std::max(first, 0); k <= last && size_t(k) < live_.size(); ++k) live_[size_t(k)] -= bytes;
  }
  int peak_kernel() const { return int(std::max_element(live_.begin(), live_.end()) - live_.begin()); }

  // Whether buffer i may be recomputed after peak p; its saving at p and its kernel's roofline.
  bool candidate(size_t i, int p, uint64_t* saving, double* cycles) const {
    const HbmBuffer& b = mp_.buffers[i];
    const Range& range = ranges_[i];
    if (b.kind != BufferKind::kTemporary || b.node < 0 || range.first >= p || range.last <= p) return false;
    const int v = b.node;
    if (done_[size_t(v)] || frozen_[size_t(v)] || fixed_.count(v)) return false;
    const int k = root_kernel_[size_t(v)];
    if (k < 0 || k != range.first) return false;
    const Fusion& f = plan_.fusions[size_t(k)];
    if (!compute_kernel(f.kind) || !f.extra_outputs.empty() || !f.merged_reduces.empty()) return false;
    const std::vector<int>& readers = readers_[size_t(v)];
    // Every reader reads it directly (none through an alias), none at the peak, one after it.
    if (readers.empty() || readers.back() != range.last) return false;
    if (std::binary_search(readers.begin(), readers.end(), p)) return false;
    for (int r : readers)
      if (r > p && !compute_kernel(plan_.fusions[size_t(r)].kind) && plan_.fusions[size_t(r)].kind != FusionKind::kAttention)
        return false;
    // A node reading it inside kernels on both sides of the peak cannot read two buffers.
    for (int u : users_[size_t(v)])
      if (first_k_[size_t(u)] >= 0 && first_k_[size_t(u)] <= p && last_k_[size_t(u)] > p) return false;
    uint64_t keep_alive = 0, bytes = b.bytes;
    for (int in : f.inputs) {
      const int j = buffer_of_[size_t(in)];
      if (j < 0 || done_[size_t(in)]) return false;
      const HbmBuffer& o = mp_.buffers[size_t(j)];
      if (o.kind == BufferKind::kHost) return false;
      if (fixed_.count(in)) return false;
      bytes += stored_bytes(g_, in);
      if (!persistent(o) && ranges_[size_t(j)].last < p) keep_alive += ranges_[size_t(j)].bytes;
    }
    if (keep_alive >= range.bytes) return false;
    *saving = range.bytes - keep_alive;
    const double flops = f.dot >= 0 ? double(models::dot_flops(g_, g_.node(f.dot))) : 0.0;
    *cycles = std::max(r_.core_peak_flop_per_cycle > 0 ? flops / r_.core_peak_flop_per_cycle : 0.0,
                       r_.hbm_core_peak_bytes_per_cycle > 0 ? double(bytes) / r_.hbm_core_peak_bytes_per_cycle : 0.0);
    return true;
  }

  void apply(size_t i, int p) {
    Range& range = ranges_[i];
    const int v = mp_.buffers[i].node;
    const std::vector<int>& readers = readers_[size_t(v)];
    int before_last = range.first, after_first = INT_MAX;
    for (int r : readers) {
      if (r < p) before_last = std::max(before_last, r);
      if (r > p) after_first = std::min(after_first, r);
    }
    remove(before_last + 1, range.last, range.bytes);
    add(after_first, range.last, range.bytes);
    ranges_.push_back({after_first, range.last, range.bytes});  // the clone's
    range.last = before_last;
    for (int in : plan_.fusions[size_t(root_kernel_[size_t(v)])].inputs) {
      frozen_[size_t(in)] = true;
      const size_t j = size_t(buffer_of_[size_t(in)]);
      if (persistent(mp_.buffers[j]) || ranges_[j].last >= after_first) continue;
      add(ranges_[j].last + 1, after_first, ranges_[j].bytes);
      ranges_[j].last = after_first;
    }
    done_[size_t(v)] = true;
    decisions_.push_back({v, p, after_first});
  }

  const models::Graph& g_;
  const FusionPlan& plan_;
  const MemoryPlan& mp_;
  const ResolvedHw& r_;
  const std::set<int>& fixed_;
  std::vector<uint64_t> live_;  // non-persistent HBM bytes live at each kernel
  std::vector<Range> ranges_;   // mp_.buffers' live ranges as the walk changes them, then the clones'
  std::vector<int> buffer_of_, root_kernel_;
  std::vector<std::vector<int>> readers_, users_;  // kernels reading a value; nodes reading it
  std::vector<int> first_k_, last_k_;  // the first and last kernel computing a node (-1: none)
  std::vector<bool> done_, frozen_;
  std::vector<Decision> decisions_;
};

}  // namespace

std::optional<RematRewrite> rematerialize(const models::Graph& g, const FusionPlan& plan, const MemoryPlan& mp,
                                          uint64_t limit, const ResolvedHw& r, const std::set<int>& fixed) {
  Greedy walk(g, plan, mp, r, fixed);
  if (!walk.run(limit)) return std::nullopt;

  RematRewrite out;
  out.planned_peak_bytes = walk.peak_bytes();
  out.stats.peak_bytes_before = mp.peak_bytes;
  const size_t n = g.nodes().size();
  std::vector<int>& id = out.new_id;
  id.assign(n, -1);
  std::vector<int> clone(n, -1), split(n, INT_MAX);
  std::map<int, std::vector<int>> before;  // kernel -> values whose clones run right before it
  for (const Decision& d : walk.decisions()) {
    before[d.before].push_back(d.value);
    split[size_t(d.value)] = d.peak;
  }
  models::Graph& o = out.graph;
  // A node reads a recomputed value's clone when it is computed in kernels after that value's peak.
  std::function<int(int)> ensure = [&](int x) -> int {
    if (id[size_t(x)] >= 0) return id[size_t(x)];
    models::Node c = g.node(x);
    const int at = walk.first_kernel_of(x);
    for (int& in : c.inputs) in = at > split[size_t(in)] ? clone[size_t(in)] : ensure(in);
    id[size_t(x)] = o.append_copy(std::move(c));
    if (split[size_t(x)] != INT_MAX) o.set_materialize(id[size_t(x)]);  // stays the kernel it was
    return id[size_t(x)];
  };
  for (const models::Node& x : g.nodes())
    if (x.kind == OpKind::kParameter || x.kind == OpKind::kConstant) ensure(x.id);
  for (size_t k = 0; k < plan.fusions.size(); ++k) {
    if (auto b = before.find(int(k)); b != before.end())
      for (int v : b->second) {
        const Fusion& f = plan.fusions[size_t(walk.root_kernel(v))];
        std::map<int, int> cl;  // the kernel's nodes -> their clones
        for (int x : f.nodes) {
          models::Node c = g.node(x);
          for (int& in : c.inputs) in = cl.count(in) ? cl[in] : ensure(in);
          c.name += ".remat";
          cl[x] = o.append_copy(std::move(c));
        }
        clone[size_t(v)] = cl.at(f.root);
        o.set_materialize(clone[size_t(v)]);
        if (f.dot >= 0) out.stats.flops += models::dot_flops(o, o.node(cl.at(f.dot)));
        out.stats.bytes += walk.device_bytes(v);
        ++out.stats.values;
      }
    const Fusion& f = plan.fusions[k];
    for (int x : f.nodes) ensure(x);
    for (int x : kernel_outputs(f)) ensure(x);
  }
  for (const models::Node& x : g.nodes()) ensure(x.id);  // what no kernel computes
  for (int x : g.outputs()) o.mark_output(id[size_t(x)]);
  o.set_scheduled(true);
  return out;
}

}  // namespace tpusim::compiler
