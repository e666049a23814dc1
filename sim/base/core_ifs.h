// Interfaces between a TensorCore's sequencer, its units and the slice-level barrier service.
// Timing style (STYLE rule 2): untimed interface-method calls carrying explicit times (a delay
// from now, or an absolute kernel time where the interface says so).
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
// itself (an MXU path, the VPU) as soon as it is the head of its queue and the completion times
// of all its deps are known, with `ready_ps`, the latest of them (kernel time in ps, >= now). The
// unit starts it at max(ready, unit free) — exactly the start a queue + unit process woken at
// `ready` would give — and returns its completion time (kernel time in ps): the unit needs no
// queue, no process and no event of its own, and the sequencer no wake-up per instruction.
class IssueIf : public virtual sc_core::sc_interface {
 public:
  virtual uint64_t issue(uint32_t instr, uint64_t ready_ps) = 0;
};

// Cross-core barriers. A core calls arrive() when it reaches its barrier of group `group`;
// `release` is called (in simulation context, at the time of the last arrival) once every
// participant has arrived.
class BarrierIf : public virtual sc_core::sc_interface {
 public:
  virtual void arrive(uint32_t group, std::function<void()> release) = 0;
};

}  // namespace tpusim
