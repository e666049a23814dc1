// The torch_xla training loop, simulated. Time is kept on two clocks of the (representative)
// process: the host's (tracing, compiling, dispatching) and the device's (the slice executing the
// step programs). Tracing step n+1 overlaps executing step n, so in steady state a step takes
// max(host, device); a compile blocks the host, hence the device waits for it.
#include "workloads/loop/training_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "base/config_error.h"
#include "compiler/compile_cache.h"
#include "sim/base/sim_error.h"
#include "workloads/config/xla_constructs.h"
#include "workloads/data/batching.h"
#include "workloads/loop/framework.h"
#include "workloads/loop/host_costs.h"
#include "workloads/loop/native_steps.h"
#include "workloads/loop/program_memo.h"
#include "workloads/loop/step_loop.h"

namespace tpusim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / kGiB); }

// What to change after an out-of-HBM failure, given what the workload already does.
std::string out_of_hbm_advice(const TrainingWorkload& t, bool state_alone_too_big) {
  // The weights and optimizer state alone do not fit: a smaller batch cannot help.
  if (state_alone_too_big)
    return std::string("The parameters and optimizer state alone exceed the device's HBM: ") +
           (t.sharding == Sharding::kDataParallel ? "shard them with sharding: fsdp over enough devices"
                                                          : "shard them over more devices (a larger slice)") +
           (t.precision == Precision::kFp32 ? ", use precision: bf16" : "") + ", or train a smaller model";
  std::string a = "Reduce per_device_batch_size or max_length";
  if (t.precision == Precision::kFp32) a += ", use precision: bf16";
  const bool remat = effective_remat_policy(t) != models::RematPolicy::kNone;
  if (t.sharding == Sharding::kDataParallel)
    a += std::string(remat ? "" : ", recompute activations with remat_policy: full") +
         ", or shard parameters, gradients and optimizer state with sharding: fsdp";
  else if (!remat)
    a += ", or recompute activations with remat_policy: full (fsdp_grad_ckpt: true)";
  else if (effective_remat_policy(t) != models::RematPolicy::kFull)
    a += ", or recompute more of each layer (remat_policy: full)";
  return a;
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

class TrainingDriver {
 public:
  TrainingDriver(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunOptions& o, TrainingRunResult& r)
      : hw_(hw),
        t_(w.training()),
        o_(o),
        r_(r),
        lazy_optimizer_state_(framework_personality(w.training()).lazy_optimizer_state),
        source_(hw, w.training()),
        memo_(program_memo(hw, w, o)),
        memo_source_(memo_ ? std::make_unique<MemoSteps>(source_, *memo_) : nullptr),
        loop_(hw, setup(hw, w.training()), memo_source_ ? static_cast<StepSource&>(*memo_source_) : source_, o, r) {
    loop_.set_memo(memo_ ? &*memo_ : nullptr);
  }

  void run();

 private:
  static LoopSetup setup(const HwConfig& hw, const TrainingWorkload& t) {
    LoopSetup s;
    s.framework = framework_personality(t);
    s.devices = slice_devices(hw);
    s.launcher = enum_name(t.launcher);
    s.make_cache = [&t] { return make_compile_cache(t); };
    s.remote_input = t.tpu_runtime == TpuRuntime::kNode;
    s.out_of_hbm_advice = [&t](bool state_alone_too_big) { return out_of_hbm_advice(t, state_alone_too_big); };
    return s;
  }
  static std::optional<ProgramMemo> program_memo(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunOptions& o) {
    if (o.program_memo_dir.empty() || o.full_sim || o.trace) return std::nullopt;
    return ProgramMemo(o.program_memo_dir, program_memo_salt(hw, w, o.engine));
  }
  void execute(GraphKind kind, bool grad_buffers, const data::Step& st, uint32_t epoch, bool eval) {
    loop_.step({kind, grad_buffers, eval, epoch, &st});
  }
  void evaluate(const data::Dataset& eval, const data::LoaderOptions& lo, uint32_t epoch);
  uint64_t check_run_length(const data::Dataset& train, const data::Dataset& eval, const data::LoaderOptions& lo);
  data::Dataset load(const std::string& ref, const std::string& key, uint64_t default_count);

  const HwConfig& hw_;
  const TrainingWorkload& t_;
  const TrainingRunOptions& o_;
  TrainingRunResult& r_;
  bool lazy_optimizer_state_;  // torch.optim: the first optimizer step is its own graph
  NativeSteps source_;
  std::optional<ProgramMemo> memo_;            // --program-memo (a sweep's points share one)
  std::unique_ptr<MemoSteps> memo_source_;     // source_ behind the memo
  StepLoop loop_;
  uint64_t real_tokens_ = 0, padded_tokens_ = 0;
  uint32_t eval_shard_batch_ = 0;  // eval examples per batch shard (shard_examples)
};

data::Dataset TrainingDriver::load(const std::string& ref, const std::string& key, uint64_t default_count) {
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

void TrainingDriver::run() {
  // Data-parallel replicas (Accelerate's processes): the devices, every core on v2/v3, every chip on
  // a megacore (v4), whose cores split each step's batch between them.
  const uint32_t processes = slice_devices(hw_);
  if (t_.tpu_runtime == TpuRuntime::kNode && t_.data_location == DataLocation::kLocal)
    throw SimError(fmt::format(
        "tf.data on a TPU Node: UnimplementedError: File system scheme '[local]' not implemented (dataset '{}'). "
        "On a TPU Node the input pipeline runs on your VM but the TPU host reads the files, and it cannot see your "
        "VM's local disk. Copy the dataset to Cloud Storage (gs://...) and set data_location: gcs, or use a TPU VM "
        "(tpu_runtime: vm)", t_.dataset.train));
  if (t_.framework == FrameworkKind::kTfKeras && !t_.jit_compile)
    r_.diagnostics.push_back({"jit_compile", "jit_compile: false", "TPUStrategy compiles every step with XLA",
                              "nothing to change: jit_compile has no effect on TPU",
                              "jit_compile: false has no effect under TPUStrategy: every step is XLA-compiled", 0});

  // The loader's processes are the batch shards: each device, or each tensor x sequence group of
  // devices, which compute the same examples (shard_examples); the other slices' take their shares too.
  const models::Mesh mesh = resolve_mesh(t_, processes, hw_.multislice.slices);
  data::LoaderOptions lo;
  lo.num_processes = processes / shard_devices(mesh) * hw_.multislice.slices;
  lo.batch_size = shard_examples(t_, t_.per_device_batch_size, mesh);
  eval_shard_batch_ = shard_examples(t_, t_.eval_per_device_batch_size, mesh, "eval_per_device_batch_size");
  lo.split_batches = t_.split_batches;
  lo.even_batches = t_.even_batches;
  lo.drop_last = t_.drop_last;
  lo.gradient_accumulation_steps = t_.gradient_accumulation_steps;
  lo.max_length = t_.max_length;
  lo.padding = t_.padding;
  if (t_.task == Task::kSeq2seq) lo.max_target_length = t_.max_target_length;
  if (const uint32_t s = image_tokens(t_)) {  // an image task: one fixed sequence, no padding
    lo.max_length = s;
    lo.padding = {};
  }
  loop_.set_breaks(apply_model_code(t_, lo, r_));
  data::validate(lo, {"workload", "", 0});
  r_.global_batch = lo.global_batch();

  if (o_.on_stage) o_.on_stage("loading datasets");
  data::Dataset train = load(t_.dataset.train, "train", t_.steps * lo.global_batch());
  data::Dataset eval;
  if (!t_.dataset.eval.empty() && t_.eval_strategy != EvalStrategy::kNo) eval = load(t_.dataset.eval, "eval", 0);
  // Task seq2seq: each source example gets a target length (Dataset::with_targets); an endless
  // synthetic target takes the source's count.
  if (!t_.dataset.train_target.empty())
    train = train.with_targets(load(t_.dataset.train_target, "train_target", train.size()), t_.seed);
  if (!eval.empty() && !t_.dataset.eval_target.empty())
    eval = eval.with_targets(load(t_.dataset.eval_target, "eval_target", eval.size()), t_.seed);

  // notebook_launcher forks the processes; a model built inside the training function is a copy per
  // process (docs/sources.md: the cryptic SIGSEGV on small hosts).
  if (t_.launcher == Launcher::kNotebookFork) {
    const BuiltStep& probe = loop_.program({GraphKind::kEval, 1, 1, false, t_.task == Task::kSeq2seq ? 1u : 0u});
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
    if (epoch == 0 && o_.on_progress) loop_.set_steps_total(run_steps);
    for (const data::Step& st : plan.steps) {
      if (t_.steps && train_steps >= t_.steps) {
        capped = true;
        break;
      }
      // torch.optim creates its state lazily in the first optimizer step: a different graph.
      const GraphKind kind = !st.sync ? GraphKind::kAccumulate
                             : r_.optimizer_steps == 0 && lazy_optimizer_state_ ? GraphKind::kTrainFirstStep
                                                                                   : GraphKind::kTrain;
      // .grad buffers exist after the first micro-step of an accumulation cycle (step_source.h).
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
        r_.logging_sync_s += loop_.wait_for_device(uint64_t(devices_per_chip(hw_.chip)) * item.host_bytes_fixed, 0);
        ++r_.logging_syncs;
      }
      if (st.sync && t_.eval_strategy == EvalStrategy::kSteps && r_.optimizer_steps % t_.eval_steps == 0) evaluate(eval, lo, epoch);
    }
    r_.epochs_run = epoch + 1;
    if (t_.eval_strategy == EvalStrategy::kEpoch && !eval.empty()) evaluate(eval, lo, epoch);
  }
  // The end of training (saving, the final loss) waits for the device too.
  loop_.sync_host(0);
  r_.padding_waste = real_tokens_ + padded_tokens_ ? double(padded_tokens_) / double(real_tokens_ + padded_tokens_) : 0;
  loop_.finish();
}

// The run's steps (train and eval), from the loaders' closed-form counts: every epoch as long as
// the first (capped by `steps`), an evaluation per epoch or per eval_steps optimizer steps. Checked
// against kMaxRunSteps (refused before anything is simulated); the progress display's total.
uint64_t TrainingDriver::check_run_length(const data::Dataset& train, const data::Dataset& eval, const data::LoaderOptions& lo) {
  const data::EpochCounts per_epoch = data::count_epoch(train.size(), lo, true);
  using u128 = unsigned __int128;
  u128 train_total = u128(per_epoch.steps) * t_.epochs;
  if (t_.steps) train_total = std::min<u128>(train_total, t_.steps);
  const uint64_t epochs_run = per_epoch.steps ? uint64_t(std::min<u128>(t_.epochs, (train_total + per_epoch.steps - 1) / per_epoch.steps)) : 0;
  u128 eval_passes = 0;
  if (!eval.empty() && t_.eval_strategy == EvalStrategy::kEpoch) eval_passes = epochs_run;
  if (!eval.empty() && t_.eval_strategy == EvalStrategy::kSteps && t_.eval_steps > 0 && per_epoch.steps)
    eval_passes = train_total * per_epoch.optimizer_steps / per_epoch.steps / t_.eval_steps;
  const u128 eval_per_pass = eval_passes ? data::plan_eval(eval, lo, eval_shard_batch_, {"workload", "", 0}).steps.size() : 0;
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

void TrainingDriver::evaluate(const data::Dataset& eval, const data::LoaderOptions& lo, uint32_t epoch) {
  if (o_.on_stage)
    o_.on_stage(t_.eval_strategy == EvalStrategy::kSteps ? fmt::format("evaluation after optimizer step {}", r_.optimizer_steps)
                                            : fmt::format("evaluation after epoch {}", epoch + 1));
  const data::EpochPlan ep = data::plan_eval(eval, lo, eval_shard_batch_, {"workload", "", 0});
  uint64_t logits_bytes = 0;
  for (const data::Step& st : ep.steps) {
    execute(GraphKind::kEval, false, st, epoch, true);
    uint64_t ex = 0;
    step_shape(st, &ex);
    logits_bytes += ex * t_.num_labels * 4;
  }
  // gather_for_metrics: the predictions come back to the host, which waits for the device.
  loop_.sync_host(double(logits_bytes));
}

}  // namespace

TrainingRunResult run_training(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunOptions& opts) {
  if (w.kind() != WorkloadKind::kTraining)
    throw ConfigError({"", "kind", 0, enum_name(w.kind()), "run_training needs a workload of kind: training", ""});
  if (!w.training().auto_find_batch_size) {
    TrainingRunResult r;
    TrainingDriver(hw, w, opts, r).run();
    return r;
  }
  // accelerate's find_executable_batch_size around Trainer's inner training loop: an out-of-memory
  // error restarts training from scratch at half the batch (the failed attempt's time is spent),
  // down to 1. Attempts run untraced; the one that fits is rerun with the trace when there is one
  // (the simulation is deterministic).
  WorkloadConfig wb = w;
  BatchSearch search;
  for (uint32_t b = uint32_t(w.training().per_device_batch_size);; b /= 2) {  // whole (the config check)
    wb.training().per_device_batch_size = b;
    search.tried.push_back(b);
    TrainingRunResult r;
    TrainingRunOptions quiet = opts;
    quiet.trace = nullptr;
    try {
      TrainingDriver(hw, wb, quiet, r).run();
    } catch (const OutOfHbmError& e) {
      if (b <= 1) throw;
      search.failed_s += e.elapsed_s;
      continue;
    }
    if (opts.trace) {
      r = TrainingRunResult{};
      TrainingDriver(hw, wb, opts, r).run();
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
