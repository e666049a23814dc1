// The op profile: where one core's device time went, kernel by kernel (like the TPU profiler's op
// profile). Both engines compute it the same way: they feed every instruction's ready and
// completion time to an OpProfileRecorder, and op_profile() attributes the core's time to the
// kernels of its stream's kernel table (isa::CoreProgram::kernels) with the rule below and
// classifies each kernel by its lower bounds (docs/training.md, "Op profile").
//
// Segments. The stream is cut into segments: each kernel of the table, and each run of consecutive
// instructions outside every kernel whose labels share the part before ':' (named so, e.g.
// "infeed"; "(outside kernels)" when that part is empty). A segment is *background* when one of
// its instructions is `async` or a transfer (kSend, kRecv, kHostLoad, kHostStore: collectives,
// infeed), else *foreground*. Per segment, from its instructions: ready = the earliest time one
// of them had all its deps completed (the launch for one without deps), end = the latest
// completion.
//
// Attribution (attribute_cycles(); cycles from the run start, launch L, the core's end E):
//   1. "(launch)" gets L (sequencer.launch_cycles).
//   2. Foreground segments in stream order, with a frontier F starting at L: when the segment's
//      ready R is later than F, it waited for something outside the kernels before it: the gap
//      R - F goes to the background segment that ended last in (F, R] (the collective it waited
//      for; the latest one in stream order on a tie), and F = R; with none, the segment keeps it.
//      Then the segment gets max(0, end - F), and F = max(F, end).
//   3. Background segments, by end (stream order on a tie): each gets max(0, end - F), F = max(F,
//      end) (what background work adds after the last foreground kernel: an exposed tail).
// So the entries add up to E exactly, kernels that run one after another get end - previous end,
// and overlapped collectives get only their exposed time.
//
// Entries merge the segments of one name (count = how many), in decreasing time. Bounds per entry
// (seconds): compute = flops at the core's peak MXU rate; memory = hbm_bytes at the core's peak
// HBM bandwidth (efficiency 1); vpu = the issue cycles of the kernel's VPU work (the table's sum
// of its blocks' work; sim/vpu/vpu_timing.h: the busiest VLIW slot); ici = the busiest first
// stage of its transfers (an ICI port, the NoC, a PCIe direction), each transfer's stream cycles
// (sim/ici/ici_timing.h). Runs outside the kernels take flops and bytes 0 and their VPU blocks'
// summed issue cycles. `bound`: "fixed" for the
// launch; "ici" for an entry with transfers; else "fixed" when its time exceeds twice the largest
// bound (or every bound is 0: launch, latency and dependency stalls dominate); else the largest of
// mxu (compute), hbm (memory), vpu.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/hw/resolved_hw.h"
#include "sim/isa/program.h"

namespace tpusim {

struct CorePlan;

enum class OpBound : uint8_t { kMxu, kHbm, kVpu, kIci, kFixed };
const char* op_bound_name(OpBound b);  // "mxu", "hbm", "vpu", "ici", "fixed"

struct OpProfileEntry {
  std::string name;
  uint32_t count = 0;       // segments (kernel executions) of this name in one run of the program
  uint64_t cycles = 0;      // attributed core cycles
  double time_s = 0;
  uint64_t flops = 0;       // the kernel table's accounting
  uint64_t hbm_bytes = 0;
  // Events the energy model counts (sim/power/energy_model.h): the VPU's vector-register operations
  // (every VLIW slot: ALU, EUP, XLU, loads, stores) and the bytes sent over ICI to other chips.
  uint64_t vpu_vreg_ops = 0;
  uint64_t ici_bytes = 0;
  double compute_bound_s = 0, memory_bound_s = 0, vpu_bound_s = 0, ici_bound_s = 0;
  bool transfers = false;   // has kSend/kRecv/kHostLoad/kHostStore instructions
  OpBound bound = OpBound::kFixed;
  // The largest bound (s); time_s / it is the entry's distance from its roofline.
  double max_bound_s() const;
};

struct OpProfile {
  uint32_t chip = 0, core = 0;  // the core profiled
  uint64_t cycles = 0;          // its end (the sum of the entries' cycles)
  double time_s = 0;
  std::vector<OpProfileEntry> entries;  // decreasing time_s; empty: the stream has no kernel table
};

// `p` with the entries whose names differ only in numeric components merged (op_group_name: the
// 24 layers' copies of a kernel, the anonymous "reduce_sum.N" fusions); the bounds and `bound`
// are those of the sums. What the run summaries list.
OpProfile group_op_profile(const OpProfile& p);
// `name` with every dot-separated component made of digits only, except a leading one, replaced
// by '*': "bert.encoder.layer.3.output.dense" -> "bert.encoder.layer.*.output.dense".
std::string op_group_name(std::string_view name);

// Per-segment timing as the attribution rule reads it (cycles from the run start).
struct SegmentTiming {
  uint64_t ready = 0, end = 0;
  bool background = false;
  bool ran = false;  // some instruction of it was recorded
};
// The attribution rule (steps 2 and 3 above): cycles per segment; with launch L, they add up to
// max(L, every end) - L.
std::vector<uint64_t> attribute_cycles(std::span<const SegmentTiming> segments, uint64_t launch);

// Collects, per segment of one core's stream, the earliest ready and the latest completion of its
// instructions, in any time unit (SystemC: ps; analytical: cycles), converted when profiling.
// O(1) per instruction when instructions come roughly in stream order.
class OpProfileRecorder {
 public:
  // Arms for core `cp`'s stream (a stream without a kernel table: records nothing). The table is
  // assumed valid (ProgramPlan::build checks it).
  void reset(const CorePlan& cp);
  bool active() const { return !first_.empty(); }
  void record(uint32_t instr, uint64_t ready, uint64_t complete) {
    uint32_t s = cur_;
    if (instr < first_[s] || instr >= first_[s + 1]) s = cur_ = find(instr);
    if (ready < ready_[s]) ready_[s] = ready;
    if (complete > end_[s]) end_[s] = complete;
  }

  // The profile of the recorded run (`r`: resolve_hw(hw)). Times convert to cycles as
  // (t - origin) / period.
  OpProfile profile(const CorePlan& cp, const HwConfig& hw, const ResolvedHw& r, uint64_t launch_cycles,
                    uint64_t end_cycles, uint64_t origin = 0, uint64_t period = 1) const;

 private:
  uint32_t find(uint32_t instr) const;
  const isa::CoreProgram* stream_ = nullptr;
  isa::StreamView view_;  // stream_'s instructions by stream index
  std::vector<uint32_t> first_;   // per segment: first instruction; one more: the stream's size
  std::vector<uint32_t> kernel_;  // per segment: its kernel table index, or UINT32_MAX (outside)
  std::vector<std::string> gap_name_;  // per segment outside the kernels: its name
  std::vector<uint64_t> ready_, end_;
  uint32_t cur_ = 0;
};

// Throws SimError when `stream`'s kernel table is not sorted, overlaps or leaves the stream.
void check_kernel_table(const std::string& core_name, const isa::CoreProgram& stream);

}  // namespace tpusim
