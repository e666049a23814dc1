#include "sweep/process_pool.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <map>
#include <thread>

extern char** environ;

namespace tpusim::sweep {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Running {
  const Job* job;
  Clock::time_point start;
  bool killed_for_timeout = false;
  Clock::time_point term_sent;  // when SIGTERM went to its group (killed_for_timeout)
  bool kill_sent = false;       // SIGKILL followed, the grace period over
};

// posix_spawn (vfork + exec in glibc): cheaper than fork() of a parent that may hold a large plan,
// and it reports a failed exec as an error code instead of a child that exits 127.
pid_t spawn(const Job& job, std::string* error) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, job.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // Each child leads its own process group: a terminal's Ctrl-C reaches only the sweep (which then
  // stops the points itself), and killing the group also ends anything a point started.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> argv;
  for (const auto& a : job.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    *error = "cannot start " + job.argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

// `sig` to the child's process group (it leads one: spawn); to the child alone should the group be
// gone already (ESRCH cannot happen while the child is unreaped, but kill(pid) costs nothing).
void signal_group(pid_t pid, int sig) {
  if (::kill(-pid, sig) != 0) ::kill(pid, sig);
}

// Ends every running child: SIGTERM to each group, up to kStopGraceSeconds for them to exit (a point
// may flush or remove its partial output, as `tpusim run` and a wrapper script do), then SIGKILL to
// what is left; every child is reaped, so none outlives the pool.
void stop_all(std::map<pid_t, Running>& running) {
  for (const auto& [pid, r] : running) signal_group(pid, SIGTERM);
  const auto start = Clock::now();
  std::map<pid_t, Running> left = running;
  while (!left.empty() && seconds_since(start) < kStopGraceSeconds) {
    for (auto it = left.begin(); it != left.end();)
      it = ::waitpid(it->first, nullptr, WNOHANG) != 0 ? left.erase(it) : std::next(it);
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (const auto& [pid, r] : left) signal_group(pid, SIGKILL);
  for (const auto& [pid, r] : left) ::waitpid(pid, nullptr, 0);
  running.clear();
}

}  // namespace

unsigned available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return unsigned(n);
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc ? hc : 1;
}

void ProcessPool::run(const std::vector<Job>& jobs, const std::function<void(const JobResult&)>& on_done,
                      const std::function<void(size_t)>& on_tick) {
  std::map<pid_t, Running> running;
  // A callback that throws (a Ctrl-C or SIGTERM check: `tpusim sweep`, the Python module) ends the
  // run: every point's process group is killed and each child reaped, so none outlives it.
  struct StopOnUnwind {
    std::map<pid_t, Running>& running;
    ~StopOnUnwind() { stop_all(running); }
  } stop_on_unwind{running};
  size_t next = 0;
  auto last_tick = Clock::now();
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && running.size() < max_parallel_) {
      const Job& job = jobs[next++];
      std::string error;
      const auto start = Clock::now();
      const pid_t pid = spawn(job, &error);
      if (pid < 0) {
        JobResult r;
        r.id = job.id;
        r.spawn_failed = true;
        r.exit_code = 127;  // what a shell reports for a command it cannot run
        r.error = error;
        on_done(r);
        continue;
      }
      running.emplace(pid, Running{&job, start, false, {}, false});
    }
    int status = 0;
    // Reap only our own children: the caller may have other child processes.
    pid_t done = 0, which = 0;
    for (const auto& [pid, r] : running) {
      done = waitpid(pid, &status, WNOHANG);
      which = pid;
      if (done != 0) break;
    }
    if (done < 0) {
      // Someone else reaped it (SIGCHLD ignored by the host program?): report it, do not spin.
      const auto it = running.find(which);
      JobResult res;
      res.id = it->second.job->id;
      res.wall_s = seconds_since(it->second.start);
      res.spawn_failed = true;
      res.exit_code = -1;
      res.error = std::string("lost the child process: ") + std::strerror(errno);
      running.erase(it);
      on_done(res);
      continue;
    }
    if (done > 0) {
      const Running r = running.at(done);
      running.erase(done);
      JobResult res;
      res.id = r.job->id;
      res.wall_s = seconds_since(r.start);
      if (WIFEXITED(status)) {
        res.exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        res.signal = WTERMSIG(status);
        res.exit_code = 128 + res.signal;
      }
      res.timed_out = r.killed_for_timeout;
      on_done(res);
      continue;  // look for more finished children before sleeping
    }
    for (auto& [pid, r] : running) {
      if (r.job->timeout_s > 0 && !r.killed_for_timeout && seconds_since(r.start) > r.job->timeout_s) {
        signal_group(pid, SIGTERM);
        r.killed_for_timeout = true;
        r.term_sent = Clock::now();
      } else if (r.killed_for_timeout && !r.kill_sent && seconds_since(r.term_sent) > kStopGraceSeconds) {
        signal_group(pid, SIGKILL);  // it ignored or outlasted SIGTERM
        r.kill_sent = true;
      }
    }
    if (on_tick && seconds_since(last_tick) >= 0.1) {
      on_tick(running.size());
      last_tick = Clock::now();
    }
    // Children of a sweep take milliseconds (kernels) to seconds (training runs); polling every 5 ms
    // costs nothing measurable and needs no SIGCHLD handler in library code.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (on_tick) on_tick(0);
}

}  // namespace tpusim::sweep
