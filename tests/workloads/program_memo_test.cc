// The program memo (workloads/loop/program_memo.h): a run reads the step programs another run with
// the same configuration simulated, apart from the data-only fields, and its report is the one it
// would have computed itself; other configurations, unreadable files, --full-sim and traces do not
// use it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "config/hw_loader.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/program_memo.h"
#include "workloads/loop/training_run.h"
#include "workloads/report/report.h"
#include "workloads/report/training_report.h"

namespace tpusim {
namespace {

namespace fs = std::filesystem;

const HwConfig& v3_8() {
  static const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  return hw;
}

// bert-tiny on lengths that `multiple_of` pads to several shapes (a program per shape and kind).
// Each line of `extra` ("key: value") replaces the base's line of the same key or adds one.
WorkloadConfig tiny(const std::string& extra) {
  std::vector<std::string> lines = {"kind: training", "model: bert-tiny",
                                    "dataset: {train: 'uniform:8-60:96', eval: 'uniform:8-60:40'}", "max_length: 64",
                                    "per_device_batch_size: 2", "optimizer: adamw"};
  std::istringstream in(extra);
  for (std::string line; std::getline(in, line);) {
    const std::string key = line.substr(0, line.find(':') + 1);
    std::erase_if(lines, [&](const std::string& l) { return l.rfind(key, 0) == 0; });
    lines.push_back(line);
  }
  std::string yaml;
  for (const std::string& l : lines) yaml += l + "\n";
  return load_workload_config_text(yaml, "tiny.yaml");
}

struct MemoDir {
  std::string path = (fs::temp_directory_path() / ("tpusim-memo-test-" + std::to_string(::getpid()))).string();
  MemoDir() { fs::remove_all(path); }
  ~MemoDir() { fs::remove_all(path); }
};

TrainingRunResult run(const WorkloadConfig& w, const std::string& memo, bool full_sim = false) {
  TrainingRunOptions o;
  o.engine = "analytical";
  o.full_sim = full_sim;
  o.program_memo_dir = memo;
  return run_training(v3_8(), w, o);
}

// The report without the fields that say how tpusim spent its time: wall time, programs read from
// the memo (the only ones a memo may change).
nlohmann::json figures(const WorkloadConfig& w, const TrainingRunResult& r) {
  nlohmann::json j = make_training_report(v3_8(), w, r, RunContext{});
  EXPECT_EQ(j["run"]["memoized"], r.memoized);
  j["run"].erase("wall_time_s");
  j["run"].erase("memoized");
  return j;
}

TEST(ProgramMemo, ARunWithAnotherSeedAndPaddingReadsTheProgramsAndReportsTheSameFigures) {
  for (const std::string sharding : {"data_parallel", "fsdp"}) {
    SCOPED_TRACE(sharding);
    const MemoDir d;
    const WorkloadConfig a = tiny("padding: multiple_of:16\nseed: 1\nsharding: " + sharding + "\n");
    const WorkloadConfig b = tiny("padding: multiple_of:8\nseed: 2\nepochs: 2\nsharding: " + sharding + "\n");
    const TrainingRunResult first = run(a, d.path);
    EXPECT_EQ(first.memoized, 0u);
    EXPECT_GE(first.simulations, 3u);
    EXPECT_FALSE(fs::is_empty(d.path));

    const TrainingRunResult with = run(b, d.path);
    const TrainingRunResult without = run(b, "");
    EXPECT_GT(with.memoized, 0u);  // the shapes both paddings produce (multiples of 16)
    EXPECT_LT(with.memoized, without.simulations);  // and others it simulated itself
    EXPECT_EQ(with.simulations, without.simulations);  // here or by the other run
    EXPECT_EQ(figures(b, with), figures(b, without));

    // Everything is in the memo now: a third run simulates nothing.
    const TrainingRunResult again = run(b, d.path);
    EXPECT_EQ(again.memoized, without.simulations);
    EXPECT_EQ(figures(b, again), figures(b, without));
  }
}

TEST(ProgramMemo, AnotherConfigurationDoesNotReadIt) {
  const MemoDir d;
  run(tiny("precision: fp32\n"), d.path);
  EXPECT_EQ(run(tiny("precision: bf16\n"), d.path).memoized, 0u);
  EXPECT_EQ(run(tiny("per_device_batch_size: 4\n"), d.path).memoized, 0u);
  EXPECT_GT(run(tiny("precision: fp32\n"), d.path).memoized, 0u);
}

TEST(ProgramMemo, AnUnreadableEntryIsAMiss) {
  const MemoDir d;
  const WorkloadConfig w = tiny("");
  const TrainingRunResult clean = run(w, "");
  run(w, d.path);
  for (const auto& f : fs::directory_iterator(d.path)) std::ofstream(f.path(), std::ios::trunc) << "not cbor";
  const TrainingRunResult r = run(w, d.path);
  EXPECT_EQ(r.memoized, 0u);
  EXPECT_EQ(figures(w, r), figures(w, clean));
  EXPECT_GT(run(w, d.path).memoized, 0u);  // the run rewrote the entries
}

TEST(ProgramMemo, FullSimNeitherReadsNorWritesIt) {
  const MemoDir d;
  const WorkloadConfig w = tiny("");
  const TrainingRunResult r = run(w, d.path, /*full_sim=*/true);
  EXPECT_EQ(r.memoized, 0u);
  EXPECT_TRUE(!fs::exists(d.path) || fs::is_empty(d.path));
}

TEST(ProgramMemo, TheKeyLeavesOutOnlyTheDataOnlyFields) {
  auto salt = [](const std::string& extra) { return program_memo_salt(v3_8(), tiny(extra), "analytical"); };
  const compiler::CacheKey base = salt("");
  EXPECT_EQ(salt("seed: 7\npadding: multiple_of:8\nepochs: 3\nsteps: 10\n"), base);
  for (const std::string other : {"optimizer: sgd\n", "sharding: fsdp\n", "eval_per_device_batch_size: 4\n",
                                  "overlap_collectives: false\n", "framework: jax\n"})
    EXPECT_NE(salt(other), base) << other;
  EXPECT_NE(program_memo_salt(v3_8(), tiny(""), "systemc"), base);
}

}  // namespace
}  // namespace tpusim
