#include "sim/analysis/collective_stats.h"

#include "sim/analysis/program_plan.h"
#include "sim/base/clock.h"

namespace tpusim {

CollectiveKindStats& CollectiveKindStats::operator+=(const CollectiveKindStats& o) {
  instructions += o.instructions;
  bytes += o.bytes;
  busy_cycles += o.busy_cycles;
  exposed_cycles += o.exposed_cycles;
  busy_s += o.busy_s;
  exposed_s += o.exposed_s;
  return *this;
}

CollectiveStats& CollectiveStats::operator+=(const CollectiveStats& o) {
  for (size_t k = 0; k < kinds.size(); ++k) kinds[k] += o.kinds[k];
  for (size_t a = 0; a < axes.size(); ++a) axes[a] += o.axes[a];
  return *this;
}

const char* collective_kind_name(isa::Collective k) {
  switch (k) {
    case isa::Collective::kNone: return "none";
    case isa::Collective::kAllReduce: return "all-reduce";
    case isa::Collective::kAllGather: return "all-gather";
    case isa::Collective::kReduceScatter: return "reduce-scatter";
    case isa::Collective::kAllToAll: return "all-to-all";
    case isa::Collective::kCollectivePermute: return "collective-permute";
    case isa::Collective::kDcnAllReduce: return "all-reduce (DCN)";
  }
  return "?";
}

void CollectiveRecorder::reset(const CorePlan& cp) {
  role_ = cp.role;
  axis_ = cp.axis;
  for (IntervalUnion& u : unions_) u.clear();
  for (IntervalUnion& u : axis_unions_) u.clear();
}

CollectiveStats CollectiveRecorder::stats(const CorePlan& cp, const HwConfig& hw, uint64_t period) const {
  CollectiveStats s;
  s.chip = cp.chip;
  s.core = cp.core;
  for (size_t i = 0; i < role_.size(); ++i)
    if (role_[i] > 1) {
      ++s.kinds[role_[i] - 1].instructions;
      ++s.axes[axis_[i]].instructions;
    }
  for (uint32_t i : cp.sends_recvs)  // the few transfers: the stream itself is not read
    if (role_[i] > 1 && cp.instr(i).op == isa::Op::kSend) {
      s.kinds[role_[i] - 1].bytes += cp.instr(i).bytes;
      s.axes[axis_[i]].bytes += cp.instr(i).bytes;
    }
  const Clock clock{hw.chip.core.clock_mhz};
  auto times = [&](CollectiveKindStats& ks, const IntervalUnion& u) {
    ks.busy_cycles = u.length() / period;
    ks.exposed_cycles = u.length_outside(unions_[0]) / period;
    ks.busy_s = clock.seconds(ks.busy_cycles);
    ks.exposed_s = clock.seconds(ks.exposed_cycles);
  };
  for (size_t k = 1; k < s.kinds.size(); ++k) times(s.kinds[k], unions_[k]);
  for (size_t a = 0; a < s.axes.size(); ++a) times(s.axes[a], axis_unions_[a]);
  return s;
}

}  // namespace tpusim
