#include "sweep/run_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

#include "base/config_error.h"
#include "sweep/out_lock.h"
#include "sweep/process_pool.h"
#include "sweep/progress.h"
#include "sweep/results.h"

namespace tpusim::sweep {

namespace fs = std::filesystem;

namespace {

ConfigError out_error(const std::string& flag, const std::string& dir, const std::string& why) {
  ConfigErrorInfo e;
  e.file = flag;
  e.value = dir;
  e.rule = why;
  return ConfigError(e);
}

void make_dir(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw out_error(flag, dir, "cannot be used as the output directory (" + (ec ? ec.message() : "not a directory") + ")");
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "p0007": sorted listings follow point order.
std::string point_dir_name(uint64_t id, uint64_t grid_points) {
  const size_t width = std::max<size_t>(4, std::to_string(grid_points ? grid_points - 1 : 0).size());
  return fmt::format("p{:0{}}", id, width);
}

std::string axes_text(const SweepPlan& plan, const SweepPoint& p) {
  std::string s;
  for (size_t i = 0; i < plan.config.axes.size(); ++i)
    s += fmt::format("{}{}={}", i ? ", " : "", plan.config.axes[i].name, p.values[i].display);
  return s;
}

PointOutcome outcome_of(const JobResult& r, const std::string& point_dir, double timeout_s) {
  PointOutcome o;
  o.exit_code = r.exit_code;
  o.wall_s = r.wall_s;
  const std::string err_text = read_text((fs::path(point_dir) / "stderr.txt").string());
  o.error = first_error_line(err_text);
  if (r.spawn_failed) {
    o.status = "failed";
    o.error = r.error;
  } else if (r.timed_out) {
    o.status = "timeout";
    o.exit_code = 124;  // what timeout(1) exits with
    o.error = fmt::format("timed out after {} s (timeout_s)", timeout_s);
  } else if (r.signal) {
    o.status = "crashed";
    const char* name = strsignal(r.signal);
    o.error = fmt::format("killed by signal {} ({}){}{}", r.signal, name ? name : "?", o.error.empty() ? "" : ": ", o.error);
  } else if (r.exit_code != 0) {
    o.status = "failed";
    if (o.error.empty()) o.error = fmt::format("exit {} without an error message", r.exit_code);
  } else {
    const std::string report_path = (fs::path(point_dir) / "report.json").string();
    o.report = ojson::parse(read_text(report_path), nullptr, false);
    if (o.report.is_discarded() || !o.report.is_object()) {
      o.report = nullptr;
      o.status = "failed";
      o.error = "exit 0 but no readable " + report_path;
    } else {
      o.status = "ok";
      o.error.clear();  // warnings on stderr of a successful point are not errors
    }
  }
  return o;
}

bool is_final(const ojson& record) {
  // ok and exit 2/3 failures are deterministic; crashes and timeouts may not be, so --resume re-runs them.
  const std::string status = record.value("status", "");
  return status == "ok" || status == "failed";
}

// OUT that is one of the inputs would be rewritten while it is merged (and lose its own rows if
// the merge failed half-way). Compared as canonical paths, so `.`, `..` and symlinks do not hide it.
void refuse_input_as_output(const std::string& out_dir, const std::vector<std::string>& dirs) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(out_dir, ec);
  if (ec) return;  // not resolvable: make_dir reports it
  for (const std::string& d : dirs) {
    const fs::path in = fs::weakly_canonical(d, ec);
    if (ec || in != out) continue;
    ConfigErrorInfo e;
    e.file = "merge OUT";
    e.value = out_dir;
    e.rule = d == out_dir ? "is also an input directory: OUT must not be one of the merged directories"
                          : fmt::format("is the input directory {} ({}): OUT must not be one of the merged directories", d, in.string());
    e.suggestion = "merge into a new directory, e.g. tpusim sweep merge " + (out.parent_path() / (out.filename().string() + "-merged")).string() + " DIR...";
    throw ConfigError(e);
  }
}

// The points' program memo (SweepRunOptions::program_memo): a fresh directory under the system's
// temporary directory, removed when the sweep ends (a memo only lives as long as the binary that
// wrote it is the one running). Without one (off, or not creatable) the points run without a memo.
class MemoDir {
 public:
  explicit MemoDir(bool on) {
    if (!on) return;
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (ec) return;
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    const fs::path p = tmp / fmt::format("tpusim-memo-{}-{:x}", ::getpid(), uint64_t(now));
    if (fs::create_directory(p, ec) && !ec) path_ = p.string();
  }
  ~MemoDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  MemoDir(const MemoDir&) = delete;
  MemoDir& operator=(const MemoDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string default_out_dir(const std::string& sweep_name) { return (fs::path("out") / "sweeps" / sweep_name).string(); }

SweepRunSummary run_sweep(const SweepPlan& plan, const SweepRunOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  SweepRunSummary sum;
  sum.out_dir = opt.out_dir.empty() ? default_out_dir(plan.config.name) : opt.out_dir;
  sum.jobs = opt.jobs ? opt.jobs : available_cpus();
  if (plan.config.max_jobs) sum.jobs = std::min(sum.jobs, plan.config.max_jobs);
  const std::string& dir = sum.out_dir;
  make_dir(dir, "--out");
  const OutDirLock lock(dir, "--out");  // before anything in DIR is read or replaced

  const std::vector<SweepPoint> all_points = [&] {
    std::vector<SweepPoint> v;
    for (const auto& p : plan.points) v.push_back(p.point);
    return v;
  }();
  std::set<uint64_t> mine;
  for (const auto& p : shard(all_points, opt.shard_index, opt.shard_count)) mine.insert(p.id);

  // Earlier results: kept when the point is still in this (shard of the) sweep with the same key.
  std::map<uint64_t, ojson> kept;
  if (opt.resume) {
    std::map<uint64_t, std::string> keys;
    for (const auto& p : plan.points) keys[p.point.id] = p.key;
    for (auto& r : read_records(dir)) {
      const uint64_t id = record_point(r);
      if (mine.count(id) && keys[id] == r.value("key", "") && is_final(r)) kept[id] = std::move(r);
    }
  } else {
    // A fresh run replaces this sweep's own files (nothing else in DIR).
    std::error_code ec;
    for (const char* f : {kResultsCsv, kResultsJsonl, kSweepJson}) fs::remove(fs::path(dir) / f, ec);
    fs::remove_all(fs::path(dir) / "points", ec);
    fs::remove_all(fs::path(dir) / "plots", ec);
  }
  ojson desc = sweep_description(plan);
  if (opt.shard_count > 1) desc["shard"] = fmt::format("{}/{}", opt.shard_index, opt.shard_count);
  write_json((fs::path(dir) / kSweepJson).string(), desc);

  std::vector<ojson> records;
  for (auto& [id, r] : kept) records.push_back(r);
  write_sorted(dir, plan.columns, records);  // resume: stale rows dropped before appending
  ResultsAppender appender(dir, plan.columns, false);

  std::map<uint64_t, const PlannedPoint*> by_id;
  const MemoDir memo(opt.program_memo);
  std::vector<Job> jobs;
  std::vector<const PlannedPoint*> invalid;
  for (const auto& p : plan.points) {
    if (!mine.count(p.point.id)) continue;
    ++sum.points;
    if (kept.count(p.point.id)) continue;
    by_id[p.point.id] = &p;
    if (!p.invalid.empty()) {
      invalid.push_back(&p);
      continue;
    }
    const std::string pdir = (fs::path(dir) / "points" / point_dir_name(p.point.id, plan.grid_points)).string();
    make_dir(pdir, "--out");
    Job j;
    j.id = p.point.id;
    j.argv = {opt.tpusim, "run"};
    if (!p.hw_file.empty()) j.argv.insert(j.argv.end(), {"--hw", p.hw_file});  // none: the workload's hw:
    j.argv.insert(j.argv.end(), {"--workload", p.workload_file});
    if (!plan.engine.empty()) j.argv.insert(j.argv.end(), {"--engine", plan.engine});
    for (const auto& s : p.sets) j.argv.insert(j.argv.end(), {"--set", s});
    if (!memo.path().empty()) j.argv.insert(j.argv.end(), {"--program-memo", memo.path()});
    j.argv.insert(j.argv.end(), opt.point_args.begin(), opt.point_args.end());
    j.argv.insert(j.argv.end(), {"--out", pdir, "--quiet"});
    j.stderr_path = (fs::path(pdir) / "stderr.txt").string();
    j.timeout_s = plan.config.timeout_s;
    jobs.push_back(std::move(j));
  }
  sum.resumed = kept.size();
  // Each point running at once gets its share of the sweep's memory; fewer points than jobs share it
  // among themselves. In whole MiB, so that a refusal's message shows a readable limit.
  if (opt.max_memory.bytes && !jobs.empty()) {
    const uint64_t share_mib = opt.max_memory.bytes / std::min<uint64_t>(sum.jobs, jobs.size()) >> 20;
    for (Job& j : jobs) {
      const auto out = std::find(j.argv.begin(), j.argv.end(), "--out");
      j.argv.insert(out, {"--max-memory", std::to_string(std::max<uint64_t>(share_mib, 1)) + "MiB"});
    }
  }

  SweepProgress progress(SweepProgress::mode_for(opt.progress, opt.quiet), plan.config.name, sum.points, opt.progress);
  size_t done = sum.resumed, failed = 0;
  for (const auto& [id, r] : kept)
    if (r.value("status", "") != "ok") ++failed;
  auto add = [&](const PlannedPoint& p, const PointOutcome& o) {
    const ojson r = make_record(plan, p, o);
    appender.add(r);
    records.push_back(r);
    ++done;
    ++sum.ran;
    if (o.status != "ok") ++failed;
  };
  // A point whose own values are invalid fails as its `tpusim run` would (exit 2), without a process.
  for (const PlannedPoint* p : invalid) add(*p, PointOutcome{"failed", 2, p->invalid, 0, nullptr});
  progress.update(done, failed, 0);

  ProcessPool pool(sum.jobs);
  size_t running = 0;
  // Thrown out of the pool's tick to stop it (it kills and reaps the running points as it unwinds).
  struct Stop {
    int signal;
  };
  auto check_stop = [&] {
    if (const int sig = opt.stop_signal ? opt.stop_signal() : 0) throw Stop{sig};
  };
  try {
    check_stop();  // a signal while the sweep was planned: start nothing
    pool.run(
        jobs,
        [&](const JobResult& r) {
          const PlannedPoint& p = *by_id.at(r.id);
          const std::string pdir = (fs::path(dir) / "points" / point_dir_name(r.id, plan.grid_points)).string();
          add(p, outcome_of(r, pdir, plan.config.timeout_s));
          progress.update(done, failed, running ? running - 1 : 0);
        },
        [&](size_t n) {
          running = n;
          progress.update(done, failed, n);
          check_stop();
          if (opt.poll) opt.poll();
        });
  } catch (const Stop& s) {
    sum.stopped_by = s.signal;
  } catch (...) {
    // Stopped from `poll`: the finished points are already appended; leave them sorted too.
    progress.finish();
    write_sorted(dir, plan.columns, records);
    throw;
  }
  progress.finish();
  sum.not_run = sum.points - done;

  // The deterministic files: every record of this run, sorted by point id.
  write_sorted(dir, plan.columns, records);
  std::sort(records.begin(), records.end(), [](const ojson& a, const ojson& b) { return record_point(a) < record_point(b); });
  std::map<uint64_t, const PlannedPoint*> all;
  for (const auto& p : plan.points) all[p.point.id] = &p;
  for (const auto& r : records) {
    if (r.value("status", "") == "ok") {
      ++sum.ok;
      continue;
    }
    ++sum.failed;
    const uint64_t id = record_point(r);
    const std::string status = r.value("status", "");
    sum.failures.push_back(fmt::format("point {} ({}): {}exit {}: {}", id, axes_text(plan, all.at(id)->point),
                                       status == "failed" ? "" : status + ", ", r.value("exit_code", 0), r.value("error", "")));
  }

  sum.plots_skipped = !opt.plots || opt.shard_count > 1 || plan.config.plots.empty() || sum.stopped_by;
  if (!sum.plots_skipped) sum.plots = render_plots(dir, opt.plot_script);
  sum.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

MergeSummary merge_sweeps(const std::string& out_dir, const std::vector<std::string>& dirs, bool plots,
                          const std::string& plot_script) {
  MergeSummary sum;
  sum.out_dir = out_dir;
  refuse_input_as_output(out_dir, dirs);
  ojson desc;
  std::string first_dir;
  std::map<uint64_t, std::pair<ojson, std::string>> by_id;  // record, the directory it came from
  for (const std::string& d : dirs) {
    const std::string sj = (fs::path(d) / kSweepJson).string();
    std::error_code ec;
    if (!fs::is_regular_file(sj, ec))
      throw out_error(d, d, "is not a sweep output directory (no " + std::string(kSweepJson) + ")");
    ojson this_desc = read_json(sj);
    this_desc.erase("shard");
    if (desc.is_null()) {
      desc = this_desc;
      first_dir = d;
    } else if (this_desc.value("sweep_hash", "") != desc.value("sweep_hash", "")) {
      ConfigErrorInfo e;
      e.file = d;
      e.rule = fmt::format("comes from a different sweep than {} (sweep_hash {} vs {})", first_dir,
                           this_desc.value("sweep_hash", ""), desc.value("sweep_hash", ""));
      e.suggestion = "merge the shards of one sweep file, run with the same --set flags";
      throw ConfigError(e);
    }
    for (auto& r : read_records(d)) {
      const uint64_t id = record_point(r);
      auto it = by_id.find(id);
      if (it == by_id.end()) {
        by_id.emplace(id, std::make_pair(std::move(r), d));
        continue;
      }
      // The same point twice (overlapping shards, a re-run): fine when it is the same configuration.
      if (it->second.first.value("key", "") != r.value("key", "")) {
        ConfigErrorInfo e;
        e.file = d;
        e.rule = fmt::format("point {} has a different configuration than in {} (key {} vs {})", id, it->second.second,
                             r.value("key", ""), it->second.first.value("key", ""));
        throw ConfigError(e);
      }
      ++sum.duplicates;
      // Prefer a successful run of the point over a crash or timeout of it.
      if (it->second.first.value("status", "") != "ok" && r.value("status", "") == "ok") it->second = {std::move(r), d};
    }
  }
  make_dir(out_dir, "merge OUT");
  const OutDirLock lock(out_dir, "merge OUT");
  std::vector<ojson> records;
  for (auto& [id, rd] : by_id) {
    if (rd.first.value("status", "") != "ok") ++sum.failed;
    records.push_back(std::move(rd.first));
  }
  sum.records = records.size();
  sum.expected = desc.value("points", size_t(0));
  write_sorted(out_dir, desc.at("columns").get<std::vector<std::string>>(), std::move(records));
  write_json((fs::path(out_dir) / kSweepJson).string(), desc);
  sum.plots_skipped = !plots || desc.at("plots").empty();
  if (!sum.plots_skipped) {
    std::error_code ec;
    fs::remove_all(fs::path(out_dir) / "plots", ec);
    sum.plots = render_plots(out_dir, plot_script);
  }
  return sum;
}

}  // namespace tpusim::sweep
