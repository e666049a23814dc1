// Sweep progress on stderr: a redrawn bar with an ETA at a terminal, a plain line every
// kLineInterval otherwise (logs, Slurm output files), nothing with --quiet.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace tpusim::sweep {

class SweepProgress {
 public:
  enum class Mode { kNone, kBar, kLines };
  // kBar when `stream` is a terminal, else kLines; kNone when quiet.
  static Mode mode_for(std::FILE* stream, bool quiet);

  SweepProgress(Mode mode, std::string name, size_t total, std::FILE* out = stderr);
  ~SweepProgress();

  // Call as points finish and periodically; draws at most every 0.2 s (bar) or kLineInterval (lines).
  void update(size_t done, size_t failed, size_t running);
  // Erases the bar (lines mode: prints a last line).
  void finish();

  // "1:05", "1:02:03"; for tests.
  static std::string clock(double seconds);
  // The text of one progress line (no escape codes).
  std::string line(size_t done, size_t failed, size_t running, double elapsed_s) const;

  static constexpr double kLineInterval = 10.0;  // s between plain lines

 private:
  void draw();
  Mode mode_;
  std::string name_;
  size_t total_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  size_t done_ = 0, failed_ = 0, running_ = 0;
  bool drawn_ = false, finished_ = false;
};

}  // namespace tpusim::sweep
