// The training driver on bert-tiny and tiny synthetic datasets (label unit): compiles per padded
// shape, the short last batch, eval programs, the persistent cache, bf16 memory, the first optimizer
// step, replay == full simulation, out-of-HBM and out-of-host-RAM errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "sim/base/sim_error.h"
#include "workloads/data/batching.h"
#include "workloads/data/dataset.h"
#include "workloads/loop/host_costs.h"
#include "workloads/loop/native_steps.h"
#include "workloads/loop/step_executor.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"
#include "workloads/config/xla_constructs.h"

namespace tpusim {
namespace {

const HwConfig& v3_8() {
  static const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  return hw;
}

// bert-tiny, 4 per core (global 32), one epoch, fixed-length data padded to max_length 64. Each line
// of `extra` ("key: value") replaces the base's line of the same key or adds one.
WorkloadConfig tiny(const std::string& extra = "") {
  std::vector<std::string> lines = {"kind: training", "model: bert-tiny", "dataset: {train: 'fixed:40:96'}",
                                    "max_length: 64", "per_device_batch_size: 4", "optimizer: adamw"};
  size_t from = 0;
  while (from < extra.size()) {
    const size_t nl = extra.find('\n', from);
    const std::string line = extra.substr(from, nl - from);
    from = nl == std::string::npos ? extra.size() : nl + 1;
    const std::string key = line.substr(0, line.find(':') + 1);
    std::erase_if(lines, [&](const std::string& l) { return l.rfind(key, 0) == 0; });
    lines.push_back(line);
  }
  std::string yaml;
  for (const auto& l : lines) yaml += l + "\n";
  return load_workload_config_text(yaml, "tiny.yaml");
}

TrainingRunResult run(const WorkloadConfig& w, bool full_sim = false, const HwConfig& hw = v3_8()) {
  TrainingRunOptions o;
  o.engine = "analytical";
  o.full_sim = full_sim;
  return run_training(hw, w, o);
}

// Every program's op profile (where its device time went, kernel by kernel, on the core that
// finished last) adds up to the program's device time, and its flops to the program's.
TEST(Training, OpProfileAddsUpToEachProgramsDeviceTimeAndFlops) {
  for (const std::string extra : {"", "sharding: fsdp\n"}) {
    const TrainingRunResult r = run(tiny(extra));
    ASSERT_FALSE(r.programs.empty());
    for (const ProgramRecord& p : r.programs) {
      ASSERT_TRUE(p.op_profile) << p.name;
      const OpProfile& op = *p.op_profile;
      ASSERT_FALSE(op.entries.empty()) << p.name;
      double time = 0;
      uint64_t cycles = 0, flops = 0;
      for (const OpProfileEntry& e : op.entries) {
        time += e.time_s;
        cycles += e.cycles;
        flops += e.flops;
        EXPECT_GE(e.count, 1u);
      }
      EXPECT_DOUBLE_EQ(op.time_s, p.device_s) << p.name;
      EXPECT_NEAR(time, p.device_s, 1e-12) << p.name;
      EXPECT_EQ(flops, p.flops) << p.name;
      for (size_t e = 1; e < op.entries.size(); ++e) EXPECT_GE(op.entries[e - 1].cycles, op.entries[e].cycles);
      if (p.graph == GraphKind::kTrain) {
        const bool collective = std::any_of(op.entries.begin(), op.entries.end(),
                                            [](const OpProfileEntry& e) { return e.bound == OpBound::kIci; });
        EXPECT_TRUE(collective) << p.name;
      }
    }
  }
}

// bert-tiny at 16 x 128 tokens per core: its LayerNorm backward's dot, with the column sums merged
// into it, has 2048-row lines whose whole tiles do not fit in VMEM beside the epilogue; the sums are
// accumulated across tiles instead, and the run completes (it failed with "cannot be tiled").
TEST(Training, MergedReductionsAccumulateAcrossTilesWhenWholeLinesDoNotFit) {
  for (const char* precision : {"fp32", "bf16"}) {
    const TrainingRunResult r = run(tiny(std::string("precision: ") + precision +
                                         "\nper_device_batch_size: 16\nmax_length: 128\n"
                                         "dataset: {train: 'fixed:128:256'}"));
    EXPECT_EQ(r.train_steps, 2u) << precision;
    EXPECT_GT(r.total_time_s, 0) << precision;
  }
}

TEST(Training, FirstOptimizerStepIsASecondCompile) {
  // AdamW creates its moments in the first optimizer step: that graph differs from later steps'.
  const TrainingRunResult r = run(tiny());
  ASSERT_EQ(r.train_steps, 3u);  // 96 examples / 32
  EXPECT_EQ(r.compiles, 2u);
  EXPECT_EQ(r.steps[0].graph, GraphKind::kTrainFirstStep);
  EXPECT_TRUE(r.steps[0].compiled);
  EXPECT_TRUE(r.steps[1].compiled);
  EXPECT_EQ(r.steps[1].graph, GraphKind::kTrain);
  EXPECT_FALSE(r.steps[2].compiled);
  EXPECT_EQ(r.cached_compiles, 1u);
  EXPECT_EQ(r.mark_steps, 3u);
  // Slow first steps: compile and upload come before the first execution; step 2 is steady.
  EXPECT_GT(r.steps[0].setup_s, r.steps[1].setup_s);
  EXPECT_GT(r.upload_time_s, 0);
  EXPECT_NEAR(r.warmup_time_s, r.steps[1].end_s, 1e-12);
  EXPECT_GT(r.steady_step_time_s, 0);
  // The breakdown accounts for the whole run.
  const TimeBreakdown& b = r.breakdown;
  EXPECT_NEAR(b.compile + b.warmup + b.host + b.device + b.allreduce + b.eval, r.total_time_s, 1e-9);
}

TEST(Training, EveryDistinctPaddedShapeIsACompileOfEachProcess) {
  // SGD without momentum has no state: no first-step graph, so each process compiles once per
  // distinct (B, S) of its own batches; with `longest` padding the processes' shapes differ.
  const WorkloadConfig w = tiny("padding: longest\noptimizer: sgd\ndataset: {train: 'uniform:5-40:320'}\n");
  const TrainingRunResult r = run(w);
  data::DatasetOptions d;
  d.seed = w.training().seed;
  const data::Dataset ds = data::load_dataset("uniform:5-40:320", d);
  data::LoaderOptions lo;
  lo.num_processes = r.processes;
  lo.batch_size = 4;
  lo.max_length = 64;
  lo.padding = data::PaddingSpec::longest();
  const data::EpochPlan plan = data::plan_train_epoch(ds, lo, w.training().seed, 0);
  ASSERT_EQ(r.process_records.size(), r.processes);
  uint64_t most = 0;
  std::set<uint64_t> counts;
  for (uint32_t p = 0; p < r.processes; ++p) {
    const uint64_t shapes = data::distinct_shapes(plan, p).size();
    EXPECT_EQ(r.process_records[p].compiles, shapes) << "process " << p;
    counts.insert(shapes);
    most = std::max(most, shapes);
  }
  EXPECT_GE(most, 2u);
  EXPECT_GE(counts.size(), 2u);  // the processes really compile different numbers of graphs
  EXPECT_EQ(r.compiles, most);   // the summary shows the busiest process
  EXPECT_EQ(r.process_records[r.busiest_process].compiles, most);
  // The device runs the largest shape of each step: one simulated program per distinct one.
  std::set<std::pair<uint32_t, uint32_t>> step_shapes;
  for (const auto& s : r.steps) step_shapes.insert({s.batch, s.seq});
  EXPECT_EQ(r.programs.size(), step_shapes.size());
}

TEST(Training, ConcurrentCompilesShareTheHostCpus) {
  // Every process compiles the first step at once; on a host with fewer CPUs than processes they
  // share them, so the compile stretches by processes / cpus.
  HwConfig small = v3_8();
  small.host.cpus = 2;
  const TrainingRunResult many = run(tiny(), false, v3_8());
  const TrainingRunResult few = run(tiny(), false, small);
  ASSERT_GE(v3_8().host.cpus, many.processes);
  EXPECT_EQ(few.steps[0].compiling_processes, few.processes);
  EXPECT_NEAR(few.steps[0].compile_s, many.steps[0].compile_s * few.processes / 2.0, 1e-9);
}

TEST(Training, GradientAccumulationAllReducesOnlyOnSyncSteps) {
  // 3 micro-steps per optimizer step: the first creates the .grad buffers, the second adds into
  // them, the third adds, all-reduces and updates (zero_grad(set_to_none) frees them again).
  const TrainingRunResult r = run(tiny("dataset: {train: 'fixed:40:192'}\ngradient_accumulation_steps: 3\n"));
  ASSERT_EQ(r.train_steps, 6u);  // 192 / 32
  EXPECT_EQ(r.optimizer_steps, 2u);
  const std::vector<std::pair<std::string, bool>> want = {{"accumulate", false}, {"accumulate", true},
                                                          {"train_first_step", true}, {"accumulate", false},
                                                          {"accumulate", true}, {"train", true}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(enum_name(r.steps[i].graph), want[i].first) << i;
    EXPECT_EQ(r.steps[i].grad_buffers, want[i].second) << i;
    EXPECT_EQ(r.steps[i].allreduce_s > 0, want[i].first != "accumulate") << i;
  }
  for (const ProgramRecord& p : r.programs) EXPECT_EQ(p.allreduce_bytes > 0, p.graph != GraphKind::kAccumulate) << p.name;
  EXPECT_EQ(r.compiles, 4u);  // accumulate, accumulate+grad, train_first_step+grad, train+grad
  // The .grad buffers persist between micro-steps: they are static memory of the graphs that read them.
  uint64_t first = 0, later = 0;
  for (const ProgramRecord& p : r.programs)
    if (p.graph == GraphKind::kAccumulate) (p.name.find("+grad") != std::string::npos ? later : first) = p.optimizer_state_bytes;
  EXPECT_EQ(first, 0u);
  EXPECT_GT(later, 0u);
}

TEST(Training, MixedBf16KeepsF32MasterWeightsAndState) {
  auto train = [](const TrainingRunResult& r) {
    for (const auto& p : r.programs)
      if (p.graph == GraphKind::kTrain) return p;
    return ProgramRecord{};
  };
  // Large enough batches that activations, not weights, set the peak (autocast also keeps bf16
  // copies of the weights for the backward pass).
  const std::string big = "per_device_batch_size: 32\nmax_length: 128\ndataset: {train: 'fixed:100:1024'}\n";
  const ProgramRecord f32 = train(run(tiny(big + "precision: fp32")));
  const ProgramRecord mixed = train(run(tiny(big + "precision: mixed_bf16")));
  const ProgramRecord bf16 = train(run(tiny(big + "precision: bf16")));
  EXPECT_EQ(mixed.parameter_bytes, f32.parameter_bytes);
  EXPECT_EQ(mixed.optimizer_state_bytes, f32.optimizer_state_bytes);
  EXPECT_EQ(bf16.parameter_bytes * 2, f32.parameter_bytes);
  // bf16 activations: the step's peak is below fp32's (same static memory, smaller activations).
  EXPECT_LT(mixed.peak_hbm_bytes, f32.peak_hbm_bytes);
  EXPECT_GT(mixed.peak_hbm_bytes, bf16.peak_hbm_bytes);
}

TEST(Training, HostTracingOverlapsTheDevice) {
  // Steady state: tracing step n+1 overlaps executing step n, so a step takes max(host, device).
  const TrainingRunResult r = run(tiny("dataset: {train: 'fixed:40:320'}\n"));
  const StepRecord& s = r.steps.back();
  ASSERT_FALSE(s.compiled);
  EXPECT_NEAR(s.step_time_s, std::max(s.host_s, s.device_s), 1e-9);
}

TEST(Training, ShortLastBatchWithoutDropLastIsOneMoreCompile) {
  // 98 examples, global batch 32: the last round has 2 examples, all on process 0 (B = 2).
  const std::string base = "optimizer: sgd\ndataset: {train: 'fixed:40:98'}\neven_batches: false\n";
  const TrainingRunResult keep = run(tiny(base + "drop_last: false\n"));
  const TrainingRunResult drop = run(tiny(base + "drop_last: true\n"));
  EXPECT_EQ(keep.compiles, drop.compiles + 1);
  EXPECT_EQ(keep.steps.back().batch, 2u);
}

TEST(Training, EvalBatchSizeIsANewProgram) {
  const TrainingRunResult r = run(tiny("dataset: {train: 'fixed:40:96', eval: 'fixed:40:64'}\neval_per_device_batch_size: 8\n"));
  EXPECT_EQ(r.compiles, 3u);  // first step, train, eval
  ASSERT_EQ(r.eval_steps, 1u);  // 64 examples / (8 x 8)
  const StepRecord& e = r.steps.back();
  EXPECT_EQ(e.kind, StepKind::kEval);
  EXPECT_EQ(e.batch, 8u);
  EXPECT_TRUE(e.compiled);
  EXPECT_TRUE(e.first_execution);
  EXPECT_GT(r.breakdown.eval, 0);
}

TEST(Training, PersistentCacheRemovesCompilesOnTheSecondRun) {
  const auto dir = std::filesystem::temp_directory_path() / ("tpusim_training_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const WorkloadConfig w = tiny("compile_cache: {persistent_dir: '" + dir.string() + "'}\n");
  const TrainingRunResult first = run(w);
  const TrainingRunResult second = run(w);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(first.compiles, 2u);
  EXPECT_EQ(second.compiles, 0u);
  EXPECT_EQ(second.persistent_hits, 2u);
  EXPECT_LT(second.total_time_s, first.total_time_s);
}

TEST(Training, ABoundedCacheRecompilesEvictedGraphs) {
  // Two epochs alternating train and eval graphs: with room for one program, every switch evicts
  // the other and compiles it again (XLA_COMPILATION_CACHE_SIZE too small).
  const std::string base = "dataset: {train: 'fixed:40:96', eval: 'fixed:40:64'}\nepochs: 2\noptimizer: sgd\n";
  const TrainingRunResult roomy = run(tiny(base));
  const TrainingRunResult tight = run(tiny(base + "compile_cache: {capacity: 1}"));
  EXPECT_EQ(roomy.compiles, 2u);  // train, eval
  EXPECT_EQ(tight.compiles, 4u);  // train, eval, train again, eval again
  EXPECT_GT(tight.total_time_s, roomy.total_time_s);
}

TEST(Training, Bf16HalvesStaticParameterAndOptimizerMemory) {
  auto static_bytes = [](const TrainingRunResult& r) {
    for (const auto& p : r.programs)
      if (p.graph == GraphKind::kTrain) return p.parameter_bytes + p.optimizer_state_bytes;
    return uint64_t{0};
  };
  const uint64_t f32 = static_bytes(run(tiny("precision: fp32\n")));
  const uint64_t bf16 = static_bytes(run(tiny("precision: bf16\n")));
  ASSERT_GT(f32, 0u);
  EXPECT_EQ(bf16 * 2, f32);  // AdamW: 12 B/param -> 6 B/param (weights + two moments)
}

TEST(Training, ReplayGivesTheSameTotalsAsFullSimulation) {
  const WorkloadConfig w = tiny("dataset: {train: 'fixed:40:160', eval: 'fixed:40:64'}\nepochs: 2\n");
  const TrainingRunResult replay = run(w, false);
  const TrainingRunResult full = run(w, true);
  EXPECT_LT(replay.simulations, full.simulations);
  EXPECT_EQ(full.replays, 0u);
  EXPECT_GT(replay.replays, 0u);
  ASSERT_EQ(replay.steps.size(), full.steps.size());
  for (size_t i = 0; i < full.steps.size(); ++i) EXPECT_EQ(replay.steps[i].device_s, full.steps[i].device_s) << i;
  EXPECT_EQ(replay.total_time_s, full.total_time_s);
  EXPECT_EQ(replay.steady_step_time_s, full.steady_step_time_s);
}

TEST(Training, StepsCapsTheRun) {
  const TrainingRunResult r = run(tiny("dataset: {train: 'fixed:40:320'}\nsteps: 4\nepochs: 3\n"));
  EXPECT_EQ(r.train_steps, 4u);
}

TEST(Training, OutOfHbmNamesTheBufferAndTheFreeBytes) {
  HwConfig hw = v3_8();
  hw.chip.hbm.size_gib = 0;  // nothing fits
  try {
    run(tiny(), false, hw);
    FAIL() << "expected SimError";
  } catch (const SimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Resource exhausted"), std::string::npos) << m;
    EXPECT_NE(m.find("attempting to allocate"), std::string::npos) << m;
    EXPECT_NE(m.find("free"), std::string::npos) << m;
    EXPECT_NE(m.find("bytes"), std::string::npos) << m;
  }
}

TEST(Training, NotebookForkWithAModelPerProcessRunsOutOfHostRam) {
  HwConfig hw = v3_8();
  hw.host.ram_gib = 1;
  hw.host.process_ram_gib = 0.1;  // 8 processes: 0.8 GiB; 16 copies of bert-tiny's ~18 MB push it over
  try {
    run(tiny("launcher: notebook_fork\nbuild_model_in_each_process: true\n"), false, hw);
    FAIL() << "expected SimError";
  } catch (const SimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("host RAM"), std::string::npos) << m;
    EXPECT_NE(m.find("build_model_in_each_process: false"), std::string::npos) << m;
  }
  // Built once and passed in: fits.
  EXPECT_NO_THROW(run(tiny("launcher: notebook_fork\nbuild_model_in_each_process: false\n"), false, hw));
}

TEST(Training, CompileTimeModelIsCalibratedOnBertBase) {
  // docs/sources.md: BERT-base's forward traces in ~25 ms; a BERT fine-tune's compiles take 3-11 s.
  models::BertGraphOptions o;
  o.batch = 4;
  o.seq = 128;
  const models::BertGraph fwd = models::build_bert(models::find_preset("bert-base-cased"), o);
  const double trace = trace_time_s(v3_8().host, fwd.graph.nodes().size()) - v3_8().host.step_overhead_s;
  std::printf("bert-base forward: %zu nodes, %.1f ms of tracing\n", fwd.graph.nodes().size(), trace * 1e3);
  EXPECT_GT(trace, 0.015);
  EXPECT_LT(trace, 0.040);
  EXPECT_NEAR(compile_time_s(v3_8().host, 0, 0, 8), 0.3, 1e-12);
  // More processes than CPUs share them.
  HostParams few = v3_8().host;
  few.cpus = 4;
  EXPECT_NEAR(compile_time_s(few, 1000, 100, 8), 2 * compile_time_s(v3_8().host, 1000, 100, 8), 1e-9);
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

// model_code: each XLA-incompatible construct is a diagnostic and costs compiles / host time; the
// graph-breaking ones count their torch_xla CPU-fallback op; strict_xla fails like XLA (SimError).
TEST(TrainingXla, EachConstructIsDiagnosedAndCosts) {
  const TrainingRunResult base = run_training(v3_8(), tiny("dataset: {train: 'uniform:20-60:96'}"), {});
  EXPECT_TRUE(base.diagnostics.empty());
  for (const std::string& name : xla_construct_names()) {
    SCOPED_TRACE(name);
    const XlaConstruct& c = find_xla_construct(name);
    const TrainingRunResult r = run_training(v3_8(), tiny("dataset: {train: 'uniform:20-60:96'}\nmodel_code: [" + name + "]"), {});
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].construct, name);
    EXPECT_NE(r.diagnostics[0].message.find(c.rewrite), std::string::npos);
    EXPECT_EQ(r.diagnostics[0].occurrences, r.train_steps);
    EXPECT_GT(r.compiles, base.compiles);
    EXPECT_GT(r.total_time_s, base.total_time_s);
    if (c.graph_break) {
      EXPECT_EQ(r.fallback_counters.at(c.aten_op), r.train_steps);
      EXPECT_EQ(r.graph_breaks, r.train_steps);
      EXPECT_GT(r.transfer_from_device.samples.size(), base.transfer_from_device.samples.size());
      EXPECT_GT(r.breakdown.host, base.breakdown.host);
    }
    EXPECT_THROW(run_training(v3_8(), tiny("model_code: [" + name + "]\nstrict_xla: true"), {}), SimError);
  }
}

TEST(TrainingXla, StrictMessageNamesRuleAndRewrite) {
  try {
    run_training(v3_8(), tiny("model_code: [boolean_mask_indexing]\nstrict_xla: true"), {});
    FAIL();
  } catch (const SimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("XLA: data-dependent shape in `x[mask]`"), std::string::npos) << m;
    EXPECT_NE(m.find("rewrite:"), std::string::npos) << m;
  }
}

TEST(TrainingXla, UnknownConstructIsConfigErrorWithDidYouMean) {
  try {
    tiny("model_code: [nonzer]");
    FAIL();
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("did you mean 'nonzero'"), std::string::npos) << m;
    EXPECT_NE(m.find("item_in_loop"), std::string::npos) << m;
  }
}

// Each step variant's graph is built once, whichever of a process's lookup (info) and the device's
// compile (get) needs it first, and each program is simulated once: the all-reduce's exposed time
// is a statistic of that simulation (no one-replica copy is built, compiled or simulated).
TEST(StepPrograms, EachVariantGraphIsBuiltOnceAndSimulatedOnce) {
  const WorkloadConfig w = tiny();
  NativeSteps p(v3_8(), w.training());
  StepExecutor x(v3_8(), "analytical", false);
  const StepVariant train{GraphKind::kTrain, 4, 64}, eval{GraphKind::kEval, 4, 64}, first{GraphKind::kTrainFirstStep, 4, 32};
  p.info(train);  // a process's cache lookup first, then the device's compile and run
  BuiltStep& t = p.get(train);
  EXPECT_GT(t.compiled.allreduce_bytes, 0u);
  const DeviceRun run = x.execute(t);
  const CollectiveKindStats& ar = run.collectives[isa::Collective::kAllReduce];
  EXPECT_GT(run.allreduce_s, 0.0);  // the last bucket's all-reduce ends the backward pass: exposed
  EXPECT_EQ(run.allreduce_s, ar.exposed_s);
  EXPECT_LT(ar.exposed_s, ar.busy_s);  // the earlier buckets overlap the backward pass
  EXPECT_GT(ar.instructions, 0u);
  EXPECT_GT(ar.bytes, 0u);
  EXPECT_EQ(p.graph_builds(), 1u);
  EXPECT_EQ(x.simulations(), 1u);
  BuiltStep& f = p.get(first);  // the compile first, then the lookups
  p.info(first);
  x.execute(f);
  EXPECT_EQ(p.graph_builds(), 2u);
  p.info(eval);
  p.info(first);
  x.execute(p.get(eval));
  EXPECT_EQ(p.graph_builds(), 3u);
  EXPECT_EQ(x.simulations(), 3u);
}

}  // namespace
}  // namespace tpusim
