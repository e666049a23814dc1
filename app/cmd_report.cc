// `tpusim report DIR [-o FILE]`: a self-contained HTML page from DIR/report.json and, when present,
// DIR/trace.json[.gz]. The trace is summarized here (traces/trace_summary.h, the same analysis as
// `tpusim trace summarize`); the page and its matplotlib figures (inline SVG) are drawn by
// scripts/report_html.py, embedded in the binary and run with Debian's python3.
// `tpusim report DIR_A DIR_B [...]`: the runs on one page, side by side (the comparison of `tpusim
// compare`, workloads/report/run_compare.h) with overlaid and paired charts; traces are not drawn there.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/embedded.h"
#include "traces/trace_error.h"
#include "traces/trace_reader.h"
#include "traces/trace_summary.h"
#include "workloads/report/run_compare.h"

extern char** environ;

namespace tpusim::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kScript = "scripts/report_html.py";
// The script's exit code when matplotlib cannot be imported (see report_html.py).
constexpr int kNoMatplotlibExit = 3;
constexpr size_t kReportTop = 15;

struct ReportArgs {
  std::vector<std::string> dirs;  // one run, or several on one page
  std::string out;                // empty: DIR/report.html; several runs: DIR_A/compare.html
};

// A private temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tpusim_report_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path operator/(const char* name) const { return path_ / name; }

 private:
  fs::path path_;
};

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  f.flush();
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

// Debian's interpreter (it has python3-matplotlib) unless TPUSIM_PYTHON names another.
std::string python() {
  if (const char* p = std::getenv("TPUSIM_PYTHON"); p && *p) return p;
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

// Runs argv[0] (searched on PATH) and returns its exit status; -1 if it could not be started.
int spawn_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  for (const auto& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawnp(&pid, cargv[0], nullptr, nullptr, cargv.data(), environ) != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// DIR's trace, if any: trace.json.gz or trace.json (the newer when an older tpusim left both).
std::string find_trace(const fs::path& dir) {
  std::error_code ec;
  const fs::path gz = dir / "trace.json.gz", plain = dir / "trace.json";
  const bool has_gz = fs::is_regular_file(gz, ec), has_plain = fs::is_regular_file(plain, ec);
  if (has_gz && has_plain) return (fs::last_write_time(gz, ec) >= fs::last_write_time(plain, ec) ? gz : plain).string();
  if (has_gz) return gz.string();
  if (has_plain) return plain.string();
  return "";
}

// A training trace has unit-level detail (MXU, VPU, DMA...) only for a few ms of each program's
// first execution: the span of one step's detail, where those lanes' utilization means something.
// The first train step after the first optimizer step (its program is the one that repeats), else
// the first step with detail. Nothing for a trace without steps.
std::optional<std::pair<int64_t, Interval>> detail_span(const TraceData& t) {
  std::map<int64_t, Interval> span;
  std::map<int64_t, std::string> program;
  for (const TraceOp& op : t.ops) {
    if (op.step < 0) continue;
    const LaneKind k = t.lanes[op.lane].kind;
    if (k == LaneKind::kDeviceStep) program.emplace(op.step, t.names[op.name]);
    if (k == LaneKind::kHost || k == LaneKind::kDeviceStep) continue;
    auto [it, added] = span.emplace(op.step, Interval{op.start_ns, op.end_ns});
    if (!added) it->second = {std::min(it->second.start, op.start_ns), std::max(it->second.end, op.end_ns)};
  }
  if (span.empty()) return std::nullopt;
  for (const auto& [step, iv] : span)
    if (program[step].rfind("train ", 0) == 0) return std::make_pair(step, iv);
  return *span.begin();
}

// Writes the embedded script into `tmp` and runs it with `args`; maps its failures to errors.
void draw(const TempDir& tmp, const std::vector<std::string>& args, const std::string& out) {
  const auto& files = embedded_files();
  auto script = files.find(kScript);
  if (script == files.end()) throw std::logic_error(std::string(kScript) + " was not embedded at build time");
  write_text(tmp / "report_html.py", script->second);
  std::vector<std::string> argv = {python(), (tmp / "report_html.py").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const int rc = spawn_and_wait(argv);
  if (rc == -1 || rc == 127)
    throw input_error("tpusim report", "needs python3 with matplotlib, and " + argv[0] + " could not be run", "",
                      "install Debian's python3-matplotlib (scripts/build.sh does), or set TPUSIM_PYTHON");
  if (rc == kNoMatplotlibExit)
    throw input_error("tpusim report", "needs matplotlib for " + argv[0], "",
                      "install Debian's python3-matplotlib (scripts/build.sh does), or set TPUSIM_PYTHON");
  // The script exits 2 when it cannot write the page (the directory was checked before).
  if (rc == 2) throw input_error("-o", "cannot be written (see the message above)", out);
  if (rc != 0) throw std::runtime_error(fmt::format("{} failed (exit {}) drawing the report", kScript, rc));
}

void check_out(const std::string& out) {
  std::error_code ec;
  if (const fs::path parent = fs::path(out).parent_path(); !parent.empty() && !fs::is_directory(parent, ec))
    throw input_error("-o", "names a file in a directory that does not exist", out);
}

int report_runs(const ReportArgs& a) {
  std::vector<json> reps;
  for (const std::string& d : a.dirs) reps.push_back(load_run_report(d));
  const std::string out = a.out.empty() ? (fs::path(a.dirs[0]) / "compare.html").string() : a.out;
  check_out(out);
  TempDir tmp;
  std::vector<std::string> args;
  for (size_t i = 0; i < reps.size(); ++i) {
    const std::string name = fmt::format("report{}.json", i);
    write_text(tmp / name.c_str(), reps[i].dump());
    args.insert(args.end(), {"--report", (tmp / name.c_str()).string(), "--source", a.dirs[i]});
  }
  write_text(tmp / "comparison.json", comparison_json(compare_reports(a.dirs, reps)).dump());
  args.insert(args.end(), {"--comparison", (tmp / "comparison.json").string(), "--out", out});
  draw(tmp, args, out);
  std::cout << fmt::format("{:<10} {} ({} runs side by side; traces are drawn on single-run pages)\n", "report", out,
                           reps.size());
  return 0;
}

int report(const ReportArgs& a) {
  if (a.dirs.size() > 1) return report_runs(a);
  const fs::path dir(a.dirs[0]);
  std::error_code ec;
  const json rep = load_run_report(a.dirs[0]);
  const std::string out = a.out.empty() ? (dir / "report.html").string() : a.out;
  check_out(out);

  TempDir tmp;
  json summary;  // null: no trace figures
  json detail;   // null: no figure of one step's unit detail
  std::string detail_label;
  std::string trace_note;
  if (const std::string trace = find_trace(dir); !trace.empty()) {
    try {
      const TraceData t = read_trace_file(trace);
      const std::string hash = rep["tpusim"].value("config_hash", "");
      const std::string trace_hash = t.other_data.is_object() ? t.other_data.value("config_hash", "") : "";
      if (!trace_hash.empty() && !hash.empty() && trace_hash != hash) {
        // A trace left by a run of other inputs would draw another run's lanes.
        trace_note = fmt::format("{} is of another run (config hash {}, the report's {}); not used", trace,
                                 trace_hash, hash);
      } else {
        SummaryOptions o;
        o.top = kReportTop;
        summary = trace_summary_json(t, summarize_trace(t, o), o);
        if (const auto d = detail_span(t)) {
          SummaryOptions od = o;
          od.window.from_ns = d->second.start;
          od.window.to_ns = d->second.end;
          detail = trace_summary_json(t, summarize_trace(t, od), od);
          detail_label = fmt::format("step {}", d->first);
        }
      }
    } catch (const TraceError& e) {
      trace_note = std::string(e.what()) + "; not used";
    }
    if (!trace_note.empty()) std::cerr << "warning: " << trace_note << "\n";
  }
  write_text(tmp / "report.json", rep.dump());
  std::vector<std::string> argv = {"--report", (tmp / "report.json").string(), "--source", a.dirs[0], "--out", out};
  if (!summary.is_null()) {
    write_text(tmp / "trace_summary.json", summary.dump());
    argv.insert(argv.end(), {"--trace-summary", (tmp / "trace_summary.json").string()});
  }
  if (!detail.is_null()) {
    write_text(tmp / "detail_summary.json", detail.dump());
    argv.insert(argv.end(), {"--detail-summary", (tmp / "detail_summary.json").string(), "--detail-label", detail_label});
  }
  if (!trace_note.empty()) argv.insert(argv.end(), {"--note", trace_note});
  draw(tmp, argv, out);
  std::cout << fmt::format("{:<10} {}{}\n", "report", out, summary.is_null() ? " (no trace: no lane figures)" : "");
  return 0;
}

}  // namespace

namespace {
json load_report(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw input_error(path.parent_path().string(), "has no report.json", "",
                      "write one with `tpusim run --out " + path.parent_path().string() + "` (add --trace for lane figures)");
  std::ifstream f(path, std::ios::binary);
  json rep;
  try {
    rep = json::parse(f);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw input_error(path.string(), "is not JSON (" + what + ")");
  }
  if (!rep.is_object() || !rep.contains("tpusim") || !rep.contains("summary") || !rep.contains("workload"))
    throw input_error(path.string(), "is not a tpusim report.json (no tpusim, workload and summary sections)", "",
                      "give the --out DIR of a `tpusim run`");
  return rep;
}

}  // namespace

json load_run_report(const std::string& dir_name) {
  const fs::path dir(dir_name);
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw input_error(dir_name, "no such directory", "", "give the --out DIR of a `tpusim run`");
  if (!fs::is_directory(dir, ec)) throw input_error(dir_name, "is not a directory", "", "give the --out DIR of a `tpusim run`");
  return load_report(dir / "report.json");
}

Subcommand add_report_command(CLI::App& cli) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = cli.add_subcommand(
      "report", "Render DIR/report.json (+ DIR/trace.json[.gz]) as a self-contained HTML page with figures; "
                "several DIRs: the runs side by side on one page");
  cmd->add_option("DIR", args->dirs, "The --out DIR of a `tpusim run` (several: compared with the first)")->required();
  cmd->add_option("-o,--output", args->out, "HTML file to write (default: DIR/report.html; several runs: "
                                            "DIR_A/compare.html)")
      ->type_name("FILE");
  return {cmd, [args] { return report(*args); }};
}

}  // namespace tpusim::app
