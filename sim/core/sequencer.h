// Sequencer: the core's instruction issue and scoreboard.
//
// Semantics (program.h): every unit queue is in order; the head of a queue starts when all its
// deps have completed and its unit is free.
//
// The scoreboard tracks, per instruction, how many deps have an unknown completion time and the
// latest known one (`ready`). Units report a completion time as soon as they know it, which is
// when they start an instruction (occupancy + latency), so most of a stream's timing is known
// long before simulation time gets there:
//  * Units that share nothing with other blocks (the MXU paths, the VPU) are issued to by an
//    interface call (IssueIf) as soon as their head's deps all have known completion times; they
//    start it at max(ready, unit free) and return its completion. No event, no wake-up: the same
//    start a unit process woken at `ready` would give.
//  * Units that share something (the DMA engines and the transfer queue: HBM, network) must act
//    at simulation time. The sequencer wakes up at their head's ready time and hands it over
//    through an sc_fifo; the unit starts it in its own process when free, reports its completion
//    (CompletionIf), and the sequencer propagates it at once.
//  * Barriers are issued to the slice's sync service (BarrierIf) at their ready time and complete
//    when every participant arrived. Receives are issued nowhere: the receiving core's transfer
//    unit reports the arrival of their data like a completion, and a kRecv completes at
//    max(deps completed, arrival).
// So the sequencer's method runs once per ready time of a DMA, transfer or barrier (and when a
// full issue queue frees up), not once per instruction.
// Launch: the first issue happens `sequencer.launch_cycles` after the run start; that constant
// stands for the host doorbell to first issue *and* the end-of-program completion signal, which
// are both charged up front so that the core's end is simply its last completion.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "sim/analysis/collective_stats.h"
#include "sim/analysis/op_profile.h"
#include "sim/analysis/program_plan.h"
#include "sim/base/core_ifs.h"
#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/core/sequencer_stats.h"

namespace tpusim {

class Sequencer : public sc_core::sc_module, public CompletionIf {
 public:
  // Queued units: port 0 = DMA (the main and the background DMA queue feed the same engines),
  // port 1 = transfer queue (the main and the background one feed the same channels), port 2 =
  // host queue (see fifo_port_of).
  sc_core::sc_vector<sc_core::sc_fifo_out<uint32_t>> issue;
  // Directly issued units: port 0 = VPU (main and background queue), then per MXU m: 1 + 2m
  // weights, 2 + 2m stream.
  sc_core::sc_vector<sc_core::sc_port<IssueIf>> direct;
  sc_core::sc_port<BarrierIf> sync;

  Sequencer(sc_core::sc_module_name name, uint32_t units);

  static bool is_direct(uint32_t unit) { return UnitIndex::is_vpu(unit) || unit >= UnitIndex::mxu_weights(0); }
  static constexpr uint32_t kFifoPorts = 3;
  static uint32_t fifo_port_of(uint32_t unit) { return UnitIndex::is_dma(unit) ? 0 : unit == UnitIndex::kHost ? 2 : 1; }
  static uint32_t direct_port_of(uint32_t unit) { return UnitIndex::is_vpu(unit) ? 0 : unit - UnitIndex::mxu_weights(0) + 1; }
  // Direct ports for a core with `units` queues (UnitIndex::count): the VPU and the MXU paths.
  static uint32_t direct_ports(uint32_t units) { return units - UnitIndex::mxu_weights(0) + 1; }

  void configure(uint64_t launch_cycles) { launch_cycles_ = launch_cycles; }
  // Arms the run: the first issue happens launch_cycles after the run start.
  void begin_run(const CorePlan* plan, const RunContext* run);
  void end_run() { stats_.total_cycles = end_cycle(); }

  bool finished() const { return !plan_ || completed_ == plan_->unit.size(); }
  // Cycles from the run start to the last completion (launch_cycles for an empty stream).
  uint64_t end_cycle() const;
  // For a deadlock report: the first instruction that never completed and why.
  std::string stuck_report() const;
  const StatGroup& stats() const { return group_; }
  // The op profile of the run (sim/analysis/op_profile.h): every instruction's ready and completion
  // time is recorded as it retires.
  OpProfile op_profile(const HwConfig& hw, const ResolvedHw& r) const {
    if (!plan_ || !run_) return {};
    return op_rec_.profile(*plan_, hw, r, launch_cycles_, end_cycle(), run_->start_ps, run_->clock.period_ps);
  }

  // The collective statistics of the run (sim/analysis/collective_stats.h), from the same times.
  CollectiveStats collective_stats(const HwConfig& hw) const {
    if (!plan_ || !run_) return {};
    return coll_rec_.stats(*plan_, hw, run_->clock.period_ps);
  }

  void complete(uint32_t instr, const sc_core::sc_time& delay) override;

 private:
  // The units acting at simulation time, in the order they are dispatched within one step.
  static constexpr uint32_t kTimedUnits[] = {UnitIndex::kDma, UnitIndex::kDmaAsync, UnitIndex::kXfer, UnitIndex::kXferAsync, UnitIndex::kHost,
                                             UnitIndex::kSync};

  void step();
  void resolve(uint32_t instr, uint64_t at_ps);  // the completion time of `instr` is known
  void drain();                                  // propagates known completions, issues direct units
  void retire(uint32_t instr, uint64_t at_ps);
  void dispatch_timed(uint64_t now_ps);
  void schedule_wake(uint64_t now_ps);
  bool head_ready(uint32_t unit, uint32_t& instr) const;  // the unit's head, all deps known
  void prefetch_instr(uint32_t instr) const;
  void mark(uint32_t unit) {
    if (dirty_[unit]) return;
    dirty_[unit] = 1;
    if (is_direct(unit)) dirty_direct_.push_back(unit);
  }

  uint64_t launch_cycles_ = 0;
  const CorePlan* plan_ = nullptr;
  const RunContext* run_ = nullptr;
  // The scoreboard, per instruction (one cache line serves several).
  struct Slot {
    uint64_t ready;    // latest known dep completion (kernel time, ps; the launch at least)
    uint32_t pending;  // deps whose completion time is unknown
    uint8_t done;      // its own completion time is known
    uint8_t arrived;   // kRecv: its data arrived (it may still wait for deps), at arrival_
  };
  std::vector<Slot> slots_;
  std::vector<uint64_t> arrival_;   // per kSend/kRecv (CorePlan::sends_recvs position): a kRecv's arrival (kernel time, ps)
  std::vector<uint32_t> head_;      // per unit: next position in its queue
  std::vector<uint64_t> reached_;   // per position in the sync queue: cycle the barrier was reached
  std::vector<std::pair<uint32_t, uint64_t>> known_;  // completions to propagate (instr, ps)
  std::vector<uint8_t> dirty_;      // per unit: its head may have become issuable ...
  std::vector<uint32_t> dirty_direct_;  // ... and those of them that are directly issued
  bool draining_ = false;
  bool in_step_ = false;
  size_t completed_ = 0;
  uint64_t last_completion_ps_ = 0;
  sc_core::sc_event wake_;
  // Dynamic sensitivity while a full issue queue blocks a ready head (built at first use: the
  // fifo events exist once the ports are bound).
  bool or_lists_built_ = false;
  // Index: bit p = issue queue p (fifo_port_of) full.
  sc_core::sc_event_or_list wake_or_read_[1u << kFifoPorts];
  OpProfileRecorder op_rec_;
  CollectiveRecorder coll_rec_;
  SequencerStats stats_;
  StatGroup group_;
  TraceNames sync_track_;
};

}  // namespace tpusim
