// Interfaces between a TensorCore's sequencer, its units and the slice-level barrier service.
// Timing style (STYLE rule 2): untimed interface-method calls carrying an explicit delay; the
// caller is always a SystemC process at the current simulation time.
#pragma once
#include <cstdint>
#include <functional>

#include <systemc>

namespace tpusim {

// A unit reports to its core's sequencer (the scoreboard) when an instruction completes. The unit
// knows the completion time when it starts the instruction (occupancy + latency), so it reports
// it once, with the delay from now: a whole number of cycles.
class CompletionIf : public virtual sc_core::sc_interface {
 public:
  virtual void complete(uint32_t instr, const sc_core::sc_time& delay) = 0;
};

// The sequencer hands an instruction to an in-order unit that contends with nothing outside
// itself (an MXU path, the VPU) at the time its deps completed, in queue order. The unit starts it
// at max(now, unit free) — exactly the start a queue + unit process would give — and reports its
// completion at once, so it needs no queue and no activation of its own.
class IssueIf : public virtual sc_core::sc_interface {
 public:
  virtual void issue(uint32_t instr) = 0;
};

// Cross-core barriers. A core calls arrive() when it reaches its barrier of group `group`;
// `release` is called (in simulation context, at the time of the last arrival) once every
// participant has arrived.
class BarrierIf : public virtual sc_core::sc_interface {
 public:
  virtual void arrive(uint32_t group, std::function<void()> release) = 0;
};

}  // namespace tpusim
