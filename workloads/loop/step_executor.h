// Runs step programs on an engine, once per distinct program: a run executes a handful of distinct
// programs (train / first optimizer step / accumulation micro-step / eval, at each padded shape)
// hundreds of times, and every execution starts with empty queues and its inputs already in HBM, so
// the device time is a pure function of the program. Later executions of the same program (same
// cache key) replay the simulated device time; `full_sim` disables the replay (every execution is
// simulated) and the analytical engine's symmetric replicas (every core is simulated: sim/engine/
// replica_classes.h); both give identical totals because the engines are deterministic and the
// replicas exact. A step that came from a program memo (BuiltStep::memo_run, program_memo.h) is not
// simulated either: its first execution returns the memo's run.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sim/engine/engine.h"
#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "workloads/loop/device_run.h"
#include "workloads/loop/step_source.h"

namespace tpusim {

class StepExecutor {
 public:
  // Throws ConfigError for an unknown engine.
  StepExecutor(const HwConfig& hw, const std::string& engine, bool full_sim);
  ~StepExecutor();

  // The device time of one execution: simulated, or replayed from an earlier identical execution.
  // With replay on, a program's instruction streams are freed once simulated (a BERT-base step is
  // ~10^5 instructions per core; runs with `padding: longest` have dozens of programs).
  // `trace`, if set, receives the engine's per-unit events of this execution when it is simulated
  // (a replayed execution reports none).
  // Throws ConfigError before simulating when the run's estimated peak memory or time exceeds the
  // limits (set_limits).
  DeviceRun execute(BuiltStep& s, TraceSink* trace = nullptr);
  // The limits of each simulation and the display of its progress (name, done, total).
  void set_limits(RunLimits limits) { limits_ = std::move(limits); }
  void set_progress(std::function<void(std::string_view program, uint64_t done, uint64_t total)> fn) {
    progress_ = std::move(fn);
  }

  std::string_view engine_name() const { return engine_->name(); }
  bool full_sim() const { return full_sim_; }
  uint64_t simulations() const { return simulations_; }
  uint64_t replays() const { return replays_; }
  uint64_t memoized() const { return memoized_; }  // programs whose run came from a program memo
  double simulate_wall_s() const { return simulate_wall_s_; }

 private:
  bool full_sim_;
  std::unique_ptr<Engine> engine_;
  RunLimits limits_;
  std::function<void(std::string_view, uint64_t, uint64_t)> progress_;
  std::unordered_map<compiler::CacheKey, DeviceRun, compiler::CacheKeyHash> replay_;
  uint64_t simulations_ = 0, replays_ = 0, memoized_ = 0;
  double simulate_wall_s_ = 0;
};

}  // namespace tpusim
