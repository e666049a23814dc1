// Runs commands as child processes, at most N at a time: each sweep point is its own `tpusim run`
// process (one SystemC kernel per process). Children get /dev/null as stdin and stdout and a file as
// stderr; each child leads its own process group, and a child running past its timeout is stopped with
// its group: SIGTERM, then SIGKILL after kStopGraceSeconds. Results are handed back in the calling
// thread, in completion order.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tpusim::sweep {

// How long a stopped child (timed out, or the sweep interrupted) has between SIGTERM and SIGKILL.
inline constexpr double kStopGraceSeconds = 2.0;

struct Job {
  uint64_t id = 0;
  std::vector<std::string> argv;  // argv[0] is the program's path (no PATH search)
  std::string stderr_path;        // the child's stderr goes here (created or truncated)
  double timeout_s = 0;           // 0 = none
};

struct JobResult {
  uint64_t id = 0;
  int exit_code = 0;       // the exit status; 128+N when killed by signal N (as shells report it)
  int signal = 0;          // the signal that killed it, 0 if it exited
  bool timed_out = false;  // killed by us after timeout_s
  bool spawn_failed = false;  // the program could not be started (message in `error`)
  std::string error;
  double wall_s = 0;       // host time from start to exit
};

// Processors this process may run on (sched_getaffinity: honours taskset, cgroups cpusets and Slurm
// allocations), at least 1.
unsigned available_cpus();

class ProcessPool {
 public:
  explicit ProcessPool(unsigned max_parallel) : max_parallel_(max_parallel ? max_parallel : 1) {}

  // Runs every job; `on_done` is called as each finishes, `on_tick` about every 100 ms with the
  // number of running children (for progress displays). Returns when all have finished. If a
  // callback throws, the running children are stopped with their process groups (SIGTERM, SIGKILL
  // after the grace period) and reaped before it propagates: no child outlives run().
  void run(const std::vector<Job>& jobs, const std::function<void(const JobResult&)>& on_done,
           const std::function<void(size_t running)>& on_tick = {});

 private:
  unsigned max_parallel_;
};

}  // namespace tpusim::sweep
