#include "workloads/report/report.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <vector>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "workloads/report/energy_report.h"
#include "workloads/report/report_fields.h"

#include "base/config_error.h"
#include "models/kernel_specs.h"
#include "sim/hw/resolved_hw.h"
#include "traces/chrome_trace.h"
#include "sim/base/clock.h"

namespace tpusim {
namespace {

using nlohmann::json;

// 1234567 -> "1,234,567": cycle counts are read by people.
std::string grouped(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(digits[i]);
  }
  return s;
}

// A value with a decimal SI prefix: 3.4e10 "FLOP" -> "34.36 GFLOP".
std::string si(double v, const char* unit) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (v >= 1000 && p < 5) {
    v /= 1000;
    ++p;
  }
  return fmt::format("{:.2f} {}{}", v, prefixes[p], unit);
}

double safe_div(double a, double b) { return b > 0 ? a / b : 0; }

// The numeric value of stat `key` of a StatGroup dump ({"key": {"value": v, ...}}), if present.
bool stat_value(const json& block, const char* key, double* out) {
  auto it = block.find(key);
  if (it == block.end()) return false;
  const json& v = it->is_object() && it->contains("value") ? (*it)["value"] : *it;
  if (!v.is_number()) return false;
  *out = v.get<double>();
  return true;
}

// "m=1024 k=1024 n=1024": in the kernel's own key order (models/kernel_specs.h), not alphabetical.
std::string shape_text(const KernelWorkload& k) {
  std::vector<std::string> keys;
  for (const auto& spec : models::kernel_specs()) {
    if (spec.name == k.kernel) keys = spec.shape_keys;
  }
  for (const auto& [key, v] : k.shape) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::string s;
  for (const auto& key : keys) {
    auto it = k.shape.find(key);
    if (it != k.shape.end()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", key, it->second);
  }
  return s;
}


// One row of the per-block table; replicated blocks (hbm.ch0..31) collapse into one row.
struct BlockRow {
  std::string name;
  bool has_busy = false, has_util = false, has_bytes = false;
  double busy = 0, util = 0, bytes = 0;
  std::string note;
};

// "slice.chip0.hbm.ch12" -> ("slice.chip0.hbm.ch", 12); -1 when the name ends without a number.
std::pair<std::string, long> split_index(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  if (i == name.size() || i == 0 || name[i - 1] == '.') return {name, -1};
  return {name.substr(0, i), std::stol(name.substr(i))};
}

// Sorts like the trace's lanes (per core: mxu, vpu, dma; then hbm), keyed on what follows "chipN.".
std::vector<int64_t> row_key(const std::string& name) {
  size_t chip = name.find(".chip");
  std::string rest = name;
  std::vector<int64_t> key = {0};
  if (chip != std::string::npos) {
    size_t dot = name.find('.', chip + 1);
    key[0] = std::atol(name.c_str() + chip + 5);
    rest = dot == std::string::npos ? "" : name.substr(dot + 1);
  }
  for (int64_t k : ChromeTraceSink::track_sort_key(rest)) key.push_back(k);
  return key;
}

std::string block_table(const json& stats, uint64_t device_cycles) {
  if (!stats.is_object()) return "";
  // Only blocks that were busy in a measurable way (units with busy cycles or a utilization).
  std::vector<BlockRow> rows;
  for (const auto& [name, block] : stats.items()) {
    BlockRow b;
    b.name = name;
    b.has_busy = stat_value(block, "busy_cycles", &b.busy);
    b.has_util = stat_value(block, "utilization", &b.util);
    b.has_bytes = stat_value(block, "bytes", &b.bytes);
    if (!b.has_util && b.has_busy && device_cycles > 0) {
      b.util = b.busy / double(device_cycles);
      b.has_util = true;
    }
    if (b.has_busy || b.has_util) rows.push_back(b);
  }
  // Collapse groups of more than 4 numbered siblings: their mean over the busy members.
  std::map<std::string, std::vector<std::pair<long, BlockRow>>> groups;
  for (const auto& b : rows) {
    auto [prefix, index] = split_index(b.name);
    if (index >= 0) groups[prefix].push_back({index, b});
  }
  std::vector<BlockRow> shown;
  for (const auto& b : rows) {
    auto [prefix, index] = split_index(b.name);
    if (index < 0 || groups[prefix].size() <= 4) {
      shown.push_back(b);
      continue;
    }
    auto& g = groups[prefix];
    if (g.empty() || g.front().second.name != b.name) continue;  // emitted with its first member
    BlockRow m;
    long lo = g.front().first, hi = g.front().first;
    size_t busy_members = 0;
    for (const auto& [i, r] : g) {
      lo = std::min(lo, i);
      hi = std::max(hi, i);
      if (r.busy <= 0 && r.util <= 0) continue;
      ++busy_members;
      m.has_busy |= r.has_busy;
      m.has_util |= r.has_util;
      m.has_bytes |= r.has_bytes;
      m.busy += r.busy;
      m.util += r.util;
      m.bytes += r.bytes;
    }
    m.name = fmt::format("{}{}..{}", prefix, lo, hi);
    if (busy_members > 0) {
      m.busy /= double(busy_members);
      m.util /= double(busy_members);
    }
    m.note = fmt::format("mean of {} busy of {}; bytes: total", busy_members, g.size());
    shown.push_back(m);
  }
  std::stable_sort(shown.begin(), shown.end(),
                   [](const BlockRow& a, const BlockRow& b) { return row_key(a.name) < row_key(b.name); });

  size_t width = 5;
  for (const auto& b : shown) width = std::max(width, b.name.size());
  std::string o = fmt::format("\n{:<{}}  {:>13}  {:>11}  {:>12}\n", "block", width, "busy cycles", "utilization",
                              "bytes");
  for (const auto& b : shown) {
    std::string line = fmt::format("{:<{}}  {:>13}  {:>11}  {:>12}", b.name, width,
                                   b.has_busy ? grouped(uint64_t(b.busy + 0.5)) : "-",
                                   b.has_util ? fmt::format("{:.1f}%", 100 * b.util) : "-",
                                   b.has_bytes ? si(b.bytes, "B") : "-");
    if (!b.note.empty()) line += "  (" + b.note + ")";
    o += line + "\n";
  }
  return o + "\n";
}
}  // namespace

KernelSummary summarize(const HwConfig& hw, const KernelRunResult& r) {
  KernelSummary s;
  s.device_cycles = r.run.device_cycles;
  s.clock_mhz = hw.chip.core.clock_mhz;
  s.device_time_s = r.run.device_time_s > 0 ? r.run.device_time_s : Clock{s.clock_mhz}.seconds(s.device_cycles);
  s.cores_used = std::max<uint32_t>(r.cores_used, 1);
  s.flops = r.info.flops;
  s.achieved_tflop_per_s = safe_div(double(s.flops), s.device_time_s) / 1e12;
  const ResolvedHw rhw = resolve_hw(hw);
  s.peak_tflop_per_s = rhw.core_peak_tflop_per_s * s.cores_used;
  s.mxu_utilization = safe_div(s.achieved_tflop_per_s, s.peak_tflop_per_s);
  s.hbm_bytes = r.info.hbm_bytes;
  s.hbm_bytes_min = r.info.hbm_bytes_min;
  s.achieved_hbm_gbyte_per_s = safe_div(double(s.hbm_bytes), s.device_time_s) / 1e9;
  s.peak_hbm_gbyte_per_s = rhw.core_peak_hbm_gbyte_per_s * s.cores_used;
  s.hbm_bandwidth_utilization = safe_div(s.achieved_hbm_gbyte_per_s, s.peak_hbm_gbyte_per_s);
  s.ideal_compute_cycles = r.ideal.compute_cycles;
  s.ideal_hbm_cycles = r.ideal.hbm_cycles;
  s.ideal_bound_fraction =
      safe_div(double(std::max(s.ideal_compute_cycles, s.ideal_hbm_cycles)), double(s.device_cycles));
  s.fusions = r.info.fusions;
  s.instructions = r.instructions;
  return s;
}

std::string config_hash(const std::string& hw_dump, const std::string& workload_dump, const std::string& contents) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  auto feed = [&h](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;  // FNV prime
    }
  };
  // The hash after the hardware dump, kept for the next run of this thread: runs in one process
  // (the Python API, sweeps) mostly share their hardware, and hashing its dump byte by byte was
  // a sixteenth of an in-process kernel run; comparing it is far cheaper.
  thread_local std::string last_hw;
  thread_local uint64_t after_last_hw = 0;
  if (!last_hw.empty() && hw_dump == last_hw) {
    h = after_last_hw;
  } else {
    feed(hw_dump);
    feed("\n---\n");
    last_hw = hw_dump;
    after_last_hw = h;
  }
  feed(workload_dump);
  if (!contents.empty()) {  // absent: the hashes of runs naming no file stay as they were
    feed("\n---\n");
    feed(contents);
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

json make_report(const HwConfig& hw, const WorkloadConfig& w, const KernelRunResult& r, const RunContext& ctx) {
  const KernelSummary s = summarize(hw, r);
  json rep;
  rep["tpusim"] = {{"version", TPUSIM_VERSION}, {"config_hash", config_hash(ctx.hw_dump, ctx.workload_dump)}};

  json wall = {{"compile", r.compile_wall_s}, {"simulate", r.simulate_wall_s}};
  if (ctx.total_wall_s >= 0) wall["total"] = ctx.total_wall_s;
  rep["run"] = {{"engine", r.engine},
                {"wall_time_s", wall},
                {"hw_file", ctx.hw_file},
                {"workload_file", ctx.workload_file}};

  const ChipParams& chip = hw.chip;
  const ResolvedHw rhw = resolve_hw(hw);
  rep["hw"] = {{"name", hw.name},
               {"generation", chip.generation},
               {"chips", hw.slice.chips()},
               {"cores_per_chip", chip.cores},
               {"core_clock_mhz", chip.core.clock_mhz},
               {"mxus_per_core", chip.core.mxu.count},
               {"mxu_rows", chip.core.mxu.rows},
               {"mxu_cols", chip.core.mxu.cols},
               {"vmem_size_mib", chip.core.vmem.size_mib},
               {"hbm_size_gib", chip.hbm.size_gib},
               {"hbm_bandwidth_gbyte_per_s", chip.hbm.bandwidth_gbyte_per_s},
               {"hbm_ownership", enum_name(chip.hbm.ownership)},
               {"core_peak_tflop_per_s", rhw.core_peak_tflop_per_s},
               {"core_peak_hbm_gbyte_per_s", rhw.core_peak_hbm_gbyte_per_s}};

  const KernelWorkload& k = w.kernel();
  rep["workload"] = {{"name", w.name},   {"kind", enum_name(w.kind())},        {"kernel", k.kernel},
                     {"shape", k.shape}, {"dtype", models::dtype_name(k.dtype)},       {"precision", enum_name(k.precision)},
                     {"chip", k.chip},   {"core", k.core},         {"program", r.program_name}};

  rep["summary"] = {{"device_cycles", s.device_cycles},
                    {"device_time_s", s.device_time_s},
                    {"clock_mhz", s.clock_mhz},
                    {"cores_used", s.cores_used},
                    {"flops", s.flops},
                    {"achieved_tflop_per_s", s.achieved_tflop_per_s},
                    {"peak_tflop_per_s", s.peak_tflop_per_s},
                    {"mxu_utilization", s.mxu_utilization},
                    {"hbm_bytes", s.hbm_bytes},
                    {"hbm_bytes_min", s.hbm_bytes_min},
                    {"achieved_hbm_gbyte_per_s", s.achieved_hbm_gbyte_per_s},
                    {"peak_hbm_gbyte_per_s", s.peak_hbm_gbyte_per_s},
                    {"hbm_bandwidth_utilization", s.hbm_bandwidth_utilization},
                    {"cmem_bytes", r.info.cmem_bytes},
                    {"cmem_resident_bytes", r.info.cmem_resident_bytes},
                    {"ideal_compute_cycles", s.ideal_compute_cycles},
                    {"ideal_hbm_cycles", s.ideal_hbm_cycles},
                    {"ideal_bound_fraction", s.ideal_bound_fraction},
                    {"fusions", s.fusions},
                    {"instructions", s.instructions}};

  rep["summary"]["energy"] = kernel_energy_json(kernel_energy(hw, r));
  rep["summary"]["cost"] = cost_json(kernel_cost(hw, r));

  // One unit per numeric field outside `blocks` (whose stats carry their own units); the summary's
  // from the field catalogue.
  rep["units"] = {
      {"run.wall_time_s", "s"},
      {"hw.chips", "count"},
      {"hw.cores_per_chip", "count"},
      {"hw.core_clock_mhz", "MHz"},
      {"hw.mxus_per_core", "count"},
      {"hw.mxu_rows", "count"},
      {"hw.mxu_cols", "count"},
      {"hw.vmem_size_mib", "MiB"},
      {"hw.hbm_size_gib", "GiB"},
      {"hw.hbm_bandwidth_gbyte_per_s", "GB/s (10^9 bytes/s)"},
      {"hw.core_peak_tflop_per_s", "TFLOP/s (10^12 flop/s)"},
      {"hw.core_peak_hbm_gbyte_per_s", "GB/s (10^9 bytes/s)"},
      {"workload.shape", "elements"},
      {"workload.chip", "index"},
      {"workload.core", "index"},
  };
  rep["op_profile"] = op_profile_json(r.run.op_profile);
  add_summary_units(rep["units"], kKernelReport, rep);
  add_energy_units(rep["units"]);
  rep["units"]["op_profile[].count"] = "count";
  rep["units"]["op_profile[].time_s"] = "s";
  rep["units"]["op_profile[].flops"] = "flop";
  rep["units"]["op_profile[].hbm_bytes"] = "bytes";
  rep["units"]["op_profile[].vpu_vreg_ops"] = "count (vector-register operations)";
  rep["units"]["op_profile[].ici_bytes"] = "bytes (sent to other chips)";
  for (const char* b : {"compute", "memory", "vpu", "ici"}) rep["units"][fmt::format("op_profile[].{}_bound_s", b)] = "s";
  rep["blocks"] = r.run.stats;
  rep["config"] = {{"hw_yaml", ctx.hw_dump}, {"workload_yaml", ctx.workload_dump}};
  return rep;
}

json op_profile_json(const OpProfile& p) {
  // Thousands of entries per program: built key by key (an initializer list builds each pair as
  // an array first).
  json a = json::array();
  a.get_ref<json::array_t&>().reserve(p.entries.size());
  for (const OpProfileEntry& e : p.entries) {
    json o = json::object();
    o["name"] = e.name;
    o["count"] = e.count;
    o["time_s"] = e.time_s;
    o["flops"] = e.flops;
    o["hbm_bytes"] = e.hbm_bytes;
    o["vpu_vreg_ops"] = e.vpu_vreg_ops;
    o["ici_bytes"] = e.ici_bytes;
    o["compute_bound_s"] = e.compute_bound_s;
    o["memory_bound_s"] = e.memory_bound_s;
    o["vpu_bound_s"] = e.vpu_bound_s;
    o["ici_bound_s"] = e.ici_bound_s;
    o["bound"] = op_bound_name(e.bound);
    a.push_back(std::move(o));
  }
  return a;
}

std::string format_op_profile(const OpProfile& p, size_t top) {
  auto dur = [](double s) {
    if (s < 1e-3) return fmt::format("{:.1f} µs", s * 1e6);
    if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
    return fmt::format("{:.3f} s", s);
  };
  constexpr size_t kNameWidth = 60;
  size_t width = 24;
  const size_t n = std::min(top, p.entries.size());
  for (size_t i = 0; i < n; ++i) width = std::max(width, std::min(p.entries[i].name.size(), kNameWidth));
  std::string o = fmt::format("  {:<{}} {:>5} {:>10} {:>6}  {:<5} {:>8}\n", "kernel", width, "count", "time", "share",
                              "bound", "roofline");
  for (size_t i = 0; i < n; ++i) {
    const OpProfileEntry& e = p.entries[i];
    const std::string name = e.name.size() > kNameWidth ? e.name.substr(0, kNameWidth - 3) + "..." : e.name;
    const double b = e.max_bound_s();
    o += fmt::format("  {:<{}} {:>5} {:>10} {:>5.1f}%  {:<5} {:>8}\n", name, width, e.count, dur(e.time_s),
                     p.time_s > 0 ? 100 * e.time_s / p.time_s : 0.0, op_bound_name(e.bound),
                     b > 0 ? fmt::format("{:.2f}x", e.time_s / b) : "-");
  }
  return o;
}

std::string op_bound_shares(const OpProfile& p) {
  double t[5] = {};
  for (const OpProfileEntry& e : p.entries) t[size_t(e.bound)] += e.time_s;
  std::string o = "by bound:";
  for (OpBound b : {OpBound::kMxu, OpBound::kHbm, OpBound::kVpu, OpBound::kIci, OpBound::kFixed})
    o += fmt::format("{} {} {:.1f}%", b == OpBound::kMxu ? "" : ",", op_bound_name(b),
                     p.time_s > 0 ? 100 * t[size_t(b)] / p.time_s : 0.0);
  return o;
}

std::string write_report(const std::string& dir, const json& report) {
  namespace fs = std::filesystem;
  auto fail = [&dir](const std::string& why) {
    ConfigErrorInfo e;
    e.file = dir;
    e.rule = "cannot write the report: " + why;
    return ConfigError(e);
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw fail(ec.message());
  std::string path = (fs::path(dir) / "report.json").string();
  // Written beside it and renamed over it: a run stopped while writing (a sweep's SIGTERM, Ctrl-C,
  // a full disk) leaves the previous report.json or none, never half of one that a sweep would read.
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw fail("cannot open " + tmp);
    f << report.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    f.flush();
    if (!f) {
      fs::remove(tmp, ec);
      throw fail("write to " + tmp + " failed");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) throw fail("cannot rename " + tmp + " to report.json: " + ec.message());
  return path;
}

std::string format_summary(const HwConfig& hw, const WorkloadConfig& w, const KernelRunResult& r,
                           const RunContext& ctx) {
  const KernelSummary s = summarize(hw, r);
  const KernelWorkload& k = w.kernel();
  std::string o;
  auto line = [&o](std::string_view label, const std::string& text) { o += fmt::format("{:<10} {}\n", label, text); };

  line("configs", fmt::format("{} + {}", ctx.hw_file, ctx.workload_file));
  line("kernel", fmt::format("{} ({}), {} in HBM, precision {}", k.kernel, shape_text(k), models::dtype_name(k.dtype), enum_name(k.precision)));
  line("hardware", fmt::format("{} (TPU {}, {} chips x {} TensorCore{} at {:g} MHz), running on chip {} core {}",
                               hw.name, hw.chip.generation, hw.slice.chips(), hw.chip.cores,
                               hw.chip.cores == 1 ? "" : "s", s.clock_mhz, k.chip,
                               k.core));
  line("engine", r.engine);
  line("device", fmt::format("{} cycles = {:.1f} µs", grouped(s.device_cycles), s.device_time_s * 1e6));
  line("compute", fmt::format("{} at {:.2f} TFLOP/s of {:.1f} peak bf16 ({:.1f}% MXU utilization)",
                              si(double(s.flops), "FLOP"), s.achieved_tflop_per_s, s.peak_tflop_per_s,
                              100 * s.mxu_utilization));
  line("HBM", fmt::format("{} at {:.1f} GB/s of {:.1f} peak ({:.1f}%); compulsory {}", si(double(s.hbm_bytes), "B"),
                          s.achieved_hbm_gbyte_per_s, s.peak_hbm_gbyte_per_s, 100 * s.hbm_bandwidth_utilization,
                          si(double(s.hbm_bytes_min), "B")));
  if (has_cmem(hw.chip))
    line("CMEM", fmt::format("{} moved; {:.1f} MiB of buffers placed of {:.0f} MiB per chip", si(double(r.info.cmem_bytes), "B"),
                             double(r.info.cmem_resident_bytes) / (1 << 20), double(cmem_size_bytes(hw.chip)) / (1 << 20)));
  line("ideal", fmt::format("lower bounds: compute {} cycles, HBM {} cycles; device time is {:.2f}x the larger",
                            grouped(s.ideal_compute_cycles), grouped(s.ideal_hbm_cycles),
                            safe_div(1, s.ideal_bound_fraction)));
  line("program", fmt::format("{} fusions, {} instructions", s.fusions, grouped(s.instructions)));
  if (const std::string e = kernel_energy_text(kernel_energy(hw, r), kernel_cost(hw, r)); !e.empty()) line("energy", e);

  if (!r.run.op_profile.entries.empty()) {
    o += fmt::format("\nwhere the time goes (chip {} core {}; op_profile in report.json)\n", r.run.op_profile.chip,
                     r.run.op_profile.core);
    o += format_op_profile(group_op_profile(r.run.op_profile), 10);
    o += "  " + op_bound_shares(r.run.op_profile) + "\n";
  }
  o += block_table(r.run.stats, s.device_cycles);
  std::string wall = fmt::format("compile {:.1f} ms, simulate {:.1f} ms", r.compile_wall_s * 1e3,
                                 r.simulate_wall_s * 1e3);
  if (ctx.total_wall_s >= 0) wall += fmt::format(", total {:.1f} ms", ctx.total_wall_s * 1e3);
  line("wall time", wall);
  return o;
}

}  // namespace tpusim
