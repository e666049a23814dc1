// A program memo: what a run learned about each step program it compiled and simulated (the step's
// compile facts and its device run), kept in a directory that other runs with the same
// configuration read instead of compiling and simulating the program again. A sweep gives its
// points one (sweep/run_sweep.cc): the 100-point sweep benchmark (bench/sweep/) runs 521 step
// programs, 67 of them distinct.
//
// Exactness: a step program and its device run are a pure function of the hardware config, the
// workload config, the engine and the step variant (kind, B, S, .grad buffers, T); the in-run replay
// of identical executions (step_executor.h) rests on the same fact. A few workload fields only
// choose which variants run, in what order and how often: `seed` (the epochs' shuffles), `padding`
// (the padded lengths: the variants' S), `epochs` and `steps` (how many); they are read by the data
// loop alone (workloads/loop/training_run.cc), never by a model, the compiler or an engine. The
// memo's key is everything else: the hardware dump, the workload dump with those fields at their
// defaults, the engine and the variant. So a memo entry is exactly what the run would compute, and a
// report built from it is identical to a simulated one (apart from `run`: its simulations count and
// wall time).
//
// Files: DIR/<32 hex digits>.cbor (nlohmann's CBOR: doubles stored exactly), written under a
// temporary name and renamed, so a reader never sees a partial file; two runs that simulate the
// same program at once both write it, with the same contents. A file that cannot be read, or whose
// key or format differs, is a miss; a write that fails is skipped (the memo only saves time).
// With --full-sim or a trace, runs do not use a memo (both need the simulation itself).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "compiler/compile_cache.h"
#include "sim/hw/hw_config.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/device_run.h"
#include "workloads/loop/step_source.h"

namespace tpusim {

// The memo key of a run's configuration: hardware, workload without its data-only fields (above),
// engine. Throws std::bad_variant_access for a workload other than kind: training.
compiler::CacheKey program_memo_salt(const HwConfig& hw, const WorkloadConfig& w, std::string_view engine);

class ProgramMemo {
 public:
  // Creates `dir` when missing (a failure only makes every lookup miss).
  ProgramMemo(std::string dir, compiler::CacheKey salt);

  struct Entry {
    StepInfo info;
    BuiltStep step;  // without its program (compiled.program is empty); step.memo_run is set
  };
  // The variant's entry, if a run with this configuration stored one.
  std::optional<Entry> load(const StepVariant& v) const;
  // Stores what this run compiled and simulated for `v` (best effort: errors are ignored).
  void store(const StepVariant& v, const StepInfo& info, const BuiltStep& step, const DeviceRun& run) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string path(const StepVariant& v) const;
  std::string dir_;
  compiler::CacheKey salt_;
};

// A step source that looks each variant up in a program memo before asking `inner` (which then
// builds and compiles it as usual).
class MemoSteps final : public StepSource {
 public:
  MemoSteps(StepSource& inner, const ProgramMemo& memo) : inner_(inner), memo_(memo) {}

  const StepInfo& info(const StepVariant& v) override;
  BuiltStep& get(const StepVariant& v) override;
  double compile_wall_s() const override { return inner_.compile_wall_s() + load_wall_s_; }
  bool fixed_shapes() const override { return inner_.fixed_shapes(); }

 private:
  // The variant's memo entry (looked up once per variant; null: not in the memo).
  ProgramMemo::Entry* entry(const StepVariant& v);
  StepSource& inner_;
  const ProgramMemo& memo_;
  std::map<StepVariant, std::unique_ptr<ProgramMemo::Entry>> entries_;
  double load_wall_s_ = 0;
};

}  // namespace tpusim
