// The process pool with /bin/sh children: exit codes, signals, timeouts, stderr capture, a program
// that cannot start, the bound on parallel children, a callback that throws, and process groups.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sweep/process_pool.h"

namespace tpusim::sweep {
namespace {

namespace fs = std::filesystem;

struct Fixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("tpusim_pool_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }

  Job sh(uint64_t id, const std::string& script, double timeout_s = 0) {
    Job j;
    j.id = id;
    j.argv = {"/bin/sh", "-c", script};
    j.stderr_path = (dir / ("err" + std::to_string(id))).string();
    j.timeout_s = timeout_s;
    return j;
  }
  std::string err(uint64_t id) {
    std::ifstream in(dir / ("err" + std::to_string(id)));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::map<uint64_t, JobResult> run(const std::vector<Job>& jobs, unsigned parallel) {
    std::map<uint64_t, JobResult> out;
    ProcessPool(parallel).run(jobs, [&](const JobResult& r) { out[r.id] = r; });
    return out;
  }
};

TEST_F(Fixture, ExitCodesSignalsAndStderr) {
  const auto r = run({sh(1, "echo out; echo 'error: bad' >&2; exit 0"), sh(2, "exit 3"), sh(3, "kill -SEGV $$")}, 2);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.at(1).exit_code, 0);
  EXPECT_EQ(err(1), "error: bad\n");  // stdout went to /dev/null
  EXPECT_EQ(r.at(2).exit_code, 3);
  EXPECT_EQ(r.at(2).signal, 0);
  EXPECT_EQ(r.at(3).signal, 11);
  EXPECT_EQ(r.at(3).exit_code, 128 + 11);
  EXPECT_FALSE(r.at(3).timed_out);
}

TEST_F(Fixture, TimeoutKillsTheChild) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run({sh(1, "sleep 30", 0.2)}, 1);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.at(1).timed_out);
  EXPECT_EQ(r.at(1).signal, SIGTERM);  // stopped first with SIGTERM, which sh does not catch
  EXPECT_LT(s, 10.0);  // killed, not waited for (sleep 30)
}

// A timed-out child has the grace period to clean up: its SIGTERM trap runs.
TEST_F(Fixture, ATimedOutChildMayCleanUp) {
  const std::string mark = (dir / "cleaned").string();
  const auto r = run({sh(1, "trap 'echo bye > " + mark + "; exit 4' TERM; sleep 30 & wait", 0.2)}, 1);
  EXPECT_TRUE(r.at(1).timed_out);
  EXPECT_EQ(r.at(1).exit_code, 4);
  EXPECT_TRUE(fs::exists(mark));
}

// One that ignores SIGTERM is killed when the grace period is over.
TEST_F(Fixture, AChildIgnoringSigtermIsKilledAfterTheGrace) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run({sh(1, "trap '' TERM; sleep 30", 0.2)}, 1);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.at(1).timed_out);
  EXPECT_EQ(r.at(1).signal, SIGKILL);
  EXPECT_GE(s, 0.2 + kStopGraceSeconds);
  EXPECT_LT(s, 10.0);
}

TEST_F(Fixture, AProgramThatCannotStart) {
  Job j = sh(1, "");
  j.argv = {(dir / "no-such-program").string()};
  const auto r = run({j}, 1);
  EXPECT_TRUE(r.at(1).spawn_failed);
  EXPECT_NE(r.at(1).error.find("no-such-program"), std::string::npos) << r.at(1).error;
}

TEST_F(Fixture, NeverMoreThanNChildrenAtOnce) {
  // Each child marks its start and end in a shared log; replaying the log gives the concurrency.
  const std::string log = (dir / "log").string();
  std::vector<Job> jobs;
  for (uint64_t i = 0; i < 6; ++i)
    jobs.push_back(sh(i, "echo + >> " + log + "; sleep 0.15; echo - >> " + log));
  std::vector<size_t> running_seen;
  size_t done = 0;
  ProcessPool(2).run(
      jobs,
      [&](const JobResult& r) {
        EXPECT_EQ(r.exit_code, 0);
        ++done;
      },
      [&](size_t running) { running_seen.push_back(running); });
  EXPECT_EQ(done, 6u);
  std::ifstream in(log);
  int now = 0, peak = 0;
  for (std::string line; std::getline(in, line);) {
    now += line == "+" ? 1 : -1;
    peak = std::max(peak, now);
  }
  EXPECT_EQ(peak, 2);
  for (size_t n : running_seen) EXPECT_LE(n, 2u);
}

TEST(AvailableCpus, AtLeastOne) { EXPECT_GE(available_cpus(), 1u); }

// The Python module stops a sweep on Ctrl-C by throwing from the tick callback: the pool must kill
// and reap its children rather than leave them running.
TEST_F(Fixture, AThrowingCallbackKillsTheChildren) {
  const std::string pids = (dir / "pids").string();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<JobResult> done;  // stays empty: killed children are not reported
  EXPECT_THROW(ProcessPool(2).run({sh(1, "echo $$ >> " + pids + "; exec sleep 30"), sh(2, "echo $$ >> " + pids + "; exec sleep 30")},
                                  [&](const JobResult& r) { done.push_back(r); },
                                  [&](size_t running) {
                                    std::ifstream f(pids);  // throws once both children run
                                    std::string text((std::istreambuf_iterator<char>(f)), {});
                                    if (running == 2 && std::count(text.begin(), text.end(), '\n') == 2)
                                      throw std::runtime_error("interrupted");
                                  }),
               std::runtime_error);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
  EXPECT_TRUE(done.empty());
  std::ifstream in(pids);
  int n = 0;
  for (pid_t pid; in >> pid; ++n) EXPECT_NE(::kill(pid, 0), 0) << "child " << pid << " still exists";  // reaped: gone
  EXPECT_EQ(n, 2);
}

// An interrupted run gives its children the grace period too: a point's SIGTERM trap runs before
// run() returns, and a child that ignores SIGTERM is still ended.
TEST_F(Fixture, AStoppedRunLetsChildrenCleanUpThenKills) {
  const std::string mark = (dir / "cleaned").string(), started = (dir / "started").string();
  EXPECT_THROW(ProcessPool(2).run({sh(1, "trap 'echo bye > " + mark + "; exit 0' TERM; echo > " + started + "1; sleep 30 & wait"),
                                   sh(2, "trap '' TERM; echo > " + started + "2; exec sleep 30")},
                                  [](const JobResult&) {},
                                  [&](size_t) {
                                    if (fs::exists(started + "1") && fs::exists(started + "2")) throw std::runtime_error("interrupted");
                                  }),
               std::runtime_error);
  EXPECT_TRUE(fs::exists(mark));
}

// What a point starts dies with it: each child leads its own process group (so a terminal's Ctrl-C
// reaches the sweep only) and the whole group is killed when the run is stopped.
TEST_F(Fixture, AStoppedRunKillsWhatTheChildrenStarted) {
  const std::string pids = (dir / "pids").string();
  // The shell writes its pid, its process group and its background sleep's pid, then waits.
  const Job j = sh(1, "sleep 30 & echo $$ $(cut -d' ' -f5 /proc/$$/stat) $! > " + pids + ".tmp; mv " + pids + ".tmp " + pids + "; wait");
  EXPECT_THROW(ProcessPool(1).run({j}, [](const JobResult&) {},
                                  [&](size_t) {
                                    if (fs::exists(pids)) throw std::runtime_error("interrupted");
                                  }),
               std::runtime_error);
  std::ifstream in(pids);
  pid_t shell = 0, group = 0, grandchild = 0;
  ASSERT_TRUE(in >> shell >> group >> grandchild);
  EXPECT_EQ(group, shell) << "the child does not lead its own process group";
  EXPECT_NE(group, ::getpgrp());
  EXPECT_NE(::kill(shell, 0), 0) << "child " << shell << " still exists";
  // The orphaned sleep is reaped by init (or a subreaper) after it dies: allow it a moment.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t paren = text.rfind(')');
    gone = !stat || text.empty() || (paren != std::string::npos && text.substr(paren + 2, 1) == "Z");
    if (!gone) ::usleep(10000);
  }
  EXPECT_TRUE(gone) << "the point's own child " << grandchild << " survived";
}

}  // namespace
}  // namespace tpusim::sweep
