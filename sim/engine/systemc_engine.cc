#include "sim/engine/systemc_engine.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <systemc>

#include "base/config_error.h"
#include "sim/analysis/program_plan.h"
#include "sim/base/clock.h"
#include "sim/base/sc_support.h"
#include "sim/base/sim_error.h"
#include "sim/engine/run_stats.h"
#include "sim/hbm/hbm_impls.h"
#include "sim/slice/slice.h"

// libsystemc's main() calls sc_main, so the symbol must exist; tpusim executables have their own
// main() and never call it.
int sc_main(int, char*[]) { return 0; }

namespace tpusim {
namespace {

std::string structure_of(const HwConfig& hw) {
  std::string topo;
  for (size_t d = 0; d < hw.slice.topology.dims.size(); ++d) {
    const bool wrap = d < hw.slice.topology.wraparound.size() && hw.slice.topology.wraparound[d];
    if (d) topo += 'x';
    topo += std::to_string(hw.slice.topology.dims[d]);
    if (wrap) topo += 't';
  }
  return std::to_string(hw.slice.chips()) + " chips x " + std::to_string(hw.chip.cores) + " cores x " +
         std::to_string(hw.chip.core.mxu.count) + " MXUs, hbm.impl " + hw.chip.hbm.impl + ", topology " + topo +
         " (t: torus), " + std::to_string(hw.slice.hosts) + " hosts";
}

// The process-wide elaborated slice (SystemC: one elaboration per process). Never destroyed: the
// SystemC kernel itself lives until exit.
struct Elaborated {
  Slice* slice = nullptr;
  std::string structure;
  std::string hw_name;
  uint64_t configured_by = 0;  // engine whose parameters are applied
  uint64_t engines = 0;        // engine ids handed out
};

Elaborated& elaborated() {
  static Elaborated e;
  return e;
}

Slice& elaborate(const HwConfig& hw) {
  Elaborated& e = elaborated();
  if (e.slice) {
    if (e.structure != structure_of(hw)) {
      throw ConfigError({"", "engine", 0, "systemc",
                         "the SystemC model is elaborated once per process; it holds '" + e.hw_name + "' (" +
                             e.structure + ") and cannot also build '" + hw.name + "' (" + structure_of(hw) + ")",
                         "run it in a separate process or use the analytical engine"});
    }
    return *e.slice;
  }
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);  // keep stdout clean
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS)) {
    throw SimError("the SystemC time resolution must be 1 ps (it was changed before the model was built)");
  }
  e.slice = new Slice("slice", hw);
  e.structure = structure_of(hw);
  e.hw_name = hw.name;
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // ends elaboration, initialises the processes
  return *e.slice;
}

class SystemcEngine final : public Engine {
 public:
  explicit SystemcEngine(const HwConfig& hw) : hw_(hw), r_(resolve_hw(hw)) {
    check_hbm_impl(hw_.chip.hbm.impl);  // the registry's names: before elaboration builds the HBM
    slice_ = &elaborate(hw_);
    id_ = ++elaborated().engines;
  }

  std::string_view name() const override { return "systemc"; }

  RunResult run(const isa::Program& program, TraceSink* trace) override {
    plan_.build(program, hw_, {.successors = true});  // the sequencer wakes dependents
    Elaborated& e = elaborated();
    if (e.configured_by != id_) {
      slice_->configure(hw_, r_);
      e.configured_by = id_;
    }
    // Everything that can reject the program runs before any block is armed.
    for (const CorePlan& cp : plan_.cores()) slice_->chip(cp.chip).core(cp.core).load(cp);

    ctx_ = RunContext{};
    ctx_.start_ps = sc_core::sc_time_stamp().value();
    ctx_.clock = ScClock::from_mhz(hw_.chip.core.clock_mhz);
    ctx_.clock_mhz = hw_.chip.core.clock_mhz;
    ctx_.trace = trace;
    ticker_.reset(plan_.instructions(), &progress());
    ctx_.ticker = &ticker_;
    std::vector<bool> active(slice_->chips(), false);
    for (const CorePlan& cp : plan_.cores()) active[cp.chip] = true;
    slice_->sync().begin_run(plan_.barrier_participants());
    slice_->begin_run(&ctx_);
    for (uint32_t c = 0; c < slice_->chips(); ++c)
      if (active[c]) {
        slice_->chip(c).hbm().begin_run(&ctx_);
        slice_->chip(c).cmem().begin_run(&ctx_);
      }
    for (const CorePlan& cp : plan_.cores()) slice_->chip(cp.chip).core(cp.core).begin_run(&cp, &ctx_);

    if (!plan_.cores().empty()) sc_core::sc_start();  // runs until no activity is left

    for (const CorePlan& cp : plan_.cores()) {
      TensorCore& core = slice_->chip(cp.chip).core(cp.core);
      if (!core.finished()) throw SimError("program '" + program.name + "' deadlocked: " + core.stuck_report());
    }

    RunResult r;
    r.simulated_cores = uint32_t(plan_.cores().size());
    std::vector<uint64_t> chip_cycles(slice_->chips(), 0);
    for (const CorePlan& cp : plan_.cores()) {
      TensorCore& core = slice_->chip(cp.chip).core(cp.core);
      core.end_run();
      r.cores.push_back({cp.chip, cp.core, core.end_cycle()});
      r.device_cycles = std::max(r.device_cycles, core.end_cycle());
      chip_cycles[cp.chip] = std::max(chip_cycles[cp.chip], core.end_cycle());
      core.dump_stats(r.stats);
    }
    for (uint32_t c = 0; c < slice_->chips(); ++c) {
      if (!active[c]) continue;
      slice_->chip(c).hbm().end_run(chip_cycles[c]);
      slice_->chip(c).hbm().dump_stats(r.stats);
      slice_->chip(c).cmem().end_run(chip_cycles[c]);
      slice_->chip(c).cmem().dump_stats(r.stats);
    }
    for (const CorePlan& cp : plan_.cores())  // the op profile and collectives of the core that finished last
      if (TensorCore& core = slice_->chip(cp.chip).core(cp.core); core.end_cycle() == r.device_cycles) {
        if (op_profile()) r.op_profile = core.op_profile(hw_, r_);
        r.collectives = core.collective_stats(hw_);
        break;
      }
    slice_->end_run(r.device_cycles);
    slice_->dump_network_stats(r.stats);
    r.device_time_s = Clock{hw_.chip.core.clock_mhz}.seconds(r.device_cycles);
    add_run_stats(r, plan_.instructions());
    ctx_.trace = nullptr;
    return r;
  }

 private:
  HwConfig hw_;
  ResolvedHw r_;
  Slice* slice_ = nullptr;
  uint64_t id_ = 0;
  ProgramPlan plan_;
  RunContext ctx_;
  ProgressTicker ticker_;
};

}  // namespace

std::unique_ptr<Engine> make_systemc_engine(const HwConfig& hw) { return std::make_unique<SystemcEngine>(hw); }

}  // namespace tpusim
