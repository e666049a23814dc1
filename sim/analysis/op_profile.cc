#include "sim/analysis/op_profile.h"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "sim/analysis/program_plan.h"
#include "sim/base/clock.h"
#include "sim/base/sim_error.h"
#include "sim/ici/ici_timing.h"
#include "sim/vpu/vpu_timing.h"

namespace tpusim {

namespace {

constexpr uint32_t kOutside = UINT32_MAX;
constexpr std::string_view kLaunchName = "(launch)";

// The name of an instruction outside every kernel: its label up to ':'.
std::string_view outside_name(const isa::Instr& in) {
  const std::string_view l = in.label.view();
  return l.substr(0, l.find(':'));
}

}  // namespace

const char* op_bound_name(OpBound b) {
  switch (b) {
    case OpBound::kMxu: return "mxu";
    case OpBound::kHbm: return "hbm";
    case OpBound::kVpu: return "vpu";
    case OpBound::kIci: return "ici";
    case OpBound::kFixed: return "fixed";
  }
  return "?";
}

// Vector-register operations of `w`, every slot counted (the energy model's VPU event).
static uint64_t vreg_ops(const isa::VpuWork& w) {
  return w.alu_vregs + w.eup_vregs + w.xlu_vregs + w.vld_vregs + w.vst_vregs;
}

// The `bound` rule of op_profile.h.
static void classify(OpProfileEntry& e) {
  const double b = e.max_bound_s();
  if (e.name == kLaunchName) {
    e.bound = OpBound::kFixed;
  } else if (e.transfers) {
    e.bound = OpBound::kIci;
  } else if (b <= 0 || e.time_s > 2 * b) {
    e.bound = OpBound::kFixed;
  } else if (e.compute_bound_s >= e.memory_bound_s && e.compute_bound_s >= e.vpu_bound_s) {
    e.bound = OpBound::kMxu;
  } else {
    e.bound = e.memory_bound_s >= e.vpu_bound_s ? OpBound::kHbm : OpBound::kVpu;
  }
}

// Decreasing time, first occurrence first on a tie.
static void sort_entries(OpProfile& p) {
  std::stable_sort(p.entries.begin(), p.entries.end(),
                   [](const OpProfileEntry& a, const OpProfileEntry& b) { return a.cycles > b.cycles; });
}

double OpProfileEntry::max_bound_s() const {
  return std::max({compute_bound_s, memory_bound_s, vpu_bound_s, ici_bound_s});
}

std::vector<uint64_t> attribute_cycles(std::span<const SegmentTiming> segs, uint64_t launch) {
  std::vector<uint64_t> cycles(segs.size(), 0);
  // Background segments by end (stream order on a tie).
  std::vector<uint32_t> bg;
  for (uint32_t s = 0; s < segs.size(); ++s)
    if (segs[s].ran && segs[s].background) bg.push_back(s);
  std::stable_sort(bg.begin(), bg.end(), [&](uint32_t a, uint32_t b) { return segs[a].end < segs[b].end; });
  uint64_t f = launch;
  for (uint32_t s = 0; s < segs.size(); ++s) {
    const SegmentTiming& t = segs[s];
    if (!t.ran || t.background) continue;
    if (t.ready > f) {
      // The background segment that ended last in (f, ready]: the last with end <= ready.
      auto it = std::upper_bound(bg.begin(), bg.end(), t.ready, [&](uint64_t r, uint32_t b) { return r < segs[b].end; });
      if (it != bg.begin() && segs[*(it - 1)].end > f) {
        cycles[*(it - 1)] += t.ready - f;
        f = t.ready;
      }
    }
    if (t.end > f) {
      cycles[s] += t.end - f;
      f = t.end;
    }
  }
  for (uint32_t b : bg)
    if (segs[b].end > f) {
      cycles[b] += segs[b].end - f;
      f = segs[b].end;
    }
  return cycles;
}

void OpProfileRecorder::reset(const CorePlan& cp) {
  const isa::CoreProgram& stream = *cp.prog;
  stream_ = &stream;
  view_ = cp.view();
  first_.clear();
  kernel_.clear();
  gap_name_.clear();
  cur_ = 0;
  if (stream.kernels.empty()) {
    ready_.clear();
    end_.clear();
    return;
  }
  const uint32_t n = cp.size();
  // Runs outside the kernels in [from, to), cut where the name changes.
  auto outside = [&](uint32_t from, uint32_t to) {
    for (uint32_t i = from; i < to; ++i) {
      const std::string_view name = outside_name(view_[i]);
      if (i == from || name != gap_name_.back()) {
        first_.push_back(i);
        kernel_.push_back(kOutside);
        gap_name_.emplace_back(name);
      }
    }
  };
  uint32_t at = 0;
  for (uint32_t k = 0; k < stream.kernels.size(); ++k) {
    const isa::KernelRange& r = stream.kernels[k];
    outside(at, r.first_instr);
    first_.push_back(r.first_instr);
    kernel_.push_back(k);
    gap_name_.emplace_back();
    at = r.last_instr + 1;
  }
  outside(at, n);
  first_.push_back(n);
  ready_.assign(kernel_.size(), UINT64_MAX);
  end_.assign(kernel_.size(), 0);
}

uint32_t OpProfileRecorder::find(uint32_t instr) const {
  return uint32_t(std::upper_bound(first_.begin(), first_.end() - 1, instr) - first_.begin()) - 1;
}

OpProfile OpProfileRecorder::profile(const CorePlan& cp, const HwConfig& hw, const ResolvedHw& r, uint64_t launch,
                                     uint64_t end_cycles, uint64_t origin, uint64_t period) const {
  OpProfile p;
  p.chip = cp.chip;
  p.core = cp.core;
  p.cycles = end_cycles;
  const Clock clock{hw.chip.core.clock_mhz};
  p.time_s = clock.seconds(end_cycles);
  if (!active()) return p;
  const isa::CoreProgram& stream = *stream_;
  const size_t segs = kernel_.size();
  auto cycles_of = [&](uint64_t t) { return t <= origin ? 0 : (t - origin) / period; };

  // Per segment: timing, and what its instructions need of the units, without reading the stream
  // (millions of instructions): a kernel's VPU work is in the table, its background instructions
  // and transfers are in the unit queues (stream order); only runs outside the kernels are read.
  std::vector<SegmentTiming> timing(segs);
  std::vector<uint64_t> vpu(segs, 0), ici(segs, 0), vregs(segs, 0), ici_bytes(segs, 0);
  std::vector<uint8_t> transfers(segs, 0), async(segs, 0);
  auto walk = [&](uint32_t unit, auto&& visit) {
    const uint32_t* q = cp.queues.row(unit);
    uint32_t s = 0;
    for (uint32_t k = 0, n = cp.queues.size(unit); k < n; ++k) {
      while (q[k] >= first_[s + 1]) ++s;
      visit(q[k], s);
    }
  };
  for (size_t s = 0; s < segs; ++s) {
    if (kernel_[s] != kOutside) {
      vpu[s] = vpu_issue_cycles(hw.chip.core.vpu, stream.kernels[kernel_[s]].vpu);
      vregs[s] = vreg_ops(stream.kernels[kernel_[s]].vpu);
      continue;
    }
    for (uint32_t i = first_[s]; i < first_[s + 1]; ++i)
      if (view_[i].op == isa::Op::kVpu) {
        vpu[s] += vpu_issue_cycles(hw.chip.core.vpu, view_[i].vpu);
        vregs[s] += vreg_ops(view_[i].vpu);
      }
  }
  for (uint32_t u : {UnitIndex::kDmaAsync, UnitIndex::kVpuAsync, UnitIndex::kXferAsync}) walk(u, [&](uint32_t, uint32_t s) { async[s] = 1; });
  walk(UnitIndex::kRecv, [&](uint32_t, uint32_t s) { transfers[s] = 1; });
  // Transfer stream cycles per first stage (ICI ports, NoC, PCIe h2d, d2h) of the segment.
  const uint32_t ports = ici_port_count(hw.slice.topology);
  std::vector<uint64_t> stage(ports + 3, 0);
  uint32_t open = UINT32_MAX;  // the segment `stage` belongs to
  auto close = [&] {
    if (open != UINT32_MAX) ici[open] = std::max(ici[open], *std::max_element(stage.begin(), stage.end()));
    std::fill(stage.begin(), stage.end(), 0);
  };
  // The transfer queue's and the host queue's (their first stages differ: the max over both).
  const auto transfer = [&](uint32_t i, uint32_t s) {
    if (s != open) {
      close();
      open = s;
    }
    transfers[s] = 1;
    const isa::Instr& in = view_[i];
    if (in.op == isa::Op::kSend) {
      const uint32_t peer = cp.peer(i).chip;
      const uint32_t st = peer == cp.chip ? ports : ici_next_port(hw.slice.topology, cp.chip, peer);
      if (peer != cp.chip) ici_bytes[s] += in.bytes;
      stage[st] += send_estimate(hw, r, cp.chip, peer, in.bytes).stream_cycles;
    } else {
      const bool load = in.op == isa::Op::kHostLoad;
      stage[ports + (load ? 1 : 2)] += host_transfer_estimate(hw, r, load, in.bytes, in.dcn).stream_cycles;
    }
  };
  walk(UnitIndex::kXfer, transfer);
  close();
  open = UINT32_MAX;
  walk(UnitIndex::kXferAsync, transfer);
  close();
  open = UINT32_MAX;
  walk(UnitIndex::kHost, transfer);
  close();
  for (size_t s = 0; s < segs; ++s) {
    timing[s].background = async[s] || transfers[s];
    timing[s].ran = end_[s] > 0 || ready_[s] != UINT64_MAX;
    if (timing[s].ran) {
      timing[s].ready = cycles_of(ready_[s]);
      timing[s].end = cycles_of(end_[s]);
    }
  }
  const std::vector<uint64_t> cycles = attribute_cycles(timing, launch);

  // Merge by name, in first-occurrence order. The bounds are at the core's peaks.
  auto per_s = [&](double per_cycle) { return per_cycle * hw.chip.core.clock_mhz * 1e6; };
  const double flop_per_s = per_s(r.core_peak_flop_per_cycle), hbm_per_s = per_s(r.hbm_core_peak_bytes_per_cycle);
  OpProfileEntry launch_entry;
  launch_entry.name = std::string(kLaunchName);
  launch_entry.count = 1;
  launch_entry.cycles = std::min(launch, end_cycles);
  p.entries.push_back(launch_entry);
  std::unordered_map<std::string_view, size_t> index;
  for (size_t s = 0; s < segs; ++s) {
    const isa::KernelRange* k = kernel_[s] == kOutside ? nullptr : &stream.kernels[kernel_[s]];
    const std::string_view name =
        k ? k->name.view() : (gap_name_[s].empty() ? std::string_view("(outside kernels)") : std::string_view(gap_name_[s]));
    auto [it, added] = index.try_emplace(name, p.entries.size());
    if (added) {
      p.entries.emplace_back();
      p.entries.back().name = std::string(name);
    }
    OpProfileEntry& e = p.entries[it->second];
    ++e.count;
    e.cycles += cycles[s];
    if (k) {
      e.flops += k->flops;
      e.hbm_bytes += k->hbm_bytes;
    }
    e.vpu_bound_s += clock.seconds(vpu[s]);
    e.ici_bound_s += clock.seconds(ici[s]);
    e.vpu_vreg_ops += vregs[s];
    e.ici_bytes += ici_bytes[s];
    e.transfers |= transfers[s] != 0;
  }
  for (OpProfileEntry& e : p.entries) {
    e.time_s = clock.seconds(e.cycles);
    e.compute_bound_s = flop_per_s > 0 ? double(e.flops) / flop_per_s : 0;
    e.memory_bound_s = hbm_per_s > 0 ? double(e.hbm_bytes) / hbm_per_s : 0;
    classify(e);
  }
  sort_entries(p);
  return p;
}

OpProfile group_op_profile(const OpProfile& p) {
  OpProfile g = p;
  g.entries.clear();
  std::unordered_map<std::string, size_t> index;
  for (const OpProfileEntry& e : p.entries) {
    const std::string name = op_group_name(e.name);
    auto [it, added] = index.try_emplace(name, g.entries.size());
    if (added) {
      g.entries.emplace_back();
      g.entries.back().name = name;
    }
    OpProfileEntry& x = g.entries[it->second];
    x.count += e.count;
    x.cycles += e.cycles;
    x.time_s += e.time_s;
    x.flops += e.flops;
    x.hbm_bytes += e.hbm_bytes;
    x.vpu_vreg_ops += e.vpu_vreg_ops;
    x.ici_bytes += e.ici_bytes;
    x.compute_bound_s += e.compute_bound_s;
    x.memory_bound_s += e.memory_bound_s;
    x.vpu_bound_s += e.vpu_bound_s;
    x.ici_bound_s += e.ici_bound_s;
    x.transfers |= e.transfers;
  }
  for (OpProfileEntry& x : g.entries) classify(x);
  sort_entries(g);
  return g;
}

std::string op_group_name(std::string_view name) {
  std::string out;
  size_t at = 0;
  while (at <= name.size()) {
    size_t dot = name.find('.', at);
    if (dot == std::string_view::npos) dot = name.size();
    const std::string_view part = name.substr(at, dot - at);
    const bool number = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (at > 0) out += '.';
    if (number && at > 0)
      out += '*';
    else
      out.append(part);
    at = dot + 1;
  }
  return out;
}

void check_kernel_table(const std::string& core_name, const isa::CoreProgram& stream) {
  const size_t n = stream.stream_size();
  uint64_t next = 0;  // the first instruction a kernel may start at
  for (size_t k = 0; k < stream.kernels.size(); ++k) {
    const isa::KernelRange& r = stream.kernels[k];
    if (r.first_instr < next || r.last_instr < r.first_instr || r.last_instr >= n)
      throw SimError("invalid program: " + core_name + " kernel #" + std::to_string(k) + " '" + r.name.str() +
                     "' spans instructions [" + std::to_string(r.first_instr) + ", " + std::to_string(r.last_instr) +
                     "]: kernels must be in stream order, not overlap, and lie within the stream's " +
                     std::to_string(n) + " instructions");
    next = uint64_t(r.last_instr) + 1;
  }
}

}  // namespace tpusim
