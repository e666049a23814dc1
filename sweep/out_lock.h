// The lock of a sweep output directory: DIR/.tpusim-sweep.lock, held with flock(2) for as long as a
// sweep (or a merge) writes DIR, so that two of them never write one directory at once. The holder's
// pid is written in the file for the message of the one refused. The kernel drops the lock when the
// holder exits, however it ends, so a lock file left behind by a killed sweep never blocks.
#pragma once
#include <string>

namespace tpusim::sweep {

inline constexpr const char* kLockFile = ".tpusim-sweep.lock";

class OutDirLock {
 public:
  // Takes the lock of the existing directory `dir` without waiting. Held by another process: a
  // ConfigError (exit 2) naming the directory and the holder's pid. `flag` names where DIR came from
  // ("--out", "merge OUT").
  OutDirLock(const std::string& dir, const std::string& flag);
  ~OutDirLock();
  OutDirLock(const OutDirLock&) = delete;
  OutDirLock& operator=(const OutDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tpusim::sweep
