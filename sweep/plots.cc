#include "sweep/plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

extern char** environ;

namespace tpusim::sweep {

namespace {

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

// Runs argv (argv[0] a path) and returns its exit code (-1: not started), stdout and stderr together.
int run_capture(const std::vector<std::string>& args, std::string* output) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    *output = std::strerror(rc);
    return -1;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output->append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string python_interpreter() {
  if (const char* env = std::getenv("TPUSIM_PYTHON"); env && *env) return env;
  // Debian's interpreter is the one with python3-matplotlib (a python3 earlier on PATH may be a
  // virtualenv without it).
  if (executable("/usr/bin/python3")) return "/usr/bin/python3";
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (executable(d + "/python3")) return d + "/python3";
  }
  return "";
}

PlotResult render_plots(const std::string& dir, const std::string& script_text) {
  PlotResult r;
  const std::string python = python_interpreter();
  if (python.empty()) {
    r.warning = "no python3 found (install python3-matplotlib, or set TPUSIM_PYTHON)";
    return r;
  }
  std::string out;
  const int rc = run_capture({python, "-c", script_text, dir}, &out);
  std::istringstream lines(out);
  std::string last_other;  // a Python traceback ends with the exception
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("wrote ", 0) == 0) r.files.push_back(line.substr(6));
    else if (!line.empty()) last_other = line;
  }
  if (rc == 0) {
    r.ran = true;
    return r;
  }
  if (rc == kNoMatplotlib) {
    r.warning = "matplotlib is not installed for " + python + " (apt-get install python3-matplotlib); " +
                "results are complete, only the plots are missing";
  } else if (rc < 0) {
    r.warning = "cannot run " + python + ": " + out;
  } else {
    r.warning = fmt::format("the plot script failed (exit {}): {}", rc, last_other);
  }
  return r;
}

}  // namespace tpusim::sweep
