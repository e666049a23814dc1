// The records of a run of steps (workloads/loop/step_loop.h): per step, per distinct program, per
// client process, and the run's totals, with their units. report.json writes them (workloads/report/).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan/memory_breakdown.h"
#include "compiler/plan/memory_plan.h"
#include "compiler/plan/rematerialize.h"
#include "sim/analysis/collective_stats.h"
#include "sim/analysis/op_profile.h"
#include "sim/base/sim_error.h"
#include "workloads/loop/graph_kind.h"

namespace tpusim {

// Where a run is, for a progress display (never part of the results): train and eval steps done
// of the run's total (`steps_total`: from the first epoch's plan, so an estimate when epochs
// differ), and while a program is simulated, its name and instructions done of its total.
struct TrainingProgress {
  uint64_t steps_done = 0, steps_total = 0;
  std::string_view simulating;  // empty: between simulations
  uint64_t instructions_done = 0, instructions_total = 0;
};

// Past this many records, a step identical to the one before (same epoch, program, shapes and
// times, to rounding) extends that record (`repeat`) instead of adding one: memory and report.json
// grow with what changes, not with the run's length (a 10^6-step run of one program keeps a few
// records per epoch). Shorter runs list every step.
inline constexpr size_t kStepsListedInFull = 10000;

struct StepRecord {
  uint64_t index = 0;       // position in the run (train and eval steps interleaved); the first it stands for
  uint64_t repeat = 1;      // consecutive identical steps this record stands for (kStepsListedInFull)
  StepKind kind = StepKind::kTrain;
  GraphKind graph = GraphKind::kTrain;
  bool grad_buffers = false;  // gradient accumulation: the graph reads the .grad buffers
  uint32_t epoch = 0;
  uint32_t batch = 0, seq = 0;  // per-device program shape: examples, tokens
  uint64_t examples = 0;    // examples over all processes (incl. even_batches fill)
  bool compiled = false;    // UncachedCompile at this step (on some process)
  uint32_t compiling_processes = 0;  // processes that compiled at this step (sharing the host CPUs)
  bool persistent_hit = false;  // loaded from the persistent cache instead of compiling
  bool first_execution = false; // this program's first execution (load + allocation)
  double host_s = 0;        // s: tracing + dispatch (the longest of any process)
  double compile_s = 0;     // s: the longest compile of any process at this step
  double setup_s = 0;       // s: program load/allocation (+ parameter upload on the very first)
  double device_s = 0;      // s: simulated device time
  double allreduce_s = 0;   // s: the gradient all-reduce's exposed time within device_s (simulated, step_executor.h)
  double collective_s = 0;  // s: every collective's exposed time within device_s (FSDP's all-gathers too)
  CollectiveStats collectives;  // the profiled core's collectives, kind by kind (step_executor.h)
  double start_s = 0, end_s = 0;  // s: device timeline (execution start, completion)
  double step_time_s = 0;   // s: end_s - previous step's end_s
  bool replayed = false;    // device time replayed from an identical earlier execution
  uint64_t flops = 0;       // per device: useful flops of the step's program (both cores of a megacore)
  uint64_t model_flops = 0; // per device: the same without activation recomputation (what MFU counts)
};

struct ProgramRecord {
  std::string name, key;
  GraphKind graph = GraphKind::kTrain;
  uint32_t batch = 0, seq = 0;
  uint64_t graph_nodes = 0, hlo_ops = 0;
  uint32_t kernels = 0;
  uint64_t persistent_bytes = 0, peak_hbm_bytes = 0;  // per device (a core; a megacore chip)
  uint64_t cmem_bytes_per_chip = 0;                   // buffers placed in CMEM (v4), the chip's replicas together
  uint64_t parameter_bytes = 0, optimizer_state_bytes = 0;  // per device
  uint64_t allreduce_bytes = 0;  // per core
  // The combined gradient all-reduces in order: bytes per core, algorithm ("ring" | "dims"), the
  // kernel whose end starts it, and whether it runs in the background of the backward pass.
  struct AllReduce {
    uint64_t bytes = 0;
    std::string algorithm, starts_after;
    bool overlapped = false;
  };
  std::vector<AllReduce> allreduces;
  uint64_t allgather_bytes = 0, reducescatter_bytes = 0;  // per core (sharding: fsdp)
  uint64_t dcn_bytes = 0;        // per core: sent over the data-center network to other slices (multislice)
  // Host offload (remat_tensors offload): per core and execution, the bytes copied to host memory
  // (and the same back); per device, the most held in host memory at once.
  uint64_t host_offload_bytes = 0, host_memory_bytes = 0;
  // What XLA's rematerialization recomputed for the program to fit HBM (compiler/plan/rematerialize.h).
  compiler::Rematerialization remat;
  CollectiveStats collectives;   // per execution (step_executor.h)
  compiler::MemoryBreakdown memory;  // per device, at the peak
  uint64_t flops = 0;            // per device and execution
  double compile_s = 0;          // modelled XLA compile time, s
  double device_s = 0;           // s per execution
  uint64_t device_cycles = 0;    // core cycles per execution
  uint64_t executions = 0;
  // Cores of the program, and cores the engine simulated (fewer: one per class of symmetric replicas).
  uint32_t cores = 0, simulated_cores = 0;
  // Where device_s went, kernel by kernel, per execution (sim/analysis/op_profile.h; empty without a
  // simulation).
  std::shared_ptr<const OpProfile> op_profile;
};

struct ProcessRecord {
  uint32_t index = 0, chip = 0, core = 0;  // its first replica's chip and core
  uint32_t cores = 1, host = 0;            // replicas it drives; the host it runs on
  uint64_t train_examples = 0, eval_examples = 0;
  uint64_t compiles = 0, cached_compiles = 0, persistent_hits = 0;
  double compile_time_s = 0;
};

// A torch_xla metric: count and total, with percentiles of the samples (s).
struct MetricSamples {
  std::vector<double> samples;
  void add(double v) { samples.push_back(v); }
};

struct TimeBreakdown {  // s; sums to total_time_s
  double compile = 0, warmup = 0, host = 0, device = 0, allreduce = 0, eval = 0;
  double batch_search = 0;  // auto_find_batch_size: the failed attempts until their out-of-HBM error
};

// The out-of-HBM SimError, with the run's time until the failing execution.
class OutOfHbmError : public SimError {
 public:
  OutOfHbmError(const std::string& what, double elapsed) : SimError(what), elapsed_s(elapsed) {}
  double elapsed_s = 0;
};
// XLA's "Resource exhausted" message for program `program` whose memory plan `m` exceeds a device's
// `capacity` bytes, naming the largest buffer live at the peak, followed by `advice`.
std::string out_of_hbm_message(const compiler::MemoryPlan& m, const std::string& program, uint64_t capacity, bool megacore,
                               const std::string& advice);

// A `model_code:` construct that breaks an XLA rule (workloads/config/xla_constructs.h), as reported.
struct XlaDiagnostic {
  std::string construct, code, rule, rewrite, message;
  uint64_t occurrences = 0;  // train steps it ran in (once per step)
};

// What the step loop (step_loop.h) records of a run: every step, every distinct program, every
// client process, and the totals. A training run's result adds its epochs, logging and batch search
// (training_run.h); an imported module's its module (hlo_run.h).
struct LoopResult {
  std::string engine;
  bool full_sim = false;
  uint32_t processes = 0;         // framework client processes (framework.h)
  uint32_t replicas = 0;          // data-parallel replicas: the devices the run drives (core; megacore chip)
  bool megacore = false;          // hw chip.megacore: devices are chips, figures "per chip"
  std::string framework;          // "8 processes (xla_spawn)", "1 client (TPUStrategy)", ...
  uint32_t busiest_process = 0;  // whose metrics the summary shows (most compiles)
  std::vector<StepRecord> steps;
  std::vector<ProgramRecord> programs;
  std::vector<ProcessRecord> process_records;
  TimeBreakdown breakdown;
  double total_time_s = 0, steady_step_time_s = 0, examples_per_s = 0, steady_examples_per_s = 0;
  // Tokens (examples x padded length, the sources of a seq2seq step) of the steady train steps over
  // their time, per chip of the slice: what MaxText reports as tokens/s/device on one-core chips.
  double steady_tokens_per_s_per_chip = 0;
  double compile_time_s = 0, warmup_time_s = 0, upload_time_s = 0, mxu_utilization = 0;
  uint64_t upload_bytes = 0;  // the first execution's parameters (and first batch) over one chip's PCIe link
  // Over the steady train steps: model flops utilization (flops / (step time x peak): the host's
  // share of the step counts against it, unlike mxu_utilization's) and the all-reduce's share of
  // the device time; every collective's (all-gathers and reduce-scatters of FSDP too).
  double mfu = 0, allreduce_share = 0, collective_share = 0;
  uint64_t compiles = 0, cached_compiles = 0, persistent_hits = 0, mark_steps = 0;
  uint64_t train_steps = 0, eval_steps = 0, optimizer_steps = 0, train_examples = 0;
  // Per device: a core's on v2/v3, the chip's on a megacore (hbm_bytes_per_core keeps its name in
  // report.json).
  uint64_t peak_hbm_bytes = 0, hbm_bytes_per_core = 0;
  uint64_t host_memory_bytes = 0;  // per device: offloaded activations held in host memory (largest program)
  compiler::MemoryBreakdown peak_memory;  // per device: the breakdown of the program with the highest peak
  // Over all train steps: the collective statistics (the profiled core's) and the compiler's bytes
  // per core.
  CollectiveStats collective_time;
  uint64_t allreduce_bytes = 0, allgather_bytes = 0, reducescatter_bytes = 0;
  uint64_t dcn_bytes = 0;  // per core: sent over the data-center network to other slices (multislice)
  double padding_waste = 0;  // fraction of padded tokens over the training steps run
  uint64_t global_batch = 0;  // examples per step over every device (0: not known, an imported module)
  MetricSamples compile_time, execute_time, transfer_to_device, transfer_from_device;
  MetricSamples inbound_bytes, outbound_bytes;  // bytes of each transfer_*_device sample (one chip's PCIe link)
  std::vector<XlaDiagnostic> diagnostics;
  std::map<std::string, uint64_t> fallback_counters;  // torch_xla's aten::* CPU-fallback counters
  uint64_t graph_breaks = 0;
  // Distinct programs simulated for the run (here, or by another run sharing its program memo),
  // executions replayed, and how many of the programs were read from the memo (program_memo.h).
  uint64_t simulations = 0, replays = 0, memoized = 0;
  double compile_wall_s = 0, simulate_wall_s = 0;  // host wall time of tpusim itself
};

}  // namespace tpusim
