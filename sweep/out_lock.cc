#include "sweep/out_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "base/config_error.h"

namespace tpusim::sweep {

namespace {

std::string read_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  std::string s = n > 0 ? std::string(buf, size_t(n)) : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

}  // namespace

OutDirLock::OutDirLock(const std::string& dir, const std::string& flag) {
  const std::string path = (std::filesystem::path(dir) / kLockFile).string();
  // O_CLOEXEC: the point processes must not inherit the descriptor (a lock is shared by every
  // descriptor of its open file, so an inheriting child would hold it too).
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    ConfigErrorInfo e;
    e.file = flag;
    e.value = dir;
    e.rule = fmt::format("cannot be used as the output directory: cannot create its lock file {} ({})", path,
                         std::strerror(errno));
    throw ConfigError(e);
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = read_pid(fd_);
    ::close(fd_);
    fd_ = -1;
    ConfigErrorInfo e;
    e.file = flag;
    e.value = dir;
    e.rule = err == EWOULDBLOCK
                 ? fmt::format("is being written by another tpusim sweep or merge (pid {}, lock {})", pid, path)
                 : fmt::format("cannot lock {} ({})", path, std::strerror(err));
    e.suggestion = "wait for it to finish or stop it, or write to another directory with --out";
    throw ConfigError(e);
  }
  // The pid is for the message above only: the lock itself is the flock, not the file's content.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    // Not fatal: the lock is held; only the message of a refused second sweep loses the pid.
  }
}

OutDirLock::~OutDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace tpusim::sweep
