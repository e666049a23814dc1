#include "sim/engine/analytical_engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/analysis/program_plan.h"
#include "sim/base/clock.h"
#include "sim/base/sim_error.h"
#include "sim/cmem/cmem_stats.h"
#include "sim/engine/analytical_core.h"
#include "sim/engine/completion_store.h"
#include "sim/engine/network_counts.h"
#include "sim/engine/replica_classes.h"
#include "sim/engine/run_stats.h"
#include "sim/hbm/hbm_stats.h"
#include "sim/ici/ici_timing.h"
#include "sim/slice/barrier_groups.h"
#include "sim/vmem/vmem_check.h"
#include "sim/vmem/vmem_stats.h"

namespace tpusim {
namespace {

enum class Step { kDone, kArrived, kBlocked, kDeferred, kPaused };

class AnalyticalEngine final : public Engine {
 public:
  explicit AnalyticalEngine(const HwConfig& hw) : hw_(hw), r_(resolve_hw(hw)) {
    const ChipParams& chip = hw_.chip;
    launch_ = chip.core.sequencer.launch_cycles;
    setup_ = chip.core.dma.setup_cycles;
    latency_ = r_.hbm_latency_cycles;
    cmem_latency_ = r_.cmem_latency_cycles;
  }

  std::string_view name() const override { return "analytical"; }

  std::vector<uint32_t> simulated_cores(const isa::Program& program, bool trace) override {
    prepare(program, trace);
    return classes_.reps;
  }

  RunResult run(const isa::Program& program, TraceSink* trace) override {
    prepare(program, trace != nullptr);
    prepared_ = {};  // the next run prepares again
    const auto& cores = plan_.cores();
    states_.resize(cores.size());
    for (size_t c = 0; c < cores.size(); ++c)
      if (classes_.rep_of[c] != c && states_[c].plan) states_[c] = CoreState{};  // not simulated: no state
    times_.begin_run();
    uint64_t simulated = 0;
    for (uint32_t c : classes_.reps) {
      states_[c].vmem = check_vmem(hw_.chip.core.vmem, *cores[c].prog, cores[c].name + ".vmem");
      reset(states_[c], cores[c], trace);
      simulated += cores[c].unit.size();
    }
    count_barriers();
    network_.reset(hw_, r_);
    trace_ = trace;
    has_background_ = false;
    for (const CorePlan& cp : cores)
      has_background_ |= cp.queues.size(UnitIndex::kDmaAsync) + cp.queues.size(UnitIndex::kVpuAsync) + cp.queues.size(UnitIndex::kXferAsync) > 0;

    barriers_.reset(plan_.barrier_participants());
    ticker_.reset(simulated, &progress());

    // Rounds over the cores: each schedules, in stream order, everything whose inputs are known;
    // what waits for another core (a recv's data, a barrier's other participants) is kept and
    // retried when that core delivers. A round's sends and barrier arrivals take effect at its end
    // (deliver()), so no core sees what another did in the same round: the result does not depend
    // on the order of the cores (sim/README.md, "Scan order"). No progress and nothing delivered
    // in a round is a deadlock.
    const std::vector<uint32_t>& reps = classes_.reps;
    size_t finished = 0;
    std::vector<bool> done(reps.size(), false);
    auto round = [&](bool eager) {
      bool moved = false;
      for (size_t k = 0; k < reps.size(); ++k) {
        if (done[k]) continue;
        CoreState& s = states_[reps[k]];
        if (eager) s.dirty = true;  // rescan what the stop at a background wait skipped
        moved |= advance(s, eager);
        if (s.finished()) {
          done[k] = true;
          ++finished;
        }
      }
      return moved;
    };
    while (finished < reps.size()) {
      bool moved = round(false);
      if (!moved && has_background_) moved = round(true);
      if (deliver() || moved) continue;
      for (size_t k = 0; k < reps.size(); ++k) {
        if (done[k]) continue;
        throw SimError("program '" + program.name + "' deadlocked: " + plan_.deadlock_report(reps[k], done_flags(states_[reps[k]])));
      }
    }
    return finish(program);
  }

 private:
  // The plan of `program` and the cores to simulate: one per class of symmetric replicas
  // (sim/engine/replica_classes.h); every core when tracing (the trace draws each core) or when
  // the reduction is off. Kept from simulated_cores() for the run() of the same program: the same
  // object, unchanged (its streams where they were, as long as they were).
  void prepare(const isa::Program& program, bool trace) {
    const Prepared key = prepared_key(program, trace);
    if (key == prepared_) return;
    plan_.build(program, hw_);
    classes_ = trace || !replicas() ? every_core(plan_.cores().size()) : find_replica_classes(plan_, hw_);
    prepared_ = key;
  }
  struct Prepared {
    const isa::Program* program = nullptr;
    uint64_t fingerprint = 0;
    bool trace = false, replicas = false;
    bool operator==(const Prepared&) const = default;
  };
  Prepared prepared_key(const isa::Program& program, bool trace) const {
    uint64_t h = program.cores.size();
    for (const isa::CoreProgram& c : program.cores) {
      const uint64_t words[] = {uint64_t(reinterpret_cast<uintptr_t>(c.instrs.data())), c.instrs.size(), c.peers.size(),
                                uint64_t(int64_t(c.stream_of)), uint64_t(c.chip) << 32 | c.core, c.repeats.size()};
      for (uint64_t w : words) h = (h ^ w) * 0x100000001b3ull;
    }
    return {&program, h, trace, replicas()};
  }

  void reset(CoreState& s, const CorePlan& cp, TraceSink* trace) {
    s.plan = &cp;
    // reached and data_at are read only where arrived and has_data are set.
    times_.reset(s.times, uint32_t(cp.unit.size()));
    s.arrived.assign(cp.barriers.size(), 0);
    s.reached.resize(cp.barriers.size());
    s.has_data.assign(cp.sends_recvs.size(), 0);
    s.data_at.resize(cp.sends_recvs.size());
    s.blocked.assign(cp.queues.begin.size() - 1, 0);
    s.unscheduled.resize(cp.queues.begin.size() - 1);
    for (uint32_t u = 0; u < s.unscheduled.size(); ++u) s.unscheduled[u] = cp.queues.size(u);
    s.mxu_paths.assign(hw_.chip.core.mxu.count, MxuPaths{});
    s.vpu_unit.reset(hw_.chip.core.vpu, cp.queues.size(UnitIndex::kVpu), cp.queues.size(UnitIndex::kVpuAsync));
    const bool calendars = cp.queues.size(UnitIndex::kDmaAsync) > 0;
    s.engines.reset(hw_.chip.core.dma.engines, calendars);
    s.xfer_q.reset(hw_.chip.core.xfer.channels, XferChannels::stage_count(hw_));
    s.hbm.reset(r_, hw_.chip.core.dma.chunk_bytes, calendars);
    s.cmem.reset();
    s.pruned_at = 0;
    s.pending.clear();
    s.asleep.assign(cp.sends_recvs.size(), 0);
    s.woken.clear();
    s.routes.clear();
    s.passed.assign(cp.queues.begin.size() - 1, 0);
    s.scheduled = 0;
    s.main_reached = s.last_barrier = 0;
    s.cursor = 0;
    s.dirty = false;
    s.end = launch_;
    s.seq.reset(launch_);
    s.mxu.resize(hw_.chip.core.mxu.count);
    for (auto& m : s.mxu) m.reset(hw_.chip.core.mxu);
    s.vpu.reset();
    s.dma.reset(hw_.chip.core.dma.engines);
    s.xfer.reset(s.xfer_q.channels());  // the transfer queue's and the host queue's
    s.host.reset();
    if (trace) {
      s.process = "slice.chip" + std::to_string(cp.chip);
      s.prefix = "core" + std::to_string(cp.core);
    }
  }

  // Each simulated core's CoreState::barrier_counts: per barrier position, the groups an arrival
  // there counts in and for how many participants (its class's members at that position), among
  // the groups that have a simulated participant (only those are waited on).
  void count_barriers() {
    const auto& cores = plan_.cores();
    std::vector<uint8_t> waited(plan_.barrier_participants().size(), 0);
    for (uint32_t c : classes_.reps)
      for (uint32_t g : cores[c].barrier_group_at) waited[g] = 1;
    counts_.clear();
    for (const CorePlan& cp : cores)
      for (uint32_t b = 0; b < cp.barrier_group_at.size(); ++b)
        if (waited[cp.barrier_group_at[b]]) counts_.push_back({classes_.rep_of[cp.slot], b, cp.barrier_group_at[b]});
    std::sort(counts_.begin(), counts_.end());
    size_t k = 0;
    for (uint32_t c : classes_.reps) {  // ascending, as counts_
      CoreState& s = states_[c];
      const uint32_t n = uint32_t(cores[c].barrier_group_at.size());
      s.barrier_counts_begin.assign(n + 1, 0);
      s.barrier_counts.clear();
      for (uint32_t b = 0; b < n; ++b) {
        s.barrier_counts_begin[b] = uint32_t(s.barrier_counts.size());
        for (; k < counts_.size() && counts_[k][0] == c && counts_[k][1] == b; ++k) {
          if (s.barrier_counts.size() > s.barrier_counts_begin[b] && s.barrier_counts.back().first == counts_[k][2])
            ++s.barrier_counts.back().second;
          else
            s.barrier_counts.push_back({counts_[k][2], 1});
        }
      }
      s.barrier_counts_begin[n] = uint32_t(s.barrier_counts.size());
    }
  }

  static std::vector<uint8_t> done_flags(const CoreState& s) {
    std::vector<uint8_t> d(s.times.size());
    for (uint32_t i = 0; i < d.size(); ++i) d[i] = s.done(i);
    return d;
  }

  void emit(const std::string& process, const std::string& track, const isa::Instr& ins, uint64_t start, uint64_t dur,
            uint64_t bytes) {
    trace_->complete({process, track, ins.label, start, dur, hw_.chip.core.clock_mhz, bytes});
  }
  void emit(const CoreState& s, const std::string& track, const isa::Instr& ins, uint64_t start, uint64_t dur,
            uint64_t bytes) {
    emit(s.process, track, ins, start, dur, bytes);
  }
  // A bandwidth stage busy from `start` for bytes / rate (fractional), drawn like SystemC's
  // stages: both ends rounded to the nearest cycle.
  void emit_stage(uint32_t chip, const std::string& track, const isa::Instr& ins, uint64_t start, double rate) {
    const uint64_t end = std::max<uint64_t>(uint64_t(std::llround(double(start) + double(ins.bytes) / rate)), start);
    emit("slice.chip" + std::to_string(chip), track, ins, start, end - start, ins.bytes);
  }

  // Scans the core's stream: first the instructions kept from earlier scans, then the rest, in
  // stream order. An instruction that cannot be scheduled blocks the later ones of its queue
  // (queues are in order; receives have none). Returns whether anything was scheduled or a
  // barrier reached.
  // The scan stops once every queue that still has work is blocked: nothing later in the stream
  // can then be scheduled (its queue is blocked), and a later receive completes at the same time
  // whenever it is visited; its dependents come after it. Without this, a stream whose collectives
  // sit between its kernels (FSDP) rescans its whole remainder once per round of the cores.
  // Background work is placed roughly in time order with the main queues' (so that contended
  // intervals go first come, first served, as in SystemC): work that is ready after the time the
  // main queues have reached waits for them to get there (`defer`, try_schedule()), and while
  // background work waits for another core (a collective's receive), the main queues go on at
  // most kLookahead cycles past where they were: the scan then stops, which also keeps the
  // calendars of the shared units short. When the main queues cannot get to deferred work's time
  // (they wait for it, or have nothing left to place before it), it is placed at once. Unless
  // `eager`: run() retries a round that made no progress with `eager` scans, which do not stop
  // for waiting background work, before calling it a deadlock.
  bool advance(CoreState& s, bool eager) {
    bool stuck = false;
    bool moved = scan(s, eager, !eager, stuck);
    if (stuck) {  // the main queues cannot reach deferred work's time: place it now
      s.dirty = true;
      moved |= scan(s, eager, false, stuck);
    }
    return moved;
  }

  // One scan of advance(). `defer`: background work waits for the main queues to reach its ready
  // time (try_schedule); sets `stuck` when some did and the scan ended before they reached it.
  bool scan(CoreState& s, bool eager, bool defer, bool& stuck) {
    defer_ = defer;
    pause_at_ = UINT64_MAX;
    stuck = false;
    const uint32_t n = uint32_t(s.plan->unit.size());
    if (s.cursor == n && !s.dirty) return false;  // only another core can unblock what is kept
    s.dirty = false;
    std::fill(s.blocked.begin(), s.blocked.end(), 0);
    s.next_pending.clear();
    if (!s.woken.empty()) {  // receives whose data arrived since they were put to sleep
      std::sort(s.woken.begin(), s.woken.end());
      std::merge(s.pending.begin(), s.pending.end(), s.woken.begin(), s.woken.end(), std::back_inserter(s.next_pending));
      s.pending.swap(s.next_pending);
      s.next_pending.clear();
      s.woken.clear();
    }
    uint32_t active = 0, blocked = 0;  // queues with unscheduled work (receives have no queue)
    uint64_t deferred = UINT64_MAX;    // the earliest ready time of a deferred background instruction
    uint64_t horizon = UINT64_MAX;     // the scan stops once the main queues have reached it
    for (uint32_t u = 0; u < s.unscheduled.size(); ++u) active += u != UnitIndex::kRecv && s.unscheduled[u] > 0;
    bool moved = false;
    auto done_scanning = [&](bool result) {
      stuck = deferred != UINT64_MAX && s.main_reached < deferred;
      if (deferred != UINT64_MAX) s.dirty = true;  // rescan: the deferred work is due now or later
      return result;
    };
    auto visit = [&](uint32_t i) {
      const Step r = try_schedule(s, i);
      if (r == Step::kDone) {
        moved = true;
        return;
      }
      moved |= r == Step::kArrived;
      const uint32_t u = s.plan->unit[i];
      if (u == UnitIndex::kRecv && !s.has_data[s.plan->transfer_pos(i)]) {
        s.asleep[s.plan->transfer_pos(i)] = 1;  // until its send is scheduled (transfer())
      } else if (u == UnitIndex::kRecv || u == UnitIndex::kSync) {
        s.next_pending.push_back(i);
      }
      if (r == Step::kDeferred || r == Step::kPaused) {
        if (r == Step::kDeferred) {
          deferred = std::min(deferred, s.at);  // try_schedule() left its ready time there
          horizon = std::min(horizon, deferred);
          pause_at_ = deferred;
        }
        if (!s.blocked[u]) ++blocked;
        s.blocked[u] = 1;  // in order: what follows it in its queue waits too
        return;
      }
      if (u == UnitIndex::kRecv) return;
      if (u == UnitIndex::kSync && s.arrived[s.plan->barrier_pos(i)]) return;  // later barriers may be reached meanwhile
      if (!s.blocked[u]) ++blocked;
      s.blocked[u] = 1;
      if (!eager && UnitIndex::is_async(u)) horizon = std::min(horizon, s.main_reached + kLookahead);
    };
    // A queue's instruction when its queue is blocked: what visit() would do (kBlocked; only a
    // background queue's first such visit can lower the horizon: main_reached only grows).
    auto visit_queued = [&](uint32_t i) {
      const uint32_t u = s.plan->unit[i];
      if (!s.blocked[u]) return visit(i);
      if (!eager && UnitIndex::is_async(u)) horizon = std::min(horizon, s.main_reached + kLookahead);
    };
    auto all_blocked = [&] { return s.main_reached >= horizon || (active > 0 && blocked >= active); };
    // The kept instructions in stream order: the list, and the next of every queue until it is
    // blocked (a background queue's: one more, for the horizon).
    const uint32_t units = uint32_t(s.passed.size());
    s.cand.resize(units);
    s.noted.assign(units, 0);
    for (uint32_t u = 0; u < units; ++u) s.cand[u] = s.next_of(u);
    auto live = [&](uint32_t u) {
      if (u == UnitIndex::kRecv || u == UnitIndex::kSync || s.cand[u] >= s.passed[u]) return false;
      return !s.blocked[u] || (!eager && UnitIndex::is_async(u) && !s.noted[u]);
    };
    size_t k = 0;
    while (!all_blocked()) {
      uint32_t best = k < s.pending.size() ? s.pending[k] : UINT32_MAX;
      for (uint32_t u = 0; u < units; ++u)
        if (live(u)) best = std::min(best, s.plan->queues.row(u)[s.cand[u]]);
      if (best == UINT32_MAX) break;
      const uint32_t u = s.plan->unit[best];
      if (u == UnitIndex::kRecv || u == UnitIndex::kSync) {
        ++k;
        visit(best);
      } else {
        if (s.blocked[u]) s.noted[u] = 1;
        visit_queued(best);
        ++s.cand[u];
      }
    }
    if (all_blocked()) {
      s.next_pending.insert(s.next_pending.end(), s.pending.begin() + long(k), s.pending.end());
      s.pending.swap(s.next_pending);
      return done_scanning(moved);
    }
    const isa::Instr* instrs = s.plan->prog->instrs.data();
    const uint32_t* stored = s.plan->stored.empty() ? nullptr : s.plan->stored.data();
    while (s.cursor < n && !all_blocked()) {
      // The program is far larger than the caches: fetch ahead what try_schedule() will read.
      if (s.cursor + 8 < n) {
        const isa::Instr* ahead = instrs + (stored ? stored[s.cursor + 8] : s.cursor + 8);
        __builtin_prefetch(reinterpret_cast<const char*>(ahead));
        __builtin_prefetch(reinterpret_cast<const char*>(ahead) + 64);
      }
      const uint32_t i = s.cursor++;
      const uint32_t u = s.plan->unit[i];
      if (u == UnitIndex::kRecv || u == UnitIndex::kSync) {
        visit(i);
      } else {
        ++s.passed[u];
        visit_queued(i);
      }
    }
    s.pending.swap(s.next_pending);
    return done_scanning(moved);
  }

  Step try_schedule(CoreState& s, uint32_t i) {
    const CorePlan& cp = *s.plan;
    const uint32_t u = cp.unit[i];
    if (u != UnitIndex::kRecv && s.blocked[u]) return Step::kBlocked;
    uint64_t ready = launch_;
    for (uint32_t k = cp.deps.begin[i]; k < cp.deps.begin[i + 1]; ++k) {
      const uint32_t d = cp.deps.items[k];
      if (!s.done(d)) return Step::kBlocked;
      ready = std::max(ready, s.completion(d));
    }
    const isa::Instr& ins = cp.instr(i);
    // Background work ready after the time the main queues have reached waits until they reach it
    // (or have nothing left to place), so that contended intervals go first come, first served.
    // (A zero-work VPU block occupies nothing: it never waits.)
    if (UnitIndex::is_async(u) && defer_ && ready > s.main_reached && occupies(u, ins) && main_work_left(s)) {
      s.at = ready;  // not done: advance() reads it as the time to retry
      return Step::kDeferred;
    }
    // ... and main DMA or VPU work ready after deferred background work waits for it to be placed
    // first: the main queues count as having reached its ready time.
    if ((u == UnitIndex::kDma || u == UnitIndex::kVpu) && ready > pause_at_) {
      s.main_reached = std::max(s.main_reached, ready);
      return Step::kPaused;
    }
    Step progress = Step::kBlocked;
    switch (ins.op) {
      case isa::Op::kBarrier: {
        const uint32_t b = cp.barrier_pos(i);
        const uint32_t g = cp.barrier_group_at[b];
        if (!s.arrived[b]) {
          s.reached[b] = s.last_barrier = std::max(ready, s.last_barrier);
          s.arrived[b] = 1;
          ++s.seq.instructions;
          ++s.seq.barriers;
          progress = Step::kArrived;
          arrivals_.push_back({cp.slot, b, s.reached[b]});
        }
        if (!barriers_.complete(g)) return progress;
        s.at = barriers_.release(g);
        if (trace_) emit(s, s.prefix + ".sync", ins, s.reached[b], s.at - s.reached[b], 0);
        break;
      }
      case isa::Op::kRecv: {
        const uint32_t t = cp.transfer_pos(i);
        if (!s.has_data[t]) return Step::kBlocked;
        s.at = std::max(ready, s.data_at[t]);
        ++s.seq.instructions;
        break;
      }
      default:
        schedule(s, i, ins, ready);
        ++s.seq.instructions;
        break;
    }
    s.end = std::max(s.end, s.at);
    s.times.finish(i, s.at);
    ++s.scheduled;
    ticker_.tick();
    --s.unscheduled[u];
    return Step::kDone;
  }

  void schedule(CoreState& s, uint32_t i, const isa::Instr& ins, uint64_t ready) {
    const ChipParams& chip = hw_.chip;
    const uint32_t u = s.plan->unit[i];
    switch (ins.op) {
      case isa::Op::kMxuWeights: {
        const MxuPaths::Op o = s.mxu_paths[ins.mxu].weights(chip.core.mxu, ins, ready);
        s.at = o.done;
        s.main_reached = std::max(s.main_reached, o.start);
        s.mxu[ins.mxu].weights(o.cycles);
        if (trace_) emit(s, s.prefix + ".mxu" + std::to_string(ins.mxu) + ".weights", ins, o.start, o.cycles, 0);
        break;
      }
      case isa::Op::kMxuMatmul: {
        const MxuPaths::Op o = s.mxu_paths[ins.mxu].matmul(chip.core.mxu, ins, ready);
        s.at = o.done;
        s.main_reached = std::max(s.main_reached, o.start);
        s.mxu[ins.mxu].matmul(ins, o.cycles);
        if (trace_) emit(s, s.prefix + ".mxu" + std::to_string(ins.mxu), ins, o.start, o.cycles, 0);
        break;
      }
      case isa::Op::kVpu: {
        const VpuUnit::Block b = s.vpu_unit.place(u == UnitIndex::kVpuAsync, ready, ins.vpu, floor(s));
        if (u == UnitIndex::kVpu) s.main_reached = std::max(s.main_reached, b.start);
        s.at = b.done;
        s.vpu.block(ins.vpu, b.cycles);
        if (trace_) emit(s, s.prefix + ".vpu", ins, b.start, b.cycles, 0);
        break;
      }
      case isa::Op::kDmaLoad:
      case isa::Op::kDmaStore: {
        const bool background = u == UnitIndex::kDmaAsync;
        const bool in_cmem = ins.mem == isa::MemSpace::kCmem;
        const uint32_t q = background ? DmaEngines::kBackground : DmaEngines::kMain;
        const UnitPool::Pick p = s.engines.pick(q, ready, s.engines.calendars() ? dma_alone_cycles(r_, ins, in_cmem ? 0 : s.hbm.transfer_cycles(ins.bytes)) : 0);
        uint64_t end = p.start + setup_ + (in_cmem ? cmem_latency_ : latency_);  // zero bytes: no request
        if (ins.bytes > 0 && in_cmem) {
          const CmemServer::Service sv = s.cmem.serve(r_, p.start + setup_, ins.bytes);
          end = sv.begin + sv.cycles + cmem_latency_;
          if (trace_) emit(s, "cmem." + s.prefix, ins, sv.begin, sv.cycles, ins.bytes);
        } else if (ins.bytes > 0) {
          const HbmServer::Service sv = s.hbm.serve_dma(p.start + setup_, ins.bytes);
          end = sv.begin + sv.cycles + latency_;
          if (trace_) emit(s, "hbm." + s.prefix, ins, sv.begin, sv.cycles, ins.bytes);
        }
        s.at = end;
        if (!background) s.main_reached = std::max(s.main_reached, p.start);
        s.engines.hold(q, p, end);
        if (s.engines.calendars()) prune_calendars(s);
        s.dma.transfer(ins, end - p.start);
        if (trace_) emit(s, s.prefix + ".dma" + std::to_string(p.unit), ins, p.start, end - p.start, ins.bytes);
        break;
      }
      case isa::Op::kSend:
      case isa::Op::kHostLoad:
      case isa::Op::kHostStore: transfer(s, i, ins, ready); break;
      case isa::Op::kBarrier:
      case isa::Op::kRecv: break;  // handled by try_schedule()
    }
  }

  // The end of a round: the sends placed in it reach their receivers, in an order that does not
  // depend on the order of the cores (receiver, arrival, receive position: a receiver's writes
  // reserve its HBM calendar in that order), then its barrier arrivals count. Returns whether
  // there was anything to deliver.
  bool deliver() {
    if (outbox_.empty() && arrivals_.empty()) return false;
    std::sort(outbox_.begin(), outbox_.end(), [](const Delivery& a, const Delivery& b) {
      return std::tie(a.dst, a.delivered, a.pos) < std::tie(b.dst, b.delivered, b.pos);
    });
    for (const Delivery& d : outbox_) {
      CoreState& dst = states_[d.dst];
      dst.has_data[d.pos] = 1;
      if (dst.asleep[d.pos]) {
        dst.asleep[d.pos] = 0;
        dst.woken.push_back(dst.plan->sends_recvs[d.pos]);
      }
      dst.data_at[d.pos] = d.delivered;
      // A destination whose HBM is a calendar reserves the write (as SystemC's posted writes queue).
      if (dst.hbm.calendars() && d.bytes > 0) dst.data_at[d.pos] = dst.hbm.reserve_write(d.delivered, d.bytes, floor(dst));
      dst.dirty = true;
      dst.xfer.received(d.bytes, true);
      if (d.bytes > 0 && dst.hbm.calendars()) dst.hbm.account(d.bytes);
      if (d.bytes > 0 && !dst.hbm.calendars()) dst.hbm.serve_write(d.delivered, d.bytes);
    }
    outbox_.clear();
    for (const Arrival& a : arrivals_) {
      const CoreState& s = states_[a.slot];
      for (uint32_t k = s.barrier_counts_begin[a.barrier]; k < s.barrier_counts_begin[a.barrier + 1]; ++k)
        if (barriers_.arrive(s.barrier_counts[k].first, a.at, s.barrier_counts[k].second))
          for (uint32_t c : classes_.reps) states_[c].dirty = true;  // the others waiting in it are released
    }
    arrivals_.clear();
    return true;
  }

  bool occupies(uint32_t u, const isa::Instr& ins) const {
    return u != UnitIndex::kVpuAsync || VpuUnit::occupies(hw_.chip.core.vpu, ins.vpu);
  }
  // How far back background work may still be placed (kLookahead).
  static uint64_t floor(const CoreState& s) { return s.main_reached > kLookahead ? s.main_reached - kLookahead : 0; }
  static bool main_work_left(const CoreState& s) {
    for (uint32_t u = 0; u < s.unscheduled.size(); ++u)
      if (s.unscheduled[u] > 0 && (u == UnitIndex::kDma || u == UnitIndex::kVpu || u >= UnitIndex::mxu_weights(0))) return true;
    return false;
  }

  // No later DMA or HBM request starts before the last start of a queue that still has work.
  void prune_calendars(CoreState& s) {
    auto size = [&] { return s.hbm.calendar_size() + s.engines.calendar_size(); };
    if (size() < 2 * s.pruned_at + 256) return;
    uint64_t frontier = UINT64_MAX;
    if (s.unscheduled[UnitIndex::kDma] > 0) frontier = std::min(frontier, s.engines.last_start(DmaEngines::kMain));
    if (s.unscheduled[UnitIndex::kDmaAsync] > 0)
      frontier = std::min(frontier, std::max(s.engines.last_start(DmaEngines::kBackground), floor(s)));
    if (s.unscheduled[UnitIndex::kXfer] > 0) frontier = std::min(frontier, std::max(s.xfer_q.last_start(0), floor(s)));
    if (s.unscheduled[UnitIndex::kXferAsync] > 0) frontier = std::min(frontier, std::max(s.xfer_q.last_start(2), floor(s)));
    if (s.unscheduled[UnitIndex::kHost] > 0) frontier = std::min(frontier, std::max(s.xfer_q.last_start(1), floor(s)));
    s.hbm.prune(frontier);
    s.engines.prune(frontier);
    s.pruned_at = size();
  }

  // The core's route to `peer_chip` with the estimate for a message of `bytes` (sim/ici/
  // ici_timing.h), kept per core: a collective sends thousands of pieces to a few peers, and
  // computing the path (coordinates by division, one allocation) per piece took several percent
  // of a full-pod simulation.
  Route& route_to(CoreState& s, uint32_t peer_chip, uint64_t bytes) {
    Route* r = nullptr;
    for (Route& x : s.routes)
      if (x.peer_chip == peer_chip) {
        r = &x;
        break;
      }
    if (!r) {
      r = &s.routes.emplace_back();
      r->peer_chip = peer_chip;
      r->stage = XferChannels::first_stage(hw_, isa::Op::kSend, s.plan->chip, peer_chip);
      if (peer_chip != s.plan->chip) r->path = ici_path(hw_.slice.topology, s.plan->chip, peer_chip);
      r->bytes = ~bytes;
    }
    if (r->bytes != bytes) {
      r->estimate = send_estimate(hw_, r_, s.plan->chip, peer_chip, bytes);
      r->bytes = bytes;
    }
    return *r;
  }

  // kSend / kHostLoad / kHostStore on the core's transfer queue (sim/xfer/xfer_channels.h: its
  // channel, and the first stage it streams through), with the contention-free formulas of
  // sim/ici/ici_timing.h; the source read is served by the core's HBM server (sim/hbm/
  // hbm_server.h). Contention between cores and along the path is not modelled.
  void transfer(CoreState& s, uint32_t i, const isa::Instr& ins, uint64_t ready) {
    const CorePlan& cp = *s.plan;
    const bool send = ins.op == isa::Op::kSend, load = ins.op == isa::Op::kHostLoad;
    const uint32_t peer_chip = send ? cp.peer(i).chip : cp.chip;
    const Route* route = send ? &route_to(s, peer_chip, ins.bytes) : nullptr;
    const TransferEstimate e = send ? route->estimate : host_transfer_estimate(hw_, r_, load, ins.bytes, ins.dcn);
    const uint32_t q = XferChannels::queue_of(ins.op, ins.async);
    const UnitPool::Pick p = s.xfer_q.pick(q, ready);
    const uint64_t t0 = p.start + e.setup_cycles;
    uint64_t flow = t0;  // the first byte leaves the source
    if (!load && ins.bytes > 0) {
      const HbmServer::Service sv = s.hbm.serve_read(t0, ins.bytes);
      if (trace_) emit(s, "hbm." + s.prefix, ins, sv.begin, sv.cycles, ins.bytes);
      flow = sv.begin;
    }
    if (!load) flow += e.read_cycles;
    const uint32_t stage = send ? route->stage : XferChannels::first_stage(hw_, ins.op, cp.chip, peer_chip);
    flow = s.xfer_q.stream_after(q, stage, flow);
    const uint64_t injected = flow + e.stream_cycles;
    const uint64_t delivered = injected + e.path_cycles;
    s.xfer_q.injected(q, p, stage, injected);
    s.at = delivered;
    s.xfer.transfer(ins, injected - p.start);
    if (trace_) emit(s, s.prefix + ".xfer" + std::to_string(p.unit), ins, p.start, injected - p.start, ins.bytes);

    // What the links, the NoC, PCIe and the hosts carried is counted for every core when the run
    // ends (count_network()): it does not depend on timing.
    if (send) {
      const uint32_t t = cp.transfer_pos(i);
      // To the receiver's class representative, at the receive's position: it stands for every
      // member, each of which receives the same from a member of this core's class.
      outbox_.push_back({classes_.rep_of[cp.peer_slot(t)], cp.match_pos_at[t], delivered, ins.bytes});
      if (!trace_) return;
      if (cp.chip == peer_chip) {
        emit_stage(cp.chip, "noc", ins, flow, e.bytes_per_cycle);
      } else {
        uint64_t at = flow;
        for (const IciHop& h : route->path) {
          emit_stage(h.chip, "ici." + ici_port_name(h.port), ins, at, e.bytes_per_cycle);
          at += r_.ici_hop_cycles;
        }
      }
      return;
    }
    if (trace_) emit_stage(cp.chip, load ? "pcie.h2d" : "pcie.d2h", ins, flow, e.bytes_per_cycle);
    s.host.pcie_packets[load ? 0 : 1] += network_packets(hw_.chip, ins.bytes);
    if (load) {
      ++s.host.host.loads;
      s.host.host.load_bytes += ins.bytes;
      if (ins.bytes > 0) s.hbm.account(ins.bytes);
    } else if (ins.dcn) {
      ++s.host.host.dcn_sends;
      s.host.host.dcn_bytes += ins.bytes;
      s.host.dcn_packets += network_packets(hw_.chip, ins.bytes);
    } else {
      ++s.host.host.stores;
      s.host.host.store_bytes += ins.bytes;
    }
  }

  RunResult finish(const isa::Program& program) {
    RunResult r;
    const auto& cores = plan_.cores();
    const uint32_t chips = hw_.slice.chips();
    std::vector<HbmStats> hbm(chips);
    std::vector<CmemStats> cmem(chips);
    std::vector<bool> active(chips, false);
    for (uint32_t c = 0; c < chips; ++c) hbm[c].reset(hw_.chip.core.clock_mhz, hw_.chip.hbm.bandwidth_gbyte_per_s);
    for (uint32_t c = 0; c < chips; ++c)
      cmem[c].reset(hw_.chip.core.clock_mhz, has_cmem(hw_.chip) ? hw_.chip.cmem->bandwidth_gbyte_per_s : 0.0);
    network_.count(plan_, classes_, [&](uint32_t slot) -> const HostTransfers& { return states_[slot].host; });
    for (size_t c = 0; c < cores.size(); ++c) {
      CoreState& s = states_[classes_.rep_of[c]];  // a class member's figures are its representative's
      const CorePlan& cp = cores[c];
      s.seq.total_cycles = s.end;
      for (auto& m : s.mxu) m.run_cycles = s.end;
      s.vpu.run_cycles = s.dma.run_cycles = s.xfer.run_cycles = s.end;
      r.cores.push_back({cp.chip, cp.core, s.end});
      r.device_cycles = std::max(r.device_cycles, s.end);
      HbmStats& h = hbm[cp.chip];
      active[cp.chip] = true;
      h.bytes += s.hbm.bytes;
      h.requests += s.hbm.requests;
      h.busy_cycles += s.hbm.busy_cycles;
      h.run_cycles = std::max(h.run_cycles, s.end);
      CmemStats& m = cmem[cp.chip];
      m.bytes += s.cmem.bytes;
      m.transfers += s.cmem.transfers;
      m.busy_cycles += s.cmem.busy_cycles;
      m.run_cycles = std::max(m.run_cycles, s.end);

      auto dump = [&](const std::string& block, auto&& declare) {
        StatGroup g(cp.name + "." + block);
        declare(g);
        r.stats[g.name()] = g.dump();
      };
      dump("sequencer", [&](StatGroup& g) { s.seq.declare(g); });
      for (size_t m = 0; m < s.mxu.size(); ++m) dump("mxu" + std::to_string(m), [&](StatGroup& g) { s.mxu[m].declare(g); });
      dump("vpu", [&](StatGroup& g) { s.vpu.declare(g); });
      dump("vmem", [&](StatGroup& g) { declare_vmem_stats(g, &s.vmem); });
      dump("dma", [&](StatGroup& g) { s.dma.declare(g); });
      if (cp.has_transfers) dump("xfer", [&](StatGroup& g) { s.xfer.declare(g); });
    }
    for (uint32_t c = 0; c < chips; ++c) {
      if (!active[c]) continue;
      StatGroup g("slice.chip" + std::to_string(c) + ".hbm");
      hbm[c].declare(g);
      r.stats[g.name()] = g.dump();
      if (!cmem[c].used()) continue;
      StatGroup m("slice.chip" + std::to_string(c) + ".cmem");
      cmem[c].declare(m);
      r.stats[m.name()] = m.dump();
    }
    network_.dump(r);
    // Op profile and collective statistics of the core that finished last (sim/analysis/op_profile.h,
    // sim/analysis/collective_stats.h): every instruction from its ready time (the latest completion
    // of its deps, the launch at least) to its completion.
    for (size_t c = 0; c < cores.size(); ++c) {
      const CoreState& s = states_[classes_.rep_of[c]];
      if (s.end != r.device_cycles) continue;
      const CorePlan& cp = cores[c];
      OpProfileRecorder prof;
      if (op_profile()) prof.reset(cp);
      CollectiveRecorder coll;
      coll.reset(cp);
      for (uint32_t i = 0, n = uint32_t(cp.unit.size()); i < n; ++i) {
        uint64_t ready = launch_;
        const uint32_t* d = cp.deps.row(i);
        for (uint32_t k = 0, m = cp.deps.size(i); k < m; ++k) ready = std::max(ready, s.completion(d[k]));
        if (prof.active()) prof.record(i, ready, s.completion(i));
        coll.record(i, ready, s.completion(i));
      }
      if (op_profile()) r.op_profile = prof.profile(cp, hw_, r_, launch_, s.end);
      r.collectives = coll.stats(cp, hw_);
      break;
    }
    r.device_time_s = Clock{hw_.chip.core.clock_mhz}.seconds(r.device_cycles);
    r.simulated_cores = uint32_t(classes_.reps.size());
    add_run_stats(r, plan_.instructions());
    (void)program;
    trace_ = nullptr;
    return r;
  }

  HwConfig hw_;
  ResolvedHw r_;
  uint64_t launch_ = 0, setup_ = 0, latency_ = 0, cmem_latency_ = 0;
  ProgramPlan plan_;
  std::vector<CoreState> states_;
  BarrierGroups barriers_;
  // What a round placed for other cores, delivered at its end (deliver()).
  struct Delivery {
    uint32_t dst = 0, pos = 0;  // the receiver's slot and its recv's position in sends_recvs
    uint64_t delivered = 0, bytes = 0;
  };
  struct Arrival {
    uint32_t slot = 0, barrier = 0;  // the core and its barrier's position
    uint64_t at = 0;
  };
  std::vector<Delivery> outbox_;
  ReplicaClasses classes_;                        // the cores simulated, and whom each stands for
  Prepared prepared_;                             // what plan_ and classes_ were prepared for
  std::vector<std::array<uint32_t, 3>> counts_;  // count_barriers() scratch: class, barrier position, group
  std::vector<Arrival> arrivals_;
  CompletionStore times_;  // CoreState::times of every core
  ProgressTicker ticker_;
  NetworkCounts network_;  // what the links, NoC, PCIe and hosts carried
  // How far (cycles) the main queues run ahead of background work waiting for another core, and
  // how far back a background placement may reach into the shared units' calendars: ~4 µs, a
  // fraction of a collective piece's transfer. An approximation of the engine, not of the
  // hardware, that bounds its memory and time: a longer lookahead revisits more waiting
  // collective instructions per round (2^16: an FSDP step on 32 cores simulates 4x slower).
  // Overlapped steps depend on it: 2^10..2^12 agree with SystemC within 3.4% on the steps of
  // tests/compiler/overlap_test.cc and the FSDP example; 2^16 is as close on the former but 19%
  // off on the latter (docs/training.md).
  static constexpr uint64_t kLookahead = 1u << 12;
  TraceSink* trace_ = nullptr;
  bool has_background_ = false;  // some core has background (async) instructions
  bool defer_ = false;           // the current scan defers background work (scan())
  uint64_t pause_at_ = UINT64_MAX;  // ... the earliest ready time of what it deferred
};

}  // namespace

std::unique_ptr<Engine> make_analytical_engine(const HwConfig& hw) { return std::make_unique<AnalyticalEngine>(hw); }

}  // namespace tpusim
