#include "workloads/loop/step_executor.h"

#include <chrono>
#include <stdexcept>

namespace tpusim {

StepExecutor::StepExecutor(const HwConfig& hw, const std::string& engine, bool full_sim)
    : full_sim_(full_sim), engine_(make_engine(engine, hw)) {
  engine_->set_replicas(!full_sim);  // --full-sim: every core as well as every step
}

StepExecutor::~StepExecutor() = default;

DeviceRun StepExecutor::execute(BuiltStep& s, TraceSink* trace) {
  if (!full_sim_) {
    if (auto it = replay_.find(s.compiled.key); it != replay_.end()) {
      ++replays_;
      DeviceRun r = it->second;
      r.replayed = true;
      return r;
    }
    if (s.memo_run) {  // simulated by another run with the same configuration (program_memo.h)
      ++memoized_;
      replay_.emplace(s.compiled.key, *s.memo_run);
      return *s.memo_run;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();  // the engine's plan (simulated_cores()) is simulation time
  const std::vector<uint32_t> simulated = engine_->simulated_cores(s.compiled.program, trace != nullptr);
  const RunEstimate est = estimate_run(s.compiled.program, engine_->name(), trace != nullptr, current_rss_bytes(), &simulated);
  check_run_limits(est, limits_, s.name, engine_->name(), trace != nullptr);
  if (progress_) engine_->set_progress([&](uint64_t done, uint64_t total) { progress_(s.name, done, total); });
  if (!s.compiled.lowered) throw std::logic_error("step program '" + s.name + "' does not fit in HBM and was not lowered");
  RunResult rr = engine_->run(s.compiled.program, trace);
  engine_->set_progress({});
  simulate_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++simulations_;
  DeviceRun r;
  r.device_s = rr.device_time_s;
  r.device_cycles = rr.device_cycles;
  r.cores = uint32_t(rr.cores.size());
  r.simulated_cores = rr.simulated_cores;
  r.collectives = rr.collectives;
  // The gradients' sums: within the slice, and across slices over the data-center network.
  r.allreduce_s = rr.collectives[isa::Collective::kAllReduce].exposed_s + rr.collectives[isa::Collective::kDcnAllReduce].exposed_s;
  for (const CollectiveKindStats& k : rr.collectives.kinds) r.collective_s += k.exposed_s;
  r.op_profile = std::make_shared<const OpProfile>(std::move(rr.op_profile));
  replay_.emplace(s.compiled.key, r);
  if (!full_sim_) {
    s.compiled.program.cores.clear();
    s.compiled.program.cores.shrink_to_fit();
  }
  return r;
}

}  // namespace tpusim
