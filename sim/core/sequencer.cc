#include "sim/core/sequencer.h"

#include <algorithm>

namespace tpusim {

using sc_core::sc_time;

namespace {

// Barrier waits are drawn on the core's "coreN.sync" track: the sequencer's parent + suffix.
TraceNames core_track(const std::string& sequencer, const char* suffix) {
  return TraceNames::of(sequencer.substr(0, sequencer.rfind('.')), suffix);
}

}  // namespace

Sequencer::Sequencer(sc_core::sc_module_name name, uint32_t units)
    : sc_module(name),
      issue("issue", kFifoPorts),
      direct("direct", direct_ports(units)),
      sync("sync"),
      wake_("wake"),
      group_(this->name()),
      sync_track_(core_track(this->name(), ".sync")) {
  SC_HAS_PROCESS(Sequencer);
  stats_.declare(group_);
  SC_METHOD(step);
  sensitive << wake_;
  dont_initialize();
}

void Sequencer::begin_run(const CorePlan* plan, const RunContext* run) {
  plan_ = plan;
  run_ = run;
  const size_t n = plan->unit.size();
  const uint64_t launch_ps = run->start_ps + launch_cycles_ * run->clock.period_ps;
  slots_.resize(n);
  for (uint32_t i = 0; i < n; ++i) slots_[i] = Slot{launch_ps, plan->deps.size(i), 0, 0};
  head_.assign(plan->queues.begin.size() - 1, 0);
  reached_.assign(plan->queues.size(UnitIndex::kSync), 0);
  arrival_.resize(plan->sends_recvs.size());  // per kSend/kRecv; read only where a slot says arrived
  known_.clear();
  const uint32_t units = uint32_t(plan->queues.begin.size() - 1);
  dirty_.assign(units, 0);
  dirty_direct_.clear();
  for (uint32_t u = 0; u < units; ++u) mark(u);  // the first step issues every head without deps
  draining_ = in_step_ = false;
  completed_ = 0;
  last_completion_ps_ = launch_ps;
  op_rec_.reset(*plan);
  coll_rec_.reset(*plan);
  stats_.reset(launch_cycles_);
  wake_.notify(run->clock.cycles(launch_cycles_));
}

uint64_t Sequencer::end_cycle() const {
  if (!run_) return 0;
  return (last_completion_ps_ - run_->start_ps) / run_->clock.period_ps;
}

// From the DMA, the transfer unit (its own transfers and arriving receives) and the sync service.
void Sequencer::complete(uint32_t i, const sc_time& delay) {
  const uint64_t now = sc_core::sc_time_stamp().value();
  uint64_t at = now + delay.value();
  if (plan_->unit[i] == UnitIndex::kRecv) {
    if (slots_[i].pending > 0) {  // completes with its last dep (retire() below)
      slots_[i].arrived = 1;
      arrival_[plan_->transfer_pos(i)] = at;
      return;
    }
    at = std::max(at, slots_[i].ready);
  }
  known_.emplace_back(i, at);
  if (in_step_) {
    // A barrier released by our own arrival: propagated in the next delta cycle, as a completion
    // reported with zero delay always was.
    wake_.notify(sc_core::SC_ZERO_TIME);
    return;
  }
  drain();
  schedule_wake(now);
}

void Sequencer::step() {
  if (!plan_) return;
  const uint64_t now = sc_core::sc_time_stamp().value();
  in_step_ = true;
  drain();
  dispatch_timed(now);
  schedule_wake(now);
  in_step_ = false;
}

void Sequencer::drain() {
  if (draining_) return;
  draining_ = true;
  for (;;) {
    while (!known_.empty()) {
      const auto [i, at] = known_.back();
      known_.pop_back();
      retire(i, at);
    }
    if (dirty_direct_.empty()) break;
    while (!dirty_direct_.empty()) {
      const uint32_t u = dirty_direct_.back();
      dirty_direct_.pop_back();
      dirty_[u] = 0;
      IssueIf* unit = direct[direct_port_of(u)].operator->();
      const uint32_t* queue = plan_->queues.row(u);
      const uint32_t len = plan_->queues.size(u);
      uint32_t h = head_[u];
      for (; h < len && slots_[queue[h]].pending == 0; ++h) {
        const uint32_t i = queue[h];
        known_.emplace_back(i, unit->issue(i, slots_[i].ready));
      }
      stats_.instructions += h - head_[u];
      head_[u] = h;
      if (h + 1 < len) prefetch_instr(queue[h + 1]);
    }
  }
  draining_ = false;
}

void Sequencer::retire(uint32_t i, uint64_t at) {
  slots_[i].done = 1;
  ++completed_;
  if (run_->ticker) run_->ticker->tick();
  last_completion_ps_ = std::max(last_completion_ps_, at);
  if (op_rec_.active()) op_rec_.record(i, slots_[i].ready, at);
  coll_rec_.record(i, slots_[i].ready, at);
  const uint32_t u = plan_->unit[i];
  if (u == UnitIndex::kRecv) ++stats_.instructions;
  if (u == UnitIndex::kSync && run_->trace) {
    const uint32_t* queue = plan_->queues.row(u);
    const uint64_t reached = reached_[std::lower_bound(queue, queue + plan_->queues.size(u), i) - queue];
    const uint64_t now = run_->cycle_of_ps(at);
    run_->trace->complete({sync_track_.process, sync_track_.track, plan_->instr(i).label, reached,
                           now - reached, run_->clock_mhz, 0});
  }
  const uint32_t* s = plan_->succs.row(i);
  for (uint32_t k = 0, n = plan_->succs.size(i); k < n; ++k) {
    const uint32_t j = s[k];
    Slot& sj = slots_[j];
    if (at > sj.ready) sj.ready = at;
    if (--sj.pending > 0) continue;
    const uint32_t uj = plan_->unit[j];
    if (uj != UnitIndex::kRecv) {
      mark(uj);
    } else if (sj.arrived) {  // its data arrived before its last dep completed
      known_.emplace_back(j, std::max(arrival_[plan_->transfer_pos(j)], sj.ready));
    }
  }
}

// A unit reads an instruction when it takes it; the program is far larger than the caches, so
// the sequencer starts fetching the next one of a queue ahead of time.
void Sequencer::prefetch_instr(uint32_t i) const {
  const char* p = reinterpret_cast<const char*>(&plan_->instr(i));
  __builtin_prefetch(p);
  __builtin_prefetch(p + 64);
}

bool Sequencer::head_ready(uint32_t u, uint32_t& instr) const {
  const uint32_t h = head_[u];
  if (h >= plan_->queues.size(u)) return false;
  instr = plan_->queues.row(u)[h];
  return slots_[instr].pending == 0;
}

// The DMA and transfer queues take their heads at the time their deps complete (the unit starts
// them when free); barriers are reached then.
void Sequencer::dispatch_timed(uint64_t now) {
  for (uint32_t u : kTimedUnits) {
    const uint32_t* queue = plan_->queues.row(u);
    const uint32_t len = plan_->queues.size(u);
    uint32_t& h = head_[u];
    if (u == UnitIndex::kSync) {
      for (; h < len && slots_[queue[h]].pending == 0 && slots_[queue[h]].ready <= now; ++h) {
        const uint32_t i = queue[h];
        reached_[h] = run_->cycle_of_ps(now);
        ++stats_.instructions;
        ++stats_.barriers;
        sync->arrive(plan_->barrier_group(i), [this, i] { complete(i, sc_core::SC_ZERO_TIME); });
      }
      continue;
    }
    sc_core::sc_fifo_out<uint32_t>& port = issue[fifo_port_of(u)];
    const uint32_t from = h;
    for (; h < len && slots_[queue[h]].pending == 0 && slots_[queue[h]].ready <= now && port->num_free() > 0; ++h) {
      port->nb_write(queue[h]);
      ++stats_.instructions;
    }
    if (h != from && h < len) prefetch_instr(queue[h]);  // the unit reads it when it takes it
  }
}

// Wakes up at the earliest ready time of a DMA, transfer or barrier head. Outside step(), a head
// ready now is dispatched in the next delta cycle; at the end of step(), a head ready now waits
// for room in its issue queue: wake up also when the unit takes an instruction out of it.
void Sequencer::schedule_wake(uint64_t now) {
  uint64_t next = UINT64_MAX;
  uint32_t full = 0;  // bit p: issue queue p
  for (uint32_t u : kTimedUnits) {
    uint32_t i;
    if (!head_ready(u, i)) continue;
    const uint64_t t = slots_[i].ready;
    if (t > now) {
      next = std::min(next, t);
    } else if (!in_step_ || u == UnitIndex::kSync) {
      next = now;
    } else {
      full |= 1u << fifo_port_of(u);
    }
  }
  if (next == now) {
    wake_.notify(sc_core::SC_ZERO_TIME);
  } else if (next != UINT64_MAX) {
    wake_.notify(sc_time::from_value(next - now));
  }
  if (full) {
    if (!or_lists_built_) {
      for (uint32_t m = 1; m < (1u << kFifoPorts); ++m) {
        wake_or_read_[m] |= wake_;
        for (uint32_t p = 0; p < kFifoPorts; ++p)
          if (m & (1u << p)) wake_or_read_[m] |= issue[p]->data_read_event();
      }
      or_lists_built_ = true;
    }
    sc_core::next_trigger(wake_or_read_[full]);
  }
}

std::string Sequencer::stuck_report() const {
  if (!plan_) return "";
  std::vector<uint8_t> done(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) done[i] = slots_[i].done;
  return plan_->plan->deadlock_report(plan_->slot, done);
}

}  // namespace tpusim
