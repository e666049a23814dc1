#include "sweep/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

namespace tpusim::sweep {

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

SweepProgress::Mode SweepProgress::mode_for(std::FILE* stream, bool quiet) {
  if (quiet) return Mode::kNone;
  return ::isatty(::fileno(stream)) ? Mode::kBar : Mode::kLines;
}

SweepProgress::SweepProgress(Mode mode, std::string name, size_t total, std::FILE* out)
    : mode_(mode), name_(std::move(name)), total_(total), out_(out), start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

SweepProgress::~SweepProgress() { finish(); }

std::string SweepProgress::clock(double s) {
  const long t = long(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

std::string SweepProgress::line(size_t done, size_t failed, size_t running, double elapsed) const {
  std::string s = fmt::format("sweep {}: {}/{} points", name_, done, total_);
  if (failed) s += fmt::format(", {} failed", failed);
  if (running) s += fmt::format(", {} running", running);
  s += ", " + clock(elapsed) + " elapsed";
  // The mean time per finished point so far, times what is left: crude, but honest once a few
  // points are in (the running ones are counted as half done).
  const double progressed = double(done) + 0.5 * double(running);
  if (done > 0 && done < total_) s += ", ETA " + clock(elapsed / progressed * (double(total_) - progressed));
  return s;
}

void SweepProgress::update(size_t done, size_t failed, size_t running) {
  const bool changed = done != done_;
  done_ = done;
  failed_ = failed;
  running_ = running;
  if (mode_ == Mode::kNone) return;
  const double interval = mode_ == Mode::kBar ? 0.2 : kLineInterval;
  if (since(last_draw_) >= interval || (mode_ == Mode::kBar && changed)) draw();
}

void SweepProgress::draw() {
  last_draw_ = std::chrono::steady_clock::now();
  const std::string text = line(done_, failed_, running_, since(start_));
  if (mode_ == Mode::kLines) {
    std::fprintf(out_, "%s\n", text.c_str());
  } else {
    constexpr int kWidth = 24;
    const int filled = total_ ? int(double(done_) / double(total_) * kWidth) : kWidth;
    // Built with append(): GCC 12 warns falsely (-Wrestrict) on chained operator+ of temporaries here.
    std::string bar = "[";
    bar.append(size_t(filled), '#').append(size_t(kWidth - filled), '.').append("] ");
    bar += text;
    // A line longer than the terminal would wrap, and "\r" could no longer redraw it in place.
    winsize ws{};
    if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && bar.size() >= ws.ws_col)
      bar.resize(ws.ws_col - 1);
    std::fprintf(out_, "\r\033[K%s", bar.c_str());
    drawn_ = true;
  }
  std::fflush(out_);
}

void SweepProgress::finish() {
  if (finished_) return;
  finished_ = true;
  if (mode_ == Mode::kBar && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  } else if (mode_ == Mode::kLines) {
    draw();
  }
}

}  // namespace tpusim::sweep
