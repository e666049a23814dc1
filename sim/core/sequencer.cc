#include "sim/core/sequencer.h"

#include <algorithm>
#include <functional>

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
      issue("issue", 2),
      direct("direct", units - 4),
      sync("sync"),
      wake_("wake"),
      group_(this->name()),
      sync_track_(core_track(this->name(), ".sync")) {
  SC_HAS_PROCESS(Sequencer);
  stats_.declare(group_);
  SC_METHOD(step);
  sensitive << wake_;
  for (auto& port : issue) sensitive << port.data_read();
  dont_initialize();
}

void Sequencer::begin_run(const CorePlan* plan, const RunContext* run) {
  plan_ = plan;
  run_ = run;
  const size_t n = plan->unit.size();
  pending_.resize(n);
  for (uint32_t i = 0; i < n; ++i) pending_[i] = plan->deps.size(i);
  head_.assign(plan->queues.begin.size() - 1, 0);
  reached_.assign(n, 0);  // only barrier entries are used; keeps indexing trivial
  done_.assign(n, 0);
  arrived_.assign(n, 0);
  completions_.clear();
  completed_ = 0;
  last_completion_ps_ = run->start_ps + launch_cycles_ * run->clock.period_ps;
  stats_.reset(launch_cycles_);
  wake_.notify(run->clock.cycles(launch_cycles_));
}

uint64_t Sequencer::end_cycle() const {
  if (!run_) return 0;
  return (last_completion_ps_ - run_->start_ps) / run_->clock.period_ps;
}

void Sequencer::complete(uint32_t instr, const sc_time& delay) {
  completions_.emplace_back(sc_core::sc_time_stamp().value() + delay.value(), instr);
  std::push_heap(completions_.begin(), completions_.end(), std::greater<>());
  wake_.notify(delay);  // keeps the earliest of the pending notifications
}

void Sequencer::step() {
  if (!plan_) return;
  const uint64_t now = sc_core::sc_time_stamp().value();
  while (!completions_.empty() && completions_.front().first <= now) {
    std::pop_heap(completions_.begin(), completions_.end(), std::greater<>());
    const uint32_t i = completions_.back().second;
    completions_.pop_back();
    if (plan_->unit[i] == UnitIndex::kRecv && pending_[i] > 0) {
      arrived_[i] = 1;  // retired when its last dep completes (retire() below)
      continue;
    }
    retire(i);
  }
  dispatch();
  if (!completions_.empty()) wake_.notify(sc_time::from_value(completions_.front().first - now));
}

void Sequencer::retire(uint32_t i) {
  done_[i] = 1;
  ++completed_;
  last_completion_ps_ = std::max<uint64_t>(last_completion_ps_, sc_core::sc_time_stamp().value());
  const uint32_t* s = plan_->succs.row(i);
  for (uint32_t k = 0, n = plan_->succs.size(i); k < n; ++k) {
    // A recv whose data arrived earlier completes with its last dep: now, in this same step().
    if (--pending_[s[k]] == 0 && arrived_[s[k]]) complete(s[k], sc_core::SC_ZERO_TIME);
  }
  if (plan_->unit[i] == UnitIndex::kRecv) ++stats_.instructions;
  if (plan_->unit[i] == UnitIndex::kSync && run_->trace) {
    const uint64_t now = run_->now_cycle();
    run_->trace->complete({sync_track_.process, sync_track_.track, plan_->prog->instrs[i].label, reached_[i],
                           now - reached_[i], run_->clock_mhz, 0});
  }
}

void Sequencer::dispatch() {
  const uint32_t units = uint32_t(head_.size());
  for (uint32_t u = 0; u < units; ++u) {
    if (u == UnitIndex::kRecv) continue;  // nothing to issue: completed by their data's arrival
    const uint32_t* queue = plan_->queues.row(u);
    const uint32_t len = plan_->queues.size(u);
    uint32_t& h = head_[u];
    if (u == UnitIndex::kSync) {
      for (; h < len && pending_[queue[h]] == 0; ++h) {
        const uint32_t i = queue[h];
        reached_[i] = run_->now_cycle();
        ++stats_.instructions;
        ++stats_.barriers;
        sync->arrive(plan_->barrier_group[i], [this, i] { complete(i, sc_core::SC_ZERO_TIME); });
      }
      continue;
    }
    if (is_direct(u)) {
      sc_core::sc_port<IssueIf>& port = direct[direct_port_of(u)];
      for (; h < len && pending_[queue[h]] == 0; ++h) {
        port->issue(queue[h]);
        ++stats_.instructions;
      }
      continue;
    }
    sc_core::sc_fifo_out<uint32_t>& port = issue[fifo_port_of(u)];
    for (; h < len && pending_[queue[h]] == 0 && port->num_free() > 0; ++h) {
      port->nb_write(queue[h]);
      ++stats_.instructions;
    }
  }
}

std::string Sequencer::stuck_report() const {
  if (!plan_) return "";
  return plan_->plan->deadlock_report(plan_->slot, done_);
}

}  // namespace tpusim
