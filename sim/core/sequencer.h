// Sequencer: the core's instruction issue and scoreboard.
//
// Semantics (program.h): every unit queue is in order; the head of a queue is issued when all
// its deps have completed. Units that share something with other blocks (the DMA engines and the
// transfer queue: HBM, network) are fed through an sc_fifo and start the instruction in their own
// process when free; units that do not (the MXU paths, the VPU) are handed the instruction by an
// interface call (IssueIf) and compute its start themselves. Either way start = max(deps
// completed, unit free).
// Units report each completion time when they start an instruction (CompletionIf); the
// sequencer retires completions at their time and re-examines the queue heads. Barriers are
// issued to the slice's sync service (BarrierIf) and complete when every participant arrived.
// Receives are issued nowhere: the receiving core's transfer unit reports the arrival of their
// data like a completion, and the sequencer retires a kRecv once both its data arrived and its
// deps completed (so it completes at max(deps, arrival)).
// Launch: the first issue happens `sequencer.launch_cycles` after the run start; that constant
// stands for the host doorbell to first issue *and* the end-of-program completion signal, which
// are both charged up front so that the core's end is simply its last completion.
//
// One SystemC method, woken by completions (a timed event at the earliest pending completion)
// and by units taking instructions out of full queues.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/core/core_ifs.h"
#include "sim/core/sequencer_stats.h"
#include "sim/isa/program_plan.h"

namespace tpusim {

class Sequencer : public sc_core::sc_module, public CompletionIf {
 public:
  // Queued units: port 0 = DMA, port 1 = transfer queue (see fifo_port_of).
  sc_core::sc_vector<sc_core::sc_fifo_out<uint32_t>> issue;
  // Directly issued units: port 0 = VPU, then per MXU m: 1 + 2m weights, 2 + 2m stream.
  sc_core::sc_vector<sc_core::sc_port<IssueIf>> direct;
  sc_core::sc_port<BarrierIf> sync;

  Sequencer(sc_core::sc_module_name name, uint32_t units);

  static bool is_direct(uint32_t unit) { return unit == UnitIndex::kVpu || unit >= UnitIndex::mxu_weights(0); }
  static uint32_t fifo_port_of(uint32_t unit) { return unit == UnitIndex::kDma ? 0 : 1; }
  static uint32_t direct_port_of(uint32_t unit) { return unit == UnitIndex::kVpu ? 0 : unit - UnitIndex::mxu_weights(0) + 1; }

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

  void complete(uint32_t instr, const sc_core::sc_time& delay) override;

 private:
  void step();
  void retire(uint32_t instr);
  void dispatch();

  uint64_t launch_cycles_ = 0;
  const CorePlan* plan_ = nullptr;
  const RunContext* run_ = nullptr;
  std::vector<uint32_t> pending_;  // per instruction: deps not completed yet
  std::vector<uint32_t> head_;     // per unit: next position in its queue
  std::vector<uint64_t> reached_;  // per barrier instruction: cycle it was reached
  std::vector<uint8_t> done_;      // per instruction: completed
  std::vector<uint8_t> arrived_;   // per kRecv: its data arrived (it may still wait for deps)
  // Pending completions (kernel time in ps, instruction), a min-heap.
  std::vector<std::pair<uint64_t, uint32_t>> completions_;
  size_t completed_ = 0;
  uint64_t last_completion_ps_ = 0;
  sc_core::sc_event wake_;
  SequencerStats stats_;
  StatGroup group_;
  TraceNames sync_track_;
};

}  // namespace tpusim
