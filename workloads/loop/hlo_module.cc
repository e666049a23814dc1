#include "workloads/loop/hlo_module.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/config_error.h"
#include "compiler/hlo/hlo_parser.h"

namespace tpusim {
namespace fs = std::filesystem;

namespace {

// The name on a module's `HloModule NAME, ...` line: the first line of an XLA dump; comment lines
// and blank lines may come before it. "" when the first few lines have none.
std::string module_name_of(const std::string& path) {
  constexpr int kHeaderLines = 64;
  std::ifstream in(path);
  std::string line;
  for (int i = 0; i < kHeaderLines && std::getline(in, line); ++i) {
    const size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos || line.compare(at, 2, "//") == 0) continue;
    if (line.compare(at, 10, "HloModule ") != 0) return "";
    size_t b = line.find_first_not_of(" \t", at + 10);
    if (b == std::string::npos) return "";
    size_t e = b;
    while (e < line.size() && line[e] != ',' && line[e] != ' ' && line[e] != '\t' && line[e] != '\r') ++e;
    return line.substr(b, e - b);
  }
  return "";
}

ConfigError module_error(const HloWorkload& h, const std::string& value, const std::string& rule,
                         const std::string& suggestion) {
  return ConfigError({h.module_origin.file, "module", h.module_origin.line, value, rule, suggestion});
}

std::string listing(const std::vector<DumpedModule>& ms) {
  constexpr size_t kShown = 12;
  std::string s;
  for (size_t i = 0; i < ms.size() && i < kShown; ++i)
    s += fmt::format("{}{} ({}, {} bytes)", i ? "; " : "", ms[i].name, fs::path(ms[i].file).filename().string(), ms[i].bytes);
  if (ms.size() > kShown) s += fmt::format("; and {} more", ms.size() - kShown);
  return s.empty() ? "none" : s;
}

}  // namespace

std::vector<DumpedModule> dumped_modules(const std::string& dir) {
  // Tiers of file names, preferred first.
  auto tier = [](const std::string& f) {
    if (f.ends_with(".before_optimizations.txt")) return 0;
    if (f.ends_with(".after_optimizations.txt")) return 1;
    if (f.ends_with(".txt") || f.ends_with(".hlo")) return 2;
    return 3;
  };
  std::vector<DumpedModule> by_tier[3];
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string f = e.path().filename().string();
    const int t = tier(f);
    if (t > 2) continue;
    const std::string name = module_name_of(e.path().string());
    if (name.empty()) continue;
    by_tier[t].push_back({e.path().string(), name, uint64_t(e.file_size(ec))});
  }
  for (auto& ms : by_tier) {
    if (ms.empty()) continue;
    std::sort(ms.begin(), ms.end(), [](const DumpedModule& a, const DumpedModule& b) { return a.file < b.file; });
    return ms;
  }
  return {};
}

bool is_step_module_name(const std::string& name) {
  return name.find("SyncTensorsGraph") != std::string::npos || name.find("train_step") != std::string::npos ||
         name.rfind("jit_", 0) == 0;
}

std::string select_step_module(const HloWorkload& h) {
  std::error_code ec;
  if (h.module.empty()) throw module_error(h, "", "is empty", "module: a .hlo/.txt file or a directory of XLA dumps");
  if (!fs::exists(h.module, ec))
    throw module_error(h, h.module, "no such file or directory (a relative path is relative to the workload file)",
                       "module: a .hlo/.txt file or a directory of XLA dumps (--xla_dump_to)");
  if (!fs::is_directory(h.module, ec)) {
    if (!h.module_name.empty()) {
      const std::string name = module_name_of(h.module);
      if (name.find(h.module_name) == std::string::npos)
        throw ConfigError({h.module_name_origin.file, "module_name", h.module_name_origin.line, h.module_name,
                           fmt::format("does not name the module of {} (its HloModule is '{}')", h.module,
                                       name.empty() ? "not found" : name),
                           "remove module_name, or point module at the dump directory"});
    }
    return h.module;
  }
  const std::vector<DumpedModule> all = dumped_modules(h.module);
  std::vector<DumpedModule> match;
  if (!h.module_name.empty()) {
    for (const DumpedModule& m : all)
      if (m.name == h.module_name) match.push_back(m);
    if (match.empty())
      for (const DumpedModule& m : all)
        if (m.name.find(h.module_name) != std::string::npos) match.push_back(m);
    if (match.size() == 1) return match[0].file;
    throw module_error(h, h.module,
                       fmt::format("{} module of the directory is named '{}' (found: {})",
                                   match.empty() ? "no" : "more than one", h.module_name, listing(match.empty() ? all : match)),
                       "set module_name to one of the names found, or module to one file");
  }
  for (const DumpedModule& m : all)
    if (is_step_module_name(m.name)) match.push_back(m);
  if (match.empty())
    throw module_error(h, h.module,
                       fmt::format("holds no step module (a name containing SyncTensorsGraph or train_step, or starting "
                                   "with jit_); found: {}", listing(all)),
                       "set module_name to the module to run, or module to one file");
  // The step is the largest: the others a step's program makes are small helpers (initializers,
  // random-number seeds, argument conversions).
  std::stable_sort(match.begin(), match.end(), [](const DumpedModule& a, const DumpedModule& b) { return a.bytes > b.bytes; });
  if (match.size() > 1 && match[0].bytes == match[1].bytes)
    throw module_error(h, h.module,
                       fmt::format("has more than one largest step module ({} bytes each): {}", match[0].bytes, listing(match)),
                       "set module_name to the module to run, or module to one file");
  return match[0].file;
}

std::string hlo_module_digest(const WorkloadConfig& w) {
  if (w.kind() != WorkloadKind::kHlo) return "";
  std::string file;
  try {
    file = select_step_module(w.hlo());
  } catch (const ConfigError&) {
    return "";
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  uint64_t h = 14695981039346656037ull;  // FNV-1a, as config_hash
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ull;
    }
  }
  return fmt::format("module {} fnv1a64:{:016x}", fs::path(file).filename().string(), h);
}

hlo::Module load_step_module(const HloWorkload& h, std::string* file) {
  *file = select_step_module(h);
  return hlo::parse_hlo_file(*file);
}

hlo::SpmdResult partition_step_module(const HloWorkload& h, const hlo::Module& m, uint32_t replicas) {
  hlo::SpmdOptions o;
  o.mode = h.spmd;
  if (hlo::spmd_detect(m, o.mode).pre_partitioning) {
    if (replicas % uint64_t(m.num_partitions) != 0) {
      const bool own = h.replicas == 0;
      throw ConfigError({own ? h.module_origin.file : h.replicas_origin.file, own ? "module" : "replicas",
                         own ? h.module_origin.line : h.replicas_origin.line, own ? h.module : std::to_string(replicas),
                         fmt::format("{} cores do not hold whole copies of the partitioned module: each copy takes its "
                                     "num_partitions {} cores", replicas, m.num_partitions),
                         fmt::format("set replicas to a multiple of {}, or spmd: as_written", m.num_partitions)});
    }
    o.copies = int64_t(replicas) / m.num_partitions;
  }
  return hlo::spmd_partition(m, o);
}

}  // namespace tpusim
