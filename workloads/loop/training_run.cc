// The torch_xla training loop, simulated. Time is kept on two clocks of the (representative)
// process: the host's (tracing, compiling, dispatching) and the device's (the slice executing the
// step programs). Tracing step n+1 overlaps executing step n, so in steady state a step takes
// max(host, device); a compile blocks the host, hence the device waits for it.
#include "workloads/loop/training_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/config_error.h"
#include "compiler/compile_cache.h"
#include "sim/base/sim_error.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/ici_timing.h"
#include "workloads/data/batching.h"
#include "workloads/loop/framework.h"
#include "workloads/loop/host_costs.h"
#include "workloads/loop/step_cache.h"
#include "workloads/config/xla_constructs.h"
#include "workloads/loop/training_trace.h"

namespace tpusim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / kGiB); }

void add_collectives(TrainingRunResult& r, const compiler::CompiledStep& c, const CollectiveStats& t) {
  r.collective_time += t;
  r.allreduce_bytes += c.allreduce_bytes;
  r.allgather_bytes += c.allgather_bytes;
  r.reducescatter_bytes += c.reducescatter_bytes;
}

// What to change after an out-of-HBM failure, given what the workload already does.
std::string out_of_hbm_advice(const TrainingWorkload& t, bool state_alone_too_big) {
  // The weights and optimizer state alone do not fit: a smaller batch cannot help.
  if (state_alone_too_big)
    return std::string("The parameters and optimizer state alone exceed the device's HBM: ") +
           (t.choices.sharding == Sharding::kDataParallel ? "shard them with sharding: fsdp over enough devices"
                                                          : "shard them over more devices (a larger slice)") +
           (t.choices.precision == Precision::kFp32 ? ", use precision: bf16" : "") + ", or train a smaller model";
  std::string a = "Reduce per_device_batch_size or max_length";
  if (t.choices.precision == Precision::kFp32) a += ", use precision: bf16";
  if (t.choices.sharding == Sharding::kDataParallel)
    a += ", or shard parameters, gradients and optimizer state with sharding: fsdp (and fsdp_grad_ckpt: true)";
  else if (!t.fsdp_grad_ckpt)
    a += ", or recompute activations with fsdp_grad_ckpt: true";
  return a;
}

// XLA's "Resource exhausted" error, naming the largest buffer live at the peak. `elapsed_s`: the
// run's time until the failing execution (for auto_find_batch_size).
[[noreturn]] void out_of_hbm(const BuiltStep& s, uint64_t capacity, bool megacore, double elapsed_s,
                             const std::string& advice) {
  throw OutOfHbmError(out_of_hbm_message(s.compiled.memory, s.name, capacity, megacore, advice), elapsed_s);
}

}  // namespace

std::string out_of_hbm_message(const compiler::MemoryPlan& m, const std::string& program, uint64_t capacity, bool megacore,
                               const std::string& advice) {
  const compiler::HbmBuffer* big = m.live_at_peak.empty() ? nullptr : &m.buffers[m.live_at_peak.front()];
  const uint64_t big_bytes = big ? big->bytes * big->copies : 0;  // a megacore: per-core buffers on both cores
  const uint64_t others = m.peak_bytes - std::min(m.peak_bytes, big_bytes);
  const uint64_t free_bytes = capacity > others ? capacity - others : 0;
  return fmt::format(
      "Resource exhausted: out of HBM running program '{}' on each {}: attempting to allocate {} ({} bytes) "
      "for {} '{}', {} ({} bytes) free of the {}'s {}; the program needs {} at its peak ({} parameters and "
      "optimizer state). {}",
      program, megacore ? "chip (megacore: both TensorCores)" : "TensorCore", gib(big_bytes), big_bytes,
      big ? compiler::buffer_kind_name(big->kind) : "buffer", big ? big->name : "?", gib(free_bytes), free_bytes,
      megacore ? "chip" : "core", gib(capacity), gib(m.peak_bytes), gib(m.persistent_bytes), advice);
}

namespace {

// A process's compile cache; a persistent directory that cannot be made is bad input at the key
// where the workload wrote it.
compiler::CompileCache make_compile_cache(const TrainingWorkload& t) {
  try {
    return compiler::CompileCache(t.compile_cache.capacity, t.compile_cache.persistent_dir);
  } catch (const ConfigError& e) {
    ConfigErrorInfo i = e.info();
    i.yaml_path = "compile_cache.persistent_dir";
    if (const auto o = t.origins.find(i.yaml_path); o != t.origins.end()) i.file = o->second.file, i.line = o->second.line;
    throw ConfigError(i);
  }
}

// A device's useful flops per execution: the per-core program's on each of its cores. A megacore
// device with an odd batch B runs ceil(B/2) examples on each core; only B of them are useful.
// `recompute`: without the flops of activation recomputation (the model's flops, for MFU).
uint64_t device_flops(const BuiltStep& s, const HwConfig& hw, bool recompute = true) {
  const uint64_t f = s.compiled.program.info.flops - (recompute ? 0 : std::min(s.recompute_flops, s.compiled.program.info.flops));
  const uint64_t c = cores_per_device(hw.chip), b = s.variant.batch, per_core = (b + c - 1) / c;
  if (c == 1 || per_core == 0 || per_core * c == b) return f * c;
  return uint64_t(double(f) * double(b) / double(per_core));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The shape of the step's program: the largest B, S (and seq2seq target T) of the processes'
// batches (see the header).
struct ProgramShape {
  uint32_t b = 0, s = 0, t = 0;
};
ProgramShape step_shape(const data::Step& st, uint64_t* examples) {
  ProgramShape sh;
  *examples = 0;
  for (const auto& p : st.processes) {
    sh.b = std::max(sh.b, p.batch_size);
    sh.s = std::max(sh.s, p.padded_length);
    sh.t = std::max(sh.t, p.target_padded_length);
    *examples += p.batch_size;
  }
  return sh;
}

// model_code (xla_constructs.h): with strict_xla the first construct fails the run like XLA would;
// otherwise each is a diagnostic, a graph-breaking one is charged per train step in execute(), and
// dynamic_sequence_length gives every batch its own shape (padding becomes `longest`).
std::vector<const XlaConstruct*> apply_model_code(const TrainingWorkload& t, data::LoaderOptions& lo,
                                                  TrainingRunResult& r) {
  std::vector<const XlaConstruct*> breaks;
  for (const std::string& name : t.model_code) {
    const XlaConstruct& c = find_xla_construct(name);
    if (t.strict_xla) throw SimError(xla_construct_message(c));
    r.diagnostics.push_back({c.name, c.code, c.rule, c.rewrite, xla_construct_message(c), 0});
    if (c.graph_break) breaks.push_back(&c);
    else lo.padding = data::PaddingSpec::longest();
  }
  return breaks;
}

class Loop {
 public:
  Loop(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunOptions& o, TrainingRunResult& r)
      : hw_(hw), t_(w.training), o_(o), r_(r), fw_(framework_personality(w.training)),
        programs_(hw, w.training, o.engine, o.full_sim) {
    programs_.set_limits(o.limits);
    if (o_.on_progress)
      programs_.set_progress([this](std::string_view program, uint64_t done, uint64_t total) {
        o_.on_progress({r_.steps.size(), steps_total_, program, done, total});
      });
    const uint32_t n = fw_.client_count(hw);
    procs_.reserve(n);
    for (uint32_t c = 0; c < n; ++c)
      procs_.push_back({make_compile_cache(t_),
                        fw_.first_device(hw, c), fw_.device_count(hw, c), fw_.host_of(hw, c)});
  }

  void run();

 private:
  // One client process (framework.h: a torch_xla process per device, a JAX process per host, one
  // TF client): its own host clock and compilation cache.
  struct Process {
    compiler::CompileCache cache;
    uint32_t first_device = 0, devices = 1, host = 0;  // the replicas it drives, the host it runs on
    double host_t = 0;  // s: this process's host clock
    uint64_t compiles = 0, cached = 0, persistent_hits = 0, train_examples = 0, eval_examples = 0;
    MetricSamples compile_time{};
  };

  void execute(GraphKind kind, bool grad_buffers, const data::Step& st, uint32_t epoch, bool eval);
  // Host side of a step on every process: trace, cache lookup, compile. Returns the step's
  // compile (the longest of any process) and fills the record's host fields.
  void host_side(GraphKind kind, bool grad_buffers, const data::Step& st, bool eval, StepRecord& rec,
                 TrainingTracer& tracer);
  void sync_host(double bytes_from_device);
  double wait_for_device(uint64_t bytes, double then_s);
  void evaluate(const data::Dataset& eval, const data::LoaderOptions& lo, uint32_t epoch);
  // Clients on one host (all of them compile a new graph at once).
  uint32_t clients_per_host() const { return uint32_t((procs_.size() + hw_.slice.hosts - 1) / hw_.slice.hosts); }
  void finish();
  data::Dataset load(const std::string& ref, const std::string& key, uint64_t default_count);

  const HwConfig& hw_;
  const TrainingWorkload& t_;
  const TrainingRunOptions& o_;
  TrainingRunResult& r_;
  FrameworkPersonality fw_;
  StepPrograms programs_;
  std::vector<Process> procs_;
  std::set<std::string> executed_;   // program keys already executed once (loaded, allocated)
  std::map<std::string, size_t> program_index_;
  double dev_t_ = 0;                 // s: the device clock
  uint64_t steps_run_ = 0;           // steps executed (r_.steps may fold repeats: record_step)
  double end_before_last_ = 0;       // s: the end of the step before the last one
  void record_step(StepRecord rec);
  uint64_t check_run_length(const data::Dataset& train, const data::Dataset& eval, const data::LoaderOptions& lo);
  uint64_t real_tokens_ = 0, padded_tokens_ = 0;
  uint64_t flops_ = 0;
  double device_sum_s_ = 0;
  std::vector<const XlaConstruct*> breaks_;  // model_code graph breaks, each once per train step
  uint64_t steps_total_ = 0;         // train and eval steps of the run (the progress display's)
};

data::Dataset Loop::load(const std::string& ref, const std::string& key, uint64_t default_count) {
  data::DatasetOptions d;
  d.datasets_dir = o_.datasets_dir;
  d.seed = t_.seed;
  d.image_tokens = image_tokens(t_);
  if (default_count) d.default_count = default_count;
  const auto o = t_.origins.find("dataset." + key);
  const data::ErrorWhere where{o != t_.origins.end() ? o->second.file : "workload", "dataset." + key,
                               o != t_.origins.end() ? o->second.line : 0};
  const data::DatasetRef parsed = data::parse_dataset_ref(ref, where);
  if (!o_.tables.empty()) return data::load_dataset(parsed, o_.tables, d, where);
  return data::load_dataset(parsed, d, where);
}

void Loop::run() {
  // Data-parallel replicas (Accelerate's processes): the devices, every core on v2/v3, every chip on
  // a megacore (v4), whose cores split each step's batch between them.
  const uint32_t processes = slice_devices(hw_);
  r_.processes = uint32_t(procs_.size());
  r_.replicas = processes;
  r_.framework = fw_.describe(hw_, t_.launcher);
  if (t_.choices.tpu_runtime == TpuRuntime::kNode && t_.choices.data_location == DataLocation::kLocal)
    throw SimError(fmt::format(
        "tf.data on a TPU Node: UnimplementedError: File system scheme '[local]' not implemented (dataset '{}'). "
        "On a TPU Node the input pipeline runs on your VM but the TPU host reads the files, and it cannot see your "
        "VM's local disk. Copy the dataset to Cloud Storage (gs://...) and set data_location: gcs, or use a TPU VM "
        "(tpu_runtime: vm)", t_.dataset.train));
  if (t_.choices.framework == FrameworkKind::kTfKeras && !t_.jit_compile)
    r_.diagnostics.push_back({"jit_compile", "jit_compile: false", "TPUStrategy compiles every step with XLA",
                              "nothing to change: jit_compile has no effect on TPU",
                              "jit_compile: false has no effect under TPUStrategy: every step is XLA-compiled", 0});
  r_.engine = o_.engine;
  r_.full_sim = o_.full_sim;
  r_.hbm_bytes_per_core = resolve_hw(hw_).device_hbm_bytes;
  r_.megacore = hw_.chip.megacore;

  data::LoaderOptions lo;
  lo.num_processes = processes;
  lo.batch_size = t_.per_device_batch_size;
  lo.split_batches = t_.split_batches;
  lo.even_batches = t_.even_batches;
  lo.drop_last = t_.drop_last;
  lo.gradient_accumulation_steps = t_.gradient_accumulation_steps;
  lo.max_length = t_.max_length;
  lo.padding = t_.choices.padding;
  if (t_.choices.task == Task::kSeq2seq) lo.max_target_length = t_.max_target_length;
  if (const uint32_t s = image_tokens(t_)) {  // an image task: one fixed sequence, no padding
    lo.max_length = s;
    lo.padding = {};
  }
  breaks_ = apply_model_code(t_, lo, r_);
  data::validate(lo, {"workload", "", 0});
  r_.global_batch = lo.global_batch();

  if (o_.on_stage) o_.on_stage("loading datasets");
  data::Dataset train = load(t_.dataset.train, "train", t_.steps * lo.global_batch());
  data::Dataset eval;
  if (!t_.dataset.eval.empty() && t_.choices.eval_strategy != EvalStrategy::kNo) eval = load(t_.dataset.eval, "eval", 0);
  // Task seq2seq: each source example gets a target length (Dataset::with_targets); an endless
  // synthetic target takes the source's count.
  if (!t_.dataset.train_target.empty())
    train = train.with_targets(load(t_.dataset.train_target, "train_target", train.size()), t_.seed);
  if (!eval.empty() && !t_.dataset.eval_target.empty())
    eval = eval.with_targets(load(t_.dataset.eval_target, "eval_target", eval.size()), t_.seed);

  // notebook_launcher forks the processes; a model built inside the training function is a copy per
  // process (docs/sources.md: the cryptic SIGSEGV on small hosts).
  if (t_.choices.launcher == Launcher::kNotebookFork) {
    const BuiltStep& probe = programs_.get({GraphKind::kEval, 1, 1, false, t_.choices.task == Task::kSeq2seq ? 1u : 0u});
    const HostRamNeed ram = host_ram_need(hw_.host, processes, probe.parameter_bytes, t_.build_model_in_each_process);
    if (!ram.fits())
      throw SimError(fmt::format(
          "out of host RAM: launcher notebook_fork with build_model_in_each_process: true holds {} copies of the "
          "model ({} each) in {} processes: {} needed, {} of host RAM (the real run dies with SIGSEGV or is "
          "killed by the OOM killer). Build the model once, before notebook_launcher, and pass it to the "
          "training function (build_model_in_each_process: false), or use launcher: xla_spawn",
          ram.copies, gib(ram.model_bytes), processes, gib(ram.need_bytes), gib(ram.have_bytes)));
  }

  const uint64_t run_steps = check_run_length(train, eval, lo);

  uint64_t train_steps = 0;
  uint32_t micro_steps = 0;  // micro-steps since the last optimizer step (gradient accumulation)
  bool capped = false;
  for (uint32_t epoch = 0; epoch < t_.epochs && !capped; ++epoch) {
    if (o_.on_stage) o_.on_stage(fmt::format("epoch {} of {}", epoch + 1, t_.epochs));
    const data::EpochPlan plan = data::plan_train_epoch(train, lo, t_.seed, epoch, {"workload", "", 0});
    if (epoch == 0 && o_.on_progress) steps_total_ = run_steps;
    for (const data::Step& st : plan.steps) {
      if (t_.steps && train_steps >= t_.steps) {
        capped = true;
        break;
      }
      // torch.optim creates its state lazily in the first optimizer step: a different graph.
      const GraphKind kind = !st.sync ? GraphKind::kAccumulate
                             : r_.optimizer_steps == 0 && fw_.lazy_optimizer_state ? GraphKind::kTrainFirstStep
                                                                                   : GraphKind::kTrain;
      // .grad buffers exist after the first micro-step of an accumulation cycle (step_cache.h).
      execute(kind, micro_steps > 0, st, epoch, false);
      micro_steps = st.sync ? 0 : micro_steps + 1;
      ++train_steps;
      for (const auto& p : st.processes) real_tokens_ += p.real_tokens, padded_tokens_ += p.padded_tokens;
      // Trainer's DefaultFlowCallback after an optimizer step: log (loss.item()), then evaluate.
      if (st.sync && t_.logging_steps && r_.optimizer_steps % t_.logging_steps == 0) {
        // torch_xla: .item() waits for the step's execution and copies the loss to the host
        // (model_code item_in_loop's cost: xla_constructs.h), so the next step's tracing no longer
        // overlaps this step's execution.
        const XlaConstruct& item = find_xla_construct("item_in_loop");
        r_.logging_sync_s += wait_for_device(uint64_t(devices_per_chip(hw_.chip)) * item.host_bytes_fixed, 0);
        ++r_.logging_syncs;
      }
      if (st.sync && t_.choices.eval_strategy == EvalStrategy::kSteps && r_.optimizer_steps % t_.eval_steps == 0) evaluate(eval, lo, epoch);
    }
    r_.epochs_run = epoch + 1;
    if (t_.choices.eval_strategy == EvalStrategy::kEpoch && !eval.empty()) evaluate(eval, lo, epoch);
  }
  // The end of training (saving, the final loss) waits for the device too.
  sync_host(0);
  finish();
}

// The run's steps (train and eval), from the loaders' closed-form counts: every epoch as long as
// the first (capped by `steps`), an evaluation per epoch or per eval_steps optimizer steps. Checked
// against kMaxRunSteps (refused before anything is simulated); the progress display's total.
uint64_t Loop::check_run_length(const data::Dataset& train, const data::Dataset& eval, const data::LoaderOptions& lo) {
  const data::EpochCounts per_epoch = data::count_epoch(train.size(), lo, true);
  using u128 = unsigned __int128;
  u128 train_total = u128(per_epoch.steps) * t_.epochs;
  if (t_.steps) train_total = std::min<u128>(train_total, t_.steps);
  const uint64_t epochs_run = per_epoch.steps ? uint64_t(std::min<u128>(t_.epochs, (train_total + per_epoch.steps - 1) / per_epoch.steps)) : 0;
  u128 eval_passes = 0;
  if (!eval.empty() && t_.choices.eval_strategy == EvalStrategy::kEpoch) eval_passes = epochs_run;
  if (!eval.empty() && t_.choices.eval_strategy == EvalStrategy::kSteps && t_.eval_steps > 0 && per_epoch.steps)
    eval_passes = train_total * per_epoch.optimizer_steps / per_epoch.steps / t_.eval_steps;
  const u128 eval_per_pass = eval_passes ? data::plan_eval(eval, lo, t_.eval_per_device_batch_size, {"workload", "", 0}).steps.size() : 0;
  const u128 total = train_total + eval_passes * eval_per_pass;
  if (total <= kMaxRunSteps) return uint64_t(total);
  const bool by_steps = t_.steps && train_total == t_.steps;
  const std::string key = by_steps ? "steps" : "epochs";
  ConfigErrorInfo i{"workload", key, 0, by_steps ? std::to_string(t_.steps) : std::to_string(t_.epochs),
                      fmt::format("makes a run of {} steps ({} per epoch of {} training examples{}); at most {} (2^20) "
                                  "are simulated, more than the longest published training schedules",
                                  uint64_t(std::min<u128>(total, UINT64_MAX)), per_epoch.steps, train.size(),
                                  eval_passes ? fmt::format(", plus {} evaluation passes of {} steps", uint64_t(eval_passes),
                                                            uint64_t(eval_per_pass))
                                              : "",
                                  kMaxRunSteps),
                      by_steps ? "simulate fewer steps: the steady step time does not change after the first few hundred"
                               : "use fewer epochs, or `steps:` to stop after a number of steps"};
  if (const auto o = t_.origins.find(key); o != t_.origins.end()) i.file = o->second.file, i.line = o->second.line;
  throw ConfigError(i);
}

void Loop::evaluate(const data::Dataset& eval, const data::LoaderOptions& lo, uint32_t epoch) {
  if (o_.on_stage)
    o_.on_stage(t_.choices.eval_strategy == EvalStrategy::kSteps ? fmt::format("evaluation after optimizer step {}", r_.optimizer_steps)
                                            : fmt::format("evaluation after epoch {}", epoch + 1));
  const data::EpochPlan ep = data::plan_eval(eval, lo, t_.eval_per_device_batch_size, {"workload", "", 0});
  uint64_t logits_bytes = 0;
  for (const data::Step& st : ep.steps) {
    execute(GraphKind::kEval, false, st, epoch, true);
    uint64_t ex = 0;
    step_shape(st, &ex);
    logits_bytes += ex * t_.num_labels * 4;
  }
  // gather_for_metrics: the predictions come back to the host, which waits for the device.
  sync_host(double(logits_bytes));
}

void Loop::host_side(GraphKind kind, bool grad_buffers, const data::Step& st, bool eval, StepRecord& rec,
                     TrainingTracer& tracer) {
  // The host runs at most one step ahead: tracing step n waits for step n-2 to complete (the
  // parallel loader's mark_step hands step n-1 to the device while n is traced).
  const double ahead = steps_run_ >= 2 ? end_before_last_ : 0;
  const size_t breaks = eval ? 0 : breaks_.size();
  struct Lookup {
    const StepInfo* info = nullptr;
    compiler::CacheResult result = compiler::CacheResult::kHit;
    uint32_t examples = 0;
  };
  uint64_t global_examples = 0;
  const auto [gb, gs, gt] = step_shape(st, &global_examples);
  std::vector<Lookup> look(procs_.size());
  std::map<uint32_t, uint32_t> compiling_on_host;
  uint32_t compiling = 0;
  for (size_t p = 0; p < procs_.size(); ++p) {
    // A client compiles the shape of its own batch (torch_xla) or the global SPMD program.
    uint32_t b = 0, s = 0, t = 0;
    for (uint32_t c = procs_[p].first_device; c < procs_[p].first_device + procs_[p].devices; ++c) {
      b = std::max(b, st.processes[c].batch_size);
      s = std::max(s, st.processes[c].padded_length);
      t = std::max(t, st.processes[c].target_padded_length);
      look[p].examples += st.processes[c].batch_size;
    }
    if (!fw_.per_client_shapes) b = gb, s = gs, t = gt;
    if (b == 0) continue;  // nothing to run: this process only waits for the others
    look[p].info = &programs_.info({kind, b, s, grad_buffers, t});
    // Writes to the persistent cache are deferred to the step's end: processes that compile the
    // same graph at the same time all miss.
    look[p].result = procs_[p].cache.lookup_or_insert(look[p].info->key, /*defer_write=*/true);
    if (look[p].result == compiler::CacheResult::kMiss) ++compiling, ++compiling_on_host[procs_[p].host];
  }
  const double scale = host_speed_scale(hw_.host);
  // TPU Node: the batch crosses the network from the user's VM (tf.data prefetch pipelines it with
  // the device, so it is host-side time of the step).
  double remote_input_s = 0;
  if (t_.choices.tpu_runtime == TpuRuntime::kNode) {
    const uint64_t bytes = programs_.get({kind, gb, gs, grad_buffers, gt}).compiled.infeed_bytes * r_.replicas *
                           cores_per_device(hw_.chip);  // the program's infeed is per core
    remote_input_s = hw_.host.remote_input_latency_s + double(bytes) / (hw_.host.remote_input_gbyte_per_s * 1e9);
  }
  rec.host_s = 0;
  rec.compile_s = 0;
  for (size_t p = 0; p < procs_.size(); ++p) {
    if (!look[p].info) continue;
    Process& pr = procs_[p];
    const StepInfo& info = *look[p].info;
    pr.host_t = std::max(pr.host_t, ahead);
    // torch_xla re-records the graph every step; jit/tf.function trace only a new signature.
    // Dispatch (the Python loop, the loader) is per execution of steps_per_execution steps.
    const bool new_signature = look[p].result != compiler::CacheResult::kHit;
    const double trace_s = (fw_.trace_every_step || new_signature ? double(info.graph_nodes) * hw_.host.trace_s_per_node : 0) * scale +
                           hw_.host.step_overhead_s * scale / fw_.steps_per_execution + remote_input_s;
    if (p == 0) tracer.host("tracing", fmt::format("step {}", rec.index), pr.host_t, trace_s);
    pr.host_t += trace_s;
    rec.host_s = std::max(rec.host_s, trace_s);
    // Concurrent compilations (one single-threaded compiler per process) share their host's CPUs.
    const uint32_t sharing = std::max(compiling_on_host[pr.host], 1u);
    double compile_s = 0;
    switch (look[p].result) {
      case compiler::CacheResult::kMiss:
        compile_s = compile_time_s(hw_.host, info.hlo_ops, info.kernels, sharing);
        ++pr.compiles;
        pr.compile_time.add(compile_s);
        rec.compiled = true;
        break;
      case compiler::CacheResult::kPersistentHit:
        // Deserializing a cached executable costs about a compilation's fixed part, not its passes.
        compile_s = hw_.host.compile_base_s * scale;
        ++pr.persistent_hits;
        rec.persistent_hit = true;
        break;
      case compiler::CacheResult::kHit:
        ++pr.cached;
        break;
    }
    // Each graph break cuts a train step into one more graph: a compile of its fixed part when the
    // step compiles, a cache hit otherwise (xla_constructs.h).
    for (size_t i = 0; i < breaks; ++i) {
      if (look[p].result == compiler::CacheResult::kMiss) {
        const double extra = compile_time_s(hw_.host, 0, 0, sharing);
        compile_s += extra;
        pr.compile_time.add(extra);
        ++pr.compiles;
      } else {
        ++pr.cached;
      }
    }
    if (p == 0 && compile_s > 0) tracer.host("compile", info.name, pr.host_t, compile_s);
    pr.host_t += compile_s;
    rec.compile_s = std::max(rec.compile_s, compile_s);
    (eval ? pr.eval_examples : pr.train_examples) += look[p].examples;
  }
  for (size_t p = 0; p < procs_.size(); ++p)
    if (look[p].result == compiler::CacheResult::kMiss && look[p].info) procs_[p].cache.store(look[p].info->key);
  rec.compiling_processes = compiling;
  r_.mark_steps += 1;
}

void Loop::execute(GraphKind kind, bool grad_buffers, const data::Step& st, uint32_t epoch, bool eval) {
  uint64_t examples = 0;
  const auto [b, s, t] = step_shape(st, &examples);
  BuiltStep& prog = programs_.get({kind, b, s, grad_buffers, t});
  const std::string key = prog.compiled.key.hex();

  StepRecord rec;
  rec.index = steps_run_;
  rec.kind = eval ? "eval" : "train";
  rec.graph = graph_kind_name(kind);
  rec.grad_buffers = grad_buffers;
  rec.epoch = epoch;
  rec.batch = b;
  rec.seq = s;
  rec.examples = examples;

  TrainingTracer tracer(o_.trace, o_.trace_steps, hw_.slice.chips(), hw_.chip.cores, rec.index);
  host_side(kind, grad_buffers, st, eval, rec, tracer);
  const size_t breaks = eval ? 0 : breaks_.size();
  // The SPMD step (and its all-reduce) starts when the last process has dispatched it.
  double host_ready = 0;
  for (const Process& pr : procs_) host_ready = std::max(host_ready, pr.host_t);
  // The program was compiled (the host paid for it); allocating its buffers fails.
  if (prog.compiled.memory.peak_bytes > r_.hbm_bytes_per_core)
    out_of_hbm(prog, r_.hbm_bytes_per_core, hw_.chip.megacore, std::max(host_ready, dev_t_),
               out_of_hbm_advice(t_, prog.compiled.memory.persistent_bytes > r_.hbm_bytes_per_core));

  rec.start_s = std::max(host_ready, dev_t_);
  if (executed_.insert(key).second) {
    rec.first_execution = true;
    rec.setup_s = hw_.host.program_load_s;
    if (executed_.size() == 1) {
      // The very first execution: every chip's PCIe link carries its devices' copies of the
      // parameters (one on a megacore) and its cores' shares of the first batch (which later steps
      // prefetch inside their programs).
      const uint64_t per_chip = uint64_t(devices_per_chip(hw_.chip)) * prog.parameter_bytes +
                                uint64_t(hw_.chip.cores) * prog.compiled.infeed_bytes;
      r_.upload_time_s = pcie_transfer_s(hw_, true, per_chip);
      r_.transfer_to_device.add(r_.upload_time_s);
      r_.inbound_bytes.add(double(per_chip));
      rec.setup_s += r_.upload_time_s;
    }
  }
  const DeviceRun run = programs_.execute(prog, tracer.detail(rec.index, rec.first_execution, rec.start_s + rec.setup_s));
  if (o_.on_progress) o_.on_progress({r_.steps.size() + 1, std::max<uint64_t>(steps_total_, r_.steps.size() + 1), {}, 0, 0});
  rec.device_s = run.device_s;
  rec.replayed = run.replayed;
  rec.flops = device_flops(prog, hw_);
  rec.model_flops = device_flops(prog, hw_, /*recompute=*/false);
  rec.allreduce_s = std::min(run.device_s, run.allreduce_s);
  rec.collective_s = std::min(run.device_s, run.collective_s);
  rec.collectives = run.collectives;
  const double prev_end = dev_t_;
  dev_t_ = rec.start_s + rec.setup_s + rec.device_s;
  rec.end_s = dev_t_;
  rec.step_time_s = rec.end_s - prev_end;
  if (rec.first_execution) {
    tracer.host("transfer", "program load: " + prog.name, rec.start_s, hw_.host.program_load_s);
    tracer.host("transfer", "parameter upload", rec.start_s + hw_.host.program_load_s, rec.setup_s - hw_.host.program_load_s);
  }
  if (tracer.traced(rec.index, rec.first_execution, rec.start_s + rec.setup_s, rec.end_s))
    tracer.step(prog.name, rec.start_s + rec.setup_s, rec.device_s);
  // Graph breaks: the host waits for the device, runs the fallback op on the tensor copied over
  // PCIe, and dispatches the rest of the step; the host/device overlap of the step is lost.
  for (size_t i = 0; i < breaks; ++i) {
    const XlaConstruct& c = *breaks_[i];
    const uint64_t bytes =
        uint64_t(devices_per_chip(hw_.chip)) * (c.host_bytes_fixed + c.host_bytes_per_token * uint64_t(b) * s);
    wait_for_device(bytes, trace_time_s(hw_.host, 0));
    ++r_.fallback_counters[c.aten_op];
    ++r_.graph_breaks;
  }
  if (!eval)
    for (XlaDiagnostic& d : r_.diagnostics) ++d.occurrences;
  r_.execute_time.add(rec.device_s);
  if (prog.compiled.infeed_bytes) {
    r_.transfer_to_device.add(pcie_transfer_s(hw_, true, hw_.chip.cores * prog.compiled.infeed_bytes));
    r_.inbound_bytes.add(double(hw_.chip.cores * prog.compiled.infeed_bytes));
  }

  // Where the device's time went: the idle gap before the step is the compile (when there was
  // one) and otherwise the host; then setup, then the step itself.
  const double gap = rec.start_s - prev_end;
  const double gap_compile = std::min(gap, rec.compile_s);
  r_.breakdown.compile += gap_compile;
  if (eval) {
    r_.breakdown.eval += gap - gap_compile + rec.setup_s + rec.device_s;
  } else {
    r_.breakdown.host += gap - gap_compile;
    r_.breakdown.warmup += rec.setup_s;
    r_.breakdown.device += rec.device_s - rec.allreduce_s;
    r_.breakdown.allreduce += rec.allreduce_s;
    add_collectives(r_, prog.compiled, rec.collectives);
    ++r_.train_steps;
    r_.train_examples += examples;
    if (st.sync) ++r_.optimizer_steps;
  }
  if (eval) ++r_.eval_steps;
  flops_ += device_flops(prog, hw_);
  device_sum_s_ += rec.device_s;

  auto [it, added] = program_index_.emplace(key, r_.programs.size());
  if (added) {
    ProgramRecord p;
    p.name = prog.name;
    p.graph = rec.graph;
    p.key = key;
    p.batch = b;
    p.seq = s;
    p.graph_nodes = prog.graph_nodes;
    p.hlo_ops = prog.compiled.hlo_ops;
    p.kernels = prog.compiled.kernels;
    p.persistent_bytes = prog.compiled.memory.persistent_bytes;
    p.peak_hbm_bytes = prog.compiled.memory.peak_bytes;
    p.cmem_bytes_per_chip = prog.compiled.memory.cmem_chip_bytes;
    p.parameter_bytes = prog.parameter_bytes;
    p.optimizer_state_bytes = prog.optimizer_state_bytes;
    p.allreduce_bytes = prog.compiled.allreduce_bytes;
    for (const auto& a : prog.compiled.allreduces)
      p.allreduces.push_back({a.bytes, compiler::algorithm_name(a.algorithm), a.after_kernel, a.overlapped});
    p.allgather_bytes = prog.compiled.allgather_bytes;
    p.reducescatter_bytes = prog.compiled.reducescatter_bytes;
    p.collectives = rec.collectives;
    p.memory = prog.memory;
    if (p.peak_hbm_bytes > r_.peak_hbm_bytes) r_.peak_memory = p.memory;
    p.flops = device_flops(prog, hw_);
    p.compile_s = compile_time_s(hw_.host, prog.compiled.hlo_ops, prog.compiled.kernels, clients_per_host());
    p.device_s = rec.device_s;
    p.op_profile = run.op_profile;
    r_.programs.push_back(p);
    r_.peak_hbm_bytes = std::max(r_.peak_hbm_bytes, p.peak_hbm_bytes);
  }
  ++r_.programs[it->second].executions;
  record_step(std::move(rec));
}

namespace {
bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }
// `b` is `a` again, apart from its place in the run (index, start and end) and rounding.
bool same_step(const StepRecord& a, const StepRecord& b) {
  return a.kind == b.kind && a.graph == b.graph && a.grad_buffers == b.grad_buffers && a.epoch == b.epoch &&
         a.batch == b.batch && a.seq == b.seq && a.examples == b.examples && !b.compiled && !a.compiled &&
         !b.persistent_hit && !a.persistent_hit && !b.first_execution && !a.first_execution &&
         a.compiling_processes == b.compiling_processes && a.flops == b.flops && a.model_flops == b.model_flops &&
         near(a.host_s, b.host_s) && near(a.compile_s, b.compile_s) && near(a.setup_s, b.setup_s) &&
         near(a.device_s, b.device_s) && near(a.allreduce_s, b.allreduce_s) && near(a.collective_s, b.collective_s) &&
         near(a.step_time_s, b.step_time_s) && a.collectives == b.collectives;
}
}  // namespace

void Loop::record_step(StepRecord rec) {
  end_before_last_ = r_.steps.empty() ? 0 : r_.steps.back().end_s;
  ++steps_run_;
  if (r_.steps.size() >= kStepsListedInFull && same_step(r_.steps.back(), rec)) {
    StepRecord& last = r_.steps.back();
    ++last.repeat;
    last.end_s = rec.end_s;
    return;
  }
  r_.steps.push_back(std::move(rec));
}

// A synchronous device->host read inside the loop (a graph break's fallback tensor, a logged loss):
// the host waits for the device, pays kGraphBreakSyncS and the PCIe copy of `bytes`, then `then_s`
// (the dispatch of a graph break's second graph). Returns the sync's own cost, s.
double Loop::wait_for_device(uint64_t bytes, double then_s) {
  const double xfer = pcie_transfer_s(hw_, false, bytes);
  r_.transfer_from_device.add(xfer);
  r_.outbound_bytes.add(double(bytes));
  for (Process& pr : procs_) pr.host_t = std::max(pr.host_t, dev_t_) + kGraphBreakSyncS + xfer + then_s;
  return kGraphBreakSyncS + xfer;
}

void Loop::sync_host(double bytes_from_device) {
  // The host blocks until the device is done, then reads the results back over PCIe.
  const double xfer = pcie_transfer_s(hw_, false, uint64_t(bytes_from_device));
  if (bytes_from_device > 0) {
    r_.transfer_from_device.add(xfer);
    r_.outbound_bytes.add(double(uint64_t(bytes_from_device)));  // the bytes the transfer time is of
  }
  for (Process& pr : procs_) pr.host_t = std::max(pr.host_t, dev_t_) + xfer;
}

void Loop::finish() {
  double host_t = 0;
  for (const Process& pr : procs_) host_t = std::max(host_t, pr.host_t);
  r_.total_time_s = std::max(host_t, dev_t_);
  // Time after the last execution (host reading results) is host time.
  r_.breakdown.host += r_.total_time_s - dev_t_;
  // The summary shows the busiest process's torch_xla metrics (most compiles, then most compile time).
  size_t busiest = 0;
  auto total = [](const MetricSamples& m) { double t = 0; for (double v : m.samples) t += v; return t; };
  for (size_t p = 1; p < procs_.size(); ++p) {
    const Process &a = procs_[p], &b = procs_[busiest];
    if (a.compiles > b.compiles || (a.compiles == b.compiles && total(a.compile_time) > total(b.compile_time))) busiest = p;
  }
  const Process& bp = procs_[busiest];
  r_.busiest_process = uint32_t(busiest);
  r_.compiles = bp.compiles;
  r_.cached_compiles = bp.cached;
  r_.persistent_hits = bp.persistent_hits;
  r_.compile_time = bp.compile_time;
  r_.compile_time_s = total(bp.compile_time);

  std::vector<double> steady;
  bool warm = false;
  double steady_flops = 0, steady_time = 0, steady_device = 0, steady_allreduce = 0, steady_collective = 0;
  for (size_t i = 0; i < r_.steps.size(); ++i) {
    const StepRecord& s = r_.steps[i];
    if (s.kind != "train" || s.compiled || s.persistent_hit || s.first_execution) continue;
    if (!warm) r_.warmup_time_s = i ? r_.steps[i - 1].end_s : 0;
    warm = true;
    const double n = double(s.repeat);
    steady.insert(steady.end(), s.repeat, s.step_time_s);
    steady_flops += n * double(s.model_flops);
    steady_time += n * s.step_time_s;
    steady_device += n * s.device_s;
    steady_allreduce += n * s.allreduce_s;
    steady_collective += n * s.collective_s;
  }
  // Flops and peaks of a device (both cores of a megacore).
  const double device_peak = resolve_hw(hw_).device_peak_flop_per_s;
  r_.mfu = steady_time > 0 ? steady_flops / (steady_time * device_peak) : 0;
  r_.allreduce_share = steady_device > 0 ? steady_allreduce / steady_device : 0;
  r_.collective_share = steady_device > 0 ? steady_collective / steady_device : 0;
  if (!warm) r_.warmup_time_s = r_.total_time_s;
  r_.steady_step_time_s = median(steady);
  r_.examples_per_s = r_.total_time_s > 0 ? double(r_.train_examples) / r_.total_time_s : 0;
  r_.steady_examples_per_s = r_.steady_step_time_s > 0 ? double(r_.global_batch) / r_.steady_step_time_s : 0;
  r_.padding_waste = real_tokens_ + padded_tokens_ ? double(padded_tokens_) / double(real_tokens_ + padded_tokens_) : 0;
  const double peak_flop_per_s = device_peak;
  r_.mxu_utilization = device_sum_s_ > 0 ? double(flops_) / (device_sum_s_ * peak_flop_per_s) : 0;

  for (uint32_t p = 0; p < r_.processes; ++p) {
    const Process& pc = procs_[p];
    ProcessRecord pr;
    pr.index = p;
    pr.chip = pc.first_device / devices_per_chip(hw_.chip);
    pr.core = (pc.first_device % devices_per_chip(hw_.chip)) * cores_per_device(hw_.chip);
    pr.cores = pc.devices;
    pr.host = pc.host;
    pr.train_examples = pc.train_examples;
    pr.eval_examples = pc.eval_examples;
    pr.compiles = pc.compiles;
    pr.cached_compiles = pc.cached;
    pr.persistent_hits = pc.persistent_hits;
    pr.compile_time_s = total(pc.compile_time);
    r_.process_records.push_back(pr);
  }
  r_.simulations = programs_.simulations();
  r_.replays = programs_.replays();
  r_.compile_wall_s = programs_.compile_wall_s();
  r_.simulate_wall_s = programs_.simulate_wall_s();
}

}  // namespace

TrainingRunResult run_training(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunOptions& opts) {
  if (w.kind != "training")
    throw ConfigError({"", "kind", 0, w.kind, "run_training needs a workload of kind: training", ""});
  if (!w.training.auto_find_batch_size) {
    TrainingRunResult r;
    Loop(hw, w, opts, r).run();
    return r;
  }
  // accelerate's find_executable_batch_size around Trainer's inner training loop: an out-of-memory
  // error restarts training from scratch at half the batch (the failed attempt's time is spent),
  // down to 1. Attempts run untraced; the one that fits is rerun with the trace when there is one
  // (the simulation is deterministic).
  WorkloadConfig wb = w;
  BatchSearch search;
  for (uint32_t b = w.training.per_device_batch_size;; b /= 2) {
    wb.training.per_device_batch_size = b;
    search.tried.push_back(b);
    TrainingRunResult r;
    TrainingRunOptions quiet = opts;
    quiet.trace = nullptr;
    try {
      Loop(hw, wb, quiet, r).run();
    } catch (const OutOfHbmError& e) {
      if (b <= 1) throw;
      search.failed_s += e.elapsed_s;
      continue;
    }
    if (opts.trace) {
      r = TrainingRunResult{};
      Loop(hw, wb, opts, r).run();
    }
    search.used = b;
    r.batch_search = search;
    r.total_time_s += search.failed_s;
    r.breakdown.batch_search = search.failed_s;
    r.examples_per_s = r.total_time_s > 0 ? double(r.train_examples) / r.total_time_s : 0;
    return r;
  }
}

}  // namespace tpusim
