#include "sim/engine/analytical_engine.h"

#include <algorithm>
#include <string>
#include <vector>

#include "sim/base/clock.h"
#include "sim/base/sim_error.h"
#include "sim/core/sequencer_stats.h"
#include "sim/dma/dma_stats.h"
#include "sim/engine/hw_check.h"
#include "sim/engine/run_stats.h"
#include "sim/hbm/hbm_stats.h"
#include "sim/hbm/hbm_timing.h"
#include "sim/isa/program_plan.h"
#include "sim/mxu/mxu_stats.h"
#include "sim/mxu/mxu_timing.h"
#include "sim/vmem/vmem_check.h"
#include "sim/vmem/vmem_stats.h"
#include "sim/vpu/vpu_stats.h"
#include "sim/vpu/vpu_timing.h"

namespace tpusim {
namespace {

struct CoreState {
  const CorePlan* plan = nullptr;
  std::vector<uint64_t> complete;     // per instruction: completion cycle
  std::vector<uint64_t> unit_free;    // per unit queue: end of its current occupancy
  std::vector<uint64_t> engine_free;  // per DMA engine
  uint64_t last_dma_start = 0;        // DMA issue is in stream order
  uint64_t hbm_free = 0;              // the core's bandwidth server
  uint64_t last_barrier = 0;          // barriers are reached in stream order
  uint64_t reached = 0;               // reach cycle of the barrier at `cursor`, once arrived
  bool arrived = false;
  uint32_t cursor = 0;                // next instruction to schedule (stream order)
  uint64_t end = 0;
  // Stats, same structs and keys as the SystemC blocks.
  SequencerStats seq;
  std::vector<MxuStats> mxu;
  VpuStats vpu;
  DmaStats dma;
  VmemUsage vmem;
  uint64_t hbm_bytes = 0, hbm_requests = 0;
  double hbm_busy = 0;  // unrounded bytes / rate, as the SystemC HBM reports it
  // Trace names (built only when tracing).
  std::string process, prefix;
};

class AnalyticalEngine final : public Engine {
 public:
  explicit AnalyticalEngine(const HwConfig& hw) : hw_(hw) {
    check_hw_for_sim(hw_);
    const ChipParams& chip = hw_.chip;
    launch_ = chip.core.sequencer.launch_cycles;
    setup_ = chip.core.dma.setup_cycles;
    latency_ = dma_fixed_cycles(chip) - setup_;  // HBM latency in whole cycles (hbm_timing.h)
    fill_drain_ = mxu_fill_drain_cycles(chip.core.mxu);
  }

  std::string_view name() const override { return "analytical"; }

  RunResult run(const isa::Program& program, TraceSink* trace) override {
    plan_.build(program, hw_);
    const auto& cores = plan_.cores();
    states_.resize(cores.size());
    for (size_t c = 0; c < cores.size(); ++c) {
      states_[c].vmem = check_vmem(hw_.chip.core.vmem, *cores[c].prog, cores[c].name + ".vmem");
    }
    for (size_t c = 0; c < cores.size(); ++c) reset(states_[c], cores[c], trace);
    trace_ = trace;

    // Barrier groups: arrivals and the latest reach cycle.
    const auto& expected = plan_.barrier_participants();
    group_arrived_.assign(expected.size(), 0);
    group_time_.assign(expected.size(), 0);

    // Round-robin over cores: each advances in stream order until it waits at a barrier that not
    // every participant has reached. No progress in a full round is a deadlock.
    size_t finished = 0;
    std::vector<bool> done(cores.size(), false);
    while (finished < cores.size()) {
      bool progress = false;
      for (size_t c = 0; c < cores.size(); ++c) {
        if (done[c]) continue;
        progress |= advance(states_[c]);
        if (states_[c].cursor == cores[c].unit.size()) {
          done[c] = true;
          ++finished;
        }
      }
      if (!progress) {
        for (size_t c = 0; c < cores.size(); ++c) {
          if (done[c]) continue;
          const CorePlan& cp = cores[c];
          const isa::Instr& ins = cp.prog->instrs[states_[c].cursor];
          throw SimError("program '" + program.name + "' deadlocked: " + cp.name + " instruction #" +
                         std::to_string(states_[c].cursor) + " '" + ins.label + "' never completed: barrier " +
                         std::to_string(ins.barrier_id) + " was never reached by every participating core");
        }
      }
    }
    return finish(program);
  }

 private:
  void reset(CoreState& s, const CorePlan& cp, TraceSink* trace) {
    const size_t n = cp.unit.size();
    s.plan = &cp;
    s.complete.assign(n, 0);
    s.unit_free.assign(cp.queues.begin.size() - 1, 0);
    s.engine_free.assign(hw_.chip.core.dma.engines, 0);
    s.last_dma_start = s.hbm_free = s.last_barrier = s.reached = 0;
    s.arrived = false;
    s.cursor = 0;
    s.end = launch_;
    s.seq.reset(launch_);
    s.mxu.resize(hw_.chip.core.mxu.count);
    for (auto& m : s.mxu) m.reset(hw_.chip.core.mxu);
    s.vpu.reset();
    s.dma.reset(hw_.chip.core.dma.engines);
    s.hbm_bytes = s.hbm_requests = 0;
    s.hbm_busy = 0;
    if (trace) {
      s.process = "slice.chip" + std::to_string(cp.chip);
      s.prefix = "core" + std::to_string(cp.core);
    }
  }

  void emit(const CoreState& s, const std::string& track, const isa::Instr& ins, uint64_t start, uint64_t dur,
            uint64_t bytes) {
    trace_->complete({s.process, track, ins.label, start, dur, hw_.chip.core.clock_mhz, bytes});
  }

  // Schedules instructions from the cursor on; returns whether anything moved.
  bool advance(CoreState& s) {
    const CorePlan& cp = *s.plan;
    const uint32_t n = uint32_t(cp.unit.size());
    bool moved = false;
    while (s.cursor < n) {
      const uint32_t i = s.cursor;
      const isa::Instr& ins = cp.prog->instrs[i];
      uint64_t ready = launch_;
      for (uint32_t k = cp.deps.begin[i]; k < cp.deps.begin[i + 1]; ++k) ready = std::max(ready, s.complete[cp.deps.items[k]]);
      if (ins.op == isa::Op::kBarrier) {
        const uint32_t g = cp.barrier_group[i];
        if (!s.arrived) {
          s.reached = s.last_barrier = std::max(ready, s.last_barrier);
          s.arrived = true;
          ++group_arrived_[g];
          group_time_[g] = std::max(group_time_[g], s.reached);
          ++s.seq.instructions;
          ++s.seq.barriers;
          moved = true;
        }
        if (group_arrived_[g] < plan_.barrier_participants()[g]) return moved;
        s.complete[i] = group_time_[g];
        if (trace_) emit(s, s.prefix + ".sync", ins, s.reached, s.complete[i] - s.reached, 0);
        s.arrived = false;
      } else {
        schedule(s, i, ins, ready);
        ++s.seq.instructions;
      }
      s.end = std::max(s.end, s.complete[i]);
      ++s.cursor;
      moved = true;
    }
    return moved;
  }

  void schedule(CoreState& s, uint32_t i, const isa::Instr& ins, uint64_t ready) {
    const ChipParams& chip = hw_.chip;
    const uint32_t u = s.plan->unit[i];
    switch (ins.op) {
      case isa::Op::kMxuWeights: {
        const uint64_t start = std::max(ready, s.unit_free[u]);
        const uint64_t c = mxu_weight_load_cycles(chip.core.mxu, ins.k);
        s.unit_free[u] = s.complete[i] = start + c;
        s.mxu[ins.mxu].weights(c);
        if (trace_) emit(s, s.prefix + ".mxu" + std::to_string(ins.mxu) + ".weights", ins, start, c, 0);
        break;
      }
      case isa::Op::kMxuMatmul: {
        const uint64_t start = std::max(ready, s.unit_free[u]);
        const uint64_t c = mxu_stream_cycles(chip.core.mxu, ins.rows, ins.passes);
        s.unit_free[u] = start + c;
        s.complete[i] = start + c + fill_drain_;
        s.mxu[ins.mxu].matmul(ins, c);
        if (trace_) emit(s, s.prefix + ".mxu" + std::to_string(ins.mxu), ins, start, c, 0);
        break;
      }
      case isa::Op::kVpu: {
        const uint64_t start = std::max(ready, s.unit_free[u]);
        const uint64_t c = vpu_issue_cycles(chip.core.vpu, ins.vpu);
        s.unit_free[u] = start + c;
        s.complete[i] = start + c + chip.core.vpu.pipeline_latency_cycles;
        s.vpu.block(ins.vpu, c);
        if (trace_) emit(s, s.prefix + ".vpu", ins, start, c, 0);
        break;
      }
      case isa::Op::kDmaLoad:
      case isa::Op::kDmaStore: {
        // In stream order, on the first engine free at that time.
        uint64_t start = std::max(ready, s.last_dma_start);
        start = std::max(start, *std::min_element(s.engine_free.begin(), s.engine_free.end()));
        uint32_t e = 0;
        while (s.engine_free[e] > start) ++e;
        uint64_t end = start + setup_ + latency_;  // zero bytes: no HBM request
        if (ins.bytes > 0) {
          const uint64_t t = hbm_transfer_cycles(chip, ins.bytes);
          const uint64_t begin = std::max(start + setup_, s.hbm_free);
          s.hbm_free = begin + t;
          end = s.hbm_free + latency_;
          s.hbm_bytes += ins.bytes;
          s.hbm_requests += (ins.bytes + chip.core.dma.chunk_bytes - 1) / chip.core.dma.chunk_bytes;
          s.hbm_busy += double(ins.bytes) / hbm_core_bytes_per_cycle(chip);
          if (trace_) emit(s, "hbm." + s.prefix, ins, begin, t, ins.bytes);
        }
        s.last_dma_start = start;
        s.engine_free[e] = s.complete[i] = end;
        s.dma.transfer(ins, end - start);
        if (trace_) emit(s, s.prefix + ".dma" + std::to_string(e), ins, start, end - start, ins.bytes);
        break;
      }
      case isa::Op::kBarrier: break;  // handled by advance()
    }
  }

  RunResult finish(const isa::Program& program) {
    RunResult r;
    const auto& cores = plan_.cores();
    const uint32_t chips = hw_.slice.chips();
    std::vector<HbmStats> hbm(chips);
    std::vector<bool> active(chips, false);
    for (uint32_t c = 0; c < chips; ++c) hbm[c].reset(hw_.chip.core.clock_mhz, hw_.chip.hbm.bandwidth_gbyte_per_s);
    for (size_t c = 0; c < cores.size(); ++c) {
      CoreState& s = states_[c];
      const CorePlan& cp = cores[c];
      s.seq.total_cycles = s.end;
      for (auto& m : s.mxu) m.run_cycles = s.end;
      s.vpu.run_cycles = s.dma.run_cycles = s.end;
      r.cores.push_back({cp.chip, cp.core, s.end});
      r.device_cycles = std::max(r.device_cycles, s.end);
      HbmStats& h = hbm[cp.chip];
      active[cp.chip] = true;
      h.bytes += s.hbm_bytes;
      h.requests += s.hbm_requests;
      h.busy_cycles += s.hbm_busy;
      h.run_cycles = std::max(h.run_cycles, s.end);

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
    }
    for (uint32_t c = 0; c < chips; ++c) {
      if (!active[c]) continue;
      StatGroup g("slice.chip" + std::to_string(c) + ".hbm");
      hbm[c].declare(g);
      r.stats[g.name()] = g.dump();
    }
    r.device_time_s = Clock{hw_.chip.core.clock_mhz}.seconds(r.device_cycles);
    add_run_stats(r, plan_.instructions());
    (void)program;
    trace_ = nullptr;
    return r;
  }

  HwConfig hw_;
  uint64_t launch_ = 0, setup_ = 0, latency_ = 0, fill_drain_ = 0;
  ProgramPlan plan_;
  std::vector<CoreState> states_;
  std::vector<uint32_t> group_arrived_;
  std::vector<uint64_t> group_time_;
  TraceSink* trace_ = nullptr;
};

}  // namespace

std::unique_ptr<Engine> make_analytical_engine(const HwConfig& hw) { return std::make_unique<AnalyticalEngine>(hw); }

}  // namespace tpusim
