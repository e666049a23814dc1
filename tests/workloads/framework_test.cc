// Framework personalities (workloads/loop/framework.h) on bert-tiny: who compiles, when the host traces,
// steps_per_execution, and the TPU Node input path.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "sim/base/sim_error.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

const HwConfig& hw(const std::string& name) {
  static std::map<std::string, HwConfig> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml")).first;
  return it->second;
}

// bert-tiny, 4 per core, fixed-length data padded to 64; `extra` lines are appended (YAML keys
// must not repeat the base's).
WorkloadConfig tiny(const std::string& framework, const std::string& extra = "") {
  return load_workload_config_text("kind: training\nmodel: bert-tiny\nmax_length: 64\nper_device_batch_size: 4\n"
                                   "dataset: {train: 'fixed:40:320', eval: 'fixed:40:64'}\nframework: " + framework +
                                       "\n" + extra,
                                   "tiny.yaml");
}

TrainingRunResult run(const WorkloadConfig& w, const std::string& slice = "v3-8") {
  TrainingRunOptions o;
  o.engine = "analytical";
  return run_training(hw(slice), w, o);
}

const StepRecord& last_train(const TrainingRunResult& r) {
  for (size_t i = r.steps.size(); i-- > 0;)
    if (r.steps[i].kind == StepKind::kTrain) return r.steps[i];
  throw std::logic_error("no train step");
}

TEST(Framework, TorchXlaCompilesInEveryProcessAndTracesEveryStep) {
  const TrainingRunResult r = run(tiny("torch_xla"));
  EXPECT_EQ(r.processes, 8u);
  EXPECT_EQ(r.replicas, 8u);
  EXPECT_EQ(r.compiles, 3u);  // train_first_step, train, eval: in each of the 8 processes
  for (const ProcessRecord& p : r.process_records) EXPECT_EQ(p.compiles, 3u);
  EXPECT_GT(last_train(r).host_s, 0.01);  // the whole step graph is re-traced
}

TEST(Framework, TfKerasCompilesOnceForEveryReplicaAndTracesOnlyNewSignatures) {
  const TrainingRunResult torch = run(tiny("torch_xla"));
  const TrainingRunResult tf = run(tiny("tf_keras"));
  EXPECT_EQ(tf.processes, 1u);
  EXPECT_EQ(tf.replicas, 8u);
  ASSERT_EQ(tf.process_records.size(), 1u);
  EXPECT_EQ(tf.process_records[0].cores, 8u);
  EXPECT_EQ(tf.process_records[0].train_examples, torch.train_examples);
  EXPECT_EQ(tf.compiles, 2u);  // train (Keras builds the optimizer slots up front), eval
  EXPECT_EQ(tf.steps[0].graph, GraphKind::kTrain);
  EXPECT_LT(last_train(tf).host_s, last_train(torch).host_s / 5);  // dispatch only
  EXPECT_LT(tf.total_time_s, torch.total_time_s);
}

TEST(Framework, StepsPerExecutionAmortizesTheDispatch) {
  const TrainingRunResult one = run(tiny("tf_keras"));
  const TrainingRunResult ten = run(tiny("tf_keras", "steps_per_execution: 10\n"));
  EXPECT_NEAR(last_train(ten).host_s * 10, last_train(one).host_s, 1e-12);
}

TEST(Framework, JaxCompilesOnEveryHostAtOnce) {
  const TrainingRunResult r = run(tiny("jax"), "v3-32");
  EXPECT_EQ(r.processes, 4u);  // one per host
  EXPECT_EQ(r.replicas, 32u);
  for (const ProcessRecord& p : r.process_records) {
    EXPECT_EQ(p.compiles, 2u);
    EXPECT_EQ(p.cores, 8u);
    EXPECT_EQ(p.host, p.index);
  }
  // The hosts compile in parallel on their own CPUs: the step waits for one compile, not four.
  const TrainingRunResult one = run(tiny("jax"));
  EXPECT_NEAR(r.steps[0].compile_s, one.steps[0].compile_s, 1e-9);
}

// torch_xla's SPMD mode (spmd: true; Trainer's FSDPv2): a process per host, compiling the global
// program once per host, but still tracing every step and building the optimizer state in the
// first step (lazy tensors, torch.optim): three programs, not jax's two.
TEST(Framework, TorchXlaSpmdModeRunsAProcessPerHost) {
  const TrainingRunResult per_device = run(tiny("torch_xla"), "v3-32");
  const TrainingRunResult r = run(tiny("torch_xla", "spmd: true\n"), "v3-32");
  EXPECT_EQ(r.processes, 4u);  // one per host
  EXPECT_EQ(r.replicas, 32u);
  EXPECT_EQ(r.train_examples, per_device.train_examples);
  for (const ProcessRecord& p : r.process_records) {
    EXPECT_EQ(p.compiles, 3u);  // train_first_step, train, eval
    EXPECT_EQ(p.cores, 8u);
    EXPECT_EQ(p.host, p.index);
  }
  EXPECT_GT(last_train(r).host_s, 0.01);  // re-traced every step
  const TrainingRunResult jax = run(tiny("jax"), "v3-32");
  EXPECT_GT(last_train(r).host_s, last_train(jax).host_s);
  // FSDPv2: the same with sharding: fsdp.
  const TrainingRunResult v2 = run(tiny("torch_xla", "spmd: true\nsharding: fsdp\n"), "v3-32");
  EXPECT_EQ(v2.processes, 4u);
  EXPECT_GT(v2.allgather_bytes, 0u);
}

TEST(Framework, TpuNodeCannotReadLocalFiles) {
  try {
    run(tiny("tf_keras", "tpu_runtime: node\n"));
    FAIL() << "expected SimError";
  } catch (const SimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("File system scheme '[local]' not implemented"), std::string::npos) << m;
    EXPECT_NE(m.find("gs://"), std::string::npos) << m;
    EXPECT_NE(m.find("tpu_runtime: vm"), std::string::npos) << m;
  }
}

TEST(Framework, TpuNodeInputCrossesTheNetwork) {
  const TrainingRunResult vm = run(tiny("tf_keras", "data_location: gcs\n"));
  const TrainingRunResult node = run(tiny("tf_keras", "data_location: gcs\ntpu_runtime: node\n"));
  const double extra = last_train(node).host_s - last_train(vm).host_s;
  EXPECT_GE(extra, hw("v3-8").host.remote_input_latency_s);
}

TEST(Framework, PersonalitySettingsAreCheckedAgainstTheFramework) {
  EXPECT_THROW(tiny("torch_xla", "steps_per_execution: 4\n"), ConfigError);
  EXPECT_THROW(tiny("jax", "tpu_runtime: node\n"), ConfigError);
  EXPECT_THROW(tiny("tf_keras", "launcher: notebook_fork\n"), ConfigError);
  EXPECT_THROW(tiny("pytorch"), ConfigError);
  EXPECT_THROW(tiny("jax", "spmd: true\n"), ConfigError);
  EXPECT_THROW(tiny("torch_xla", "spmd: true\nlauncher: notebook_fork\n"), ConfigError);
}

}  // namespace
}  // namespace tpusim
