// The one step loop: what every run does per step, whatever its steps come from (a training run's
// epochs of batches, training_run.h; an imported module's steps, hlo_run.h) and whatever source its
// programs come from (step_source.h). Time is kept on two clocks: each client process's host clock
// (tracing, compiling, dispatching) and the device's (the slice executing the step programs).
//
//   per step   every process traces the step on its host (overlapping the previous step's
//              execution; the host runs at most one step ahead), looks the graph up in its own
//              compilation cache (a miss compiles synchronously; processes compiling at once share
//              their host's CPUs), and dispatches it; the step starts on the device when the last
//              process has dispatched it (the SPMD program and its collectives run in lockstep);
//              the first execution of a program loads it and allocates its buffers, the very first
//              also uploads the parameters over PCIe; the device time is the step executor's
//              (simulated once per distinct program, step_executor.h).
//
// The framework personality (framework.h) sets who compiles (a torch_xla process per device, a JAX
// process per host, one TF client), whether every step is traced, and what a dispatch costs.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/compile_cache.h"
#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "workloads/config/xla_constructs.h"
#include "workloads/data/batching.h"
#include "workloads/loop/framework.h"
#include "workloads/loop/run_records.h"
#include "workloads/loop/step_executor.h"
#include "workloads/loop/step_source.h"
#include "workloads/loop/training_trace.h"

namespace tpusim {

class ProgramMemo;

// How a run is simulated and shown, whatever its kind.
struct LoopOptions {
  std::string engine = "analytical";  // engine that simulates each distinct program
  bool full_sim = false;              // simulate every execution (no replay of identical ones)
  std::function<void(std::string_view stage)> on_stage;      // progress display, may be empty
  std::function<void(const TrainingProgress&)> on_progress;  // progress display, may be empty
  // A program whose simulation is estimated to exceed it is refused (ConfigError) before it runs
  // (sim/engine/run_estimate.h); bytes 0: no limit.
  RunLimits limits;
  TraceSink* trace = nullptr;  // --trace: host, step and engine events (workloads/loop/training_trace.h)
  TrainingTraceOptions trace_steps;
};

// What a run's driver tells the loop about the run.
struct LoopSetup {
  FrameworkPersonality framework;
  uint32_t devices = 0;   // data-parallel replicas the run drives (cores; megacore chips), in process order
  std::string launcher;   // how per-device processes are started (framework.h describe)
  std::function<compiler::CompileCache()> make_cache;  // a new process's compilation cache
  bool remote_input = false;  // TPU Node: each batch crosses the network from the user's VM
  std::vector<const XlaConstruct*> breaks;  // model_code graph breaks, each once per train step
  // What to change after an out-of-HBM failure, given whether the parameters and optimizer state
  // alone exceed the device's HBM.
  std::function<std::string(bool state_alone_too_big)> out_of_hbm_advice;
};

// One step as the driver hands it over.
struct LoopStep {
  GraphKind kind = GraphKind::kTrain;
  bool grad_buffers = false;  // the graph reads the accumulated .grad buffers
  bool eval = false;
  uint32_t epoch = 0;
  // Each device's batch (batch_size, padded lengths) and whether the step ends a gradient-accumulation
  // cycle. A fixed-shape source (StepSource::fixed_shapes) runs every process whatever its batch.
  const data::Step* batch = nullptr;
};

class StepLoop {
 public:
  StepLoop(const HwConfig& hw, LoopSetup setup, StepSource& source, const LoopOptions& o, LoopResult& r);
  ~StepLoop();

  // Runs one step on every process and the device, and records it.
  void step(const LoopStep& s);
  // A synchronous device->host read inside the loop (a graph break's fallback tensor, a logged loss):
  // the host waits for the device, pays kGraphBreakSyncS and the PCIe copy of `bytes`, then `then_s`
  // (the dispatch of a graph break's second graph). Returns the sync's own cost, s.
  double wait_for_device(uint64_t bytes, double then_s);
  // The host blocks until the device is done, then reads `bytes_from_device` back over PCIe.
  void sync_host(double bytes_from_device);
  // The run's totals (LoopResult), after its last step.
  void finish();

  // The compiled program of a variant (e.g. to size the model before running).
  BuiltStep& program(const StepVariant& v) { return source_.get(v); }
  uint64_t steps_run() const { return steps_run_; }
  // The run's train and eval steps, for the progress display (0: unknown).
  void set_steps_total(uint64_t n) { steps_total_ = n; }
  // model_code graph breaks (LoopSetup::breaks), known once the driver has applied the model code.
  void set_breaks(std::vector<const XlaConstruct*> breaks) { setup_.breaks = std::move(breaks); }
  // Each program this run simulates is stored in `memo` (program_memo.h; null: none).
  void set_memo(const ProgramMemo* memo) { memo_ = memo; }

 private:
  // One client process: its own host clock and compilation cache.
  struct Process {
    compiler::CompileCache cache;
    uint32_t first_device = 0, devices = 1, host = 0;  // the replicas it drives, the host it runs on
    double host_t = 0;  // s: this process's host clock
    uint64_t compiles = 0, cached = 0, persistent_hits = 0, train_examples = 0, eval_examples = 0;
    MetricSamples compile_time{};
  };
  struct Shape {
    uint32_t b = 0, s = 0, t = 0;
  };

  // Host side of a step on every process: trace, cache lookup, compile. Fills the record's host
  // fields (the compile: the longest of any process).
  void host_side(const LoopStep& s, const Shape& global, StepRecord& rec, TrainingTracer& tracer);
  void record_program(const BuiltStep& prog, const StepRecord& rec, const DeviceRun& run, const std::string& key);
  void record_step(StepRecord rec);
  // Clients on one host (all of them compile a new graph at once).
  uint32_t clients_per_host() const { return uint32_t((procs_.size() + hw_.slice.hosts - 1) / hw_.slice.hosts); }

  const HwConfig& hw_;
  LoopSetup setup_;
  StepSource& source_;
  StepExecutor executor_;
  const ProgramMemo* memo_ = nullptr;
  const LoopOptions& o_;
  LoopResult& r_;
  std::vector<Process> procs_;
  std::set<std::string> executed_;   // program keys already executed once (loaded, allocated)
  std::map<std::string, size_t> program_index_;
  double dev_t_ = 0;                 // s: the device clock
  uint64_t steps_run_ = 0;           // steps executed (r_.steps may fold repeats: record_step)
  double end_before_last_ = 0;       // s: the end of the step before the last one
  uint64_t flops_ = 0;
  double device_sum_s_ = 0;
  uint64_t steps_total_ = 0;         // train and eval steps of the run (the progress display's)
};

}  // namespace tpusim
