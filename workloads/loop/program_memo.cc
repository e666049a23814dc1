#include "workloads/loop/program_memo.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/hw_loader.h"

namespace tpusim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The file format; a file of another format is a miss. Raise it with any change below.
constexpr int kFormat = 8;

// Every field of what the memo keeps is written and read below: a field added to one of these
// structs and not here would silently be lost for memo readers, so their sizes are pinned (x86-64).
static_assert(sizeof(DeviceRun) == 696, "DeviceRun changed: update program_memo.cc, then this size");
static_assert(sizeof(OpProfileEntry) == 128, "OpProfileEntry changed: update program_memo.cc, then this size");
static_assert(sizeof(CollectiveKindStats) == 48, "CollectiveKindStats changed: update program_memo.cc, then this size");
static_assert(sizeof(StepInfo) == 88, "StepInfo changed: update program_memo.cc, then this size");
static_assert(sizeof(compiler::GraphCollective) == 128, "GraphCollective changed: update program_memo.cc, then this size");
static_assert(sizeof(compiler::MemoryBreakdown) == 48, "MemoryBreakdown changed: update program_memo.cc, then this size");
static_assert(sizeof(isa::ProgramInfo) == 48, "ProgramInfo changed: update program_memo.cc, then this size");

json key_json(const compiler::CacheKey& k) { return {k.hi, k.lo}; }
compiler::CacheKey key_of(const json& j) { return {j.at(0).get<uint64_t>(), j.at(1).get<uint64_t>()}; }

json variant_json(const StepVariant& v) { return {int(v.kind), v.batch, v.seq, v.grad_buffers, v.target}; }

json info_json(const StepInfo& i) {
  return {i.name, key_json(i.key), i.graph_nodes, i.hlo_ops, i.kernels, i.parameter_bytes, i.optimizer_state_bytes};
}
StepInfo info_of(const json& j) {
  StepInfo i;
  i.name = j.at(0).get<std::string>();
  i.key = key_of(j.at(1));
  i.graph_nodes = j.at(2);
  i.hlo_ops = j.at(3);
  i.kernels = j.at(4);
  i.parameter_bytes = j.at(5);
  i.optimizer_state_bytes = j.at(6);
  return i;
}

json collective_json(const compiler::GraphCollective& c) {
  return {c.name, int(c.op), c.bytes, c.group_size, c.groups, int(c.algorithm), c.bytes_sent_per_core, c.background,
          c.after_kernel, c.done, c.dcn_bytes_per_core};
}
compiler::GraphCollective collective_of(const json& j) {
  compiler::GraphCollective c;
  c.name = j.at(0).get<std::string>();
  c.op = models::CollectiveOp(j.at(1).get<int>());
  c.bytes = j.at(2);
  c.group_size = j.at(3);
  c.groups = j.at(4);
  c.algorithm = compiler::CollectiveAlgorithm(j.at(5).get<int>());
  c.bytes_sent_per_core = j.at(6);
  c.background = j.at(7);
  c.after_kernel = j.at(8).get<std::string>();
  c.done = j.at(9);
  c.dcn_bytes_per_core = j.at(10);
  return c;
}

// The compiled step without its program and without the memory plan's buffers (what the loop and
// the reports read of a step that ran: it fitted in HBM).
json step_json(const BuiltStep& s) {
  const compiler::CompiledStep& c = s.compiled;
  const compiler::MemoryPlan& m = c.memory;
  const compiler::MemoryBreakdown& b = s.memory;
  json cols = json::array();
  for (const auto& g : c.collectives) cols.push_back(collective_json(g));
  return {s.name,
          {m.persistent_bytes, m.peak_bytes, m.peak_kernel, m.cmem_budget_bytes, m.cmem_peak_bytes, m.cmem_chip_bytes,
           m.cmem_buffers, m.cores_per_device},
          key_json(c.key),
          c.hlo_ops,
          c.kernels,
          cols,
          c.infeed_bytes,
          {c.allreduce_bytes, c.allgather_bytes, c.reducescatter_bytes},
          c.program.info,  // isa::ProgramInfo's own JSON (sim/isa/program.h)
          {b.parameter_bytes, b.gathered_parameter_bytes, b.gradient_bytes, b.optimizer_state_bytes, b.activation_bytes,
           b.peak_bytes},
          s.graph_nodes,
          s.parameter_bytes,
          s.optimizer_state_bytes,
          s.recompute_flops,
          c.program.name,
          {m.host_peak_bytes, c.host_offload_bytes, c.host_reload_bytes},
          {c.remat.values, c.remat.bytes, c.remat.flops, c.remat.peak_bytes_before},
          s.device_examples};
}
BuiltStep step_of(const StepVariant& v, const json& j) {
  BuiltStep s;
  s.variant = v;
  s.name = j.at(0).get<std::string>();
  compiler::CompiledStep& c = s.compiled;
  const json& m = j.at(1);
  c.memory.persistent_bytes = m.at(0);
  c.memory.peak_bytes = m.at(1);
  c.memory.peak_kernel = m.at(2);
  c.memory.cmem_budget_bytes = m.at(3);
  c.memory.cmem_peak_bytes = m.at(4);
  c.memory.cmem_chip_bytes = m.at(5);
  c.memory.cmem_buffers = m.at(6);
  c.memory.cores_per_device = m.at(7);
  c.key = key_of(j.at(2));
  c.hlo_ops = j.at(3);
  c.kernels = j.at(4);
  for (const json& g : j.at(5)) c.collectives.push_back(collective_of(g));
  c.infeed_bytes = j.at(6);
  c.allreduce_bytes = j.at(7).at(0);
  c.allgather_bytes = j.at(7).at(1);
  c.reducescatter_bytes = j.at(7).at(2);
  c.program.info = j.at(8).get<isa::ProgramInfo>();
  const json& b = j.at(9);
  s.memory = {b.at(0), b.at(1), b.at(2), b.at(3), b.at(4), b.at(5)};
  s.graph_nodes = j.at(10);
  s.parameter_bytes = j.at(11);
  s.optimizer_state_bytes = j.at(12);
  s.recompute_flops = j.at(13);
  c.program.name = j.at(14).get<std::string>();
  c.memory.host_peak_bytes = j.at(15).at(0);
  c.host_offload_bytes = j.at(15).at(1);
  c.host_reload_bytes = j.at(15).at(2);
  c.remat = {j.at(16).at(0), j.at(16).at(1), j.at(16).at(2), j.at(16).at(3)};
  s.device_examples = j.at(17);
  c.lowered = false;  // no instructions here: the executor returns memo_run
  return s;
}

json kind_json(const CollectiveKindStats& k) {
  return {k.instructions, k.bytes, k.busy_cycles, k.exposed_cycles, k.busy_s, k.exposed_s};
}
CollectiveKindStats kind_of(const json& j) {
  return {j.at(0), j.at(1), j.at(2), j.at(3), j.at(4).get<double>(), j.at(5).get<double>()};
}

json entry_json(const OpProfileEntry& e) {
  return {e.name,        e.count,          e.cycles,         e.time_s,      e.flops,
          e.hbm_bytes,   e.vpu_vreg_ops,   e.ici_bytes,      e.compute_bound_s, e.memory_bound_s,
          e.vpu_bound_s, e.ici_bound_s,    e.transfers,      int(e.bound)};
}
OpProfileEntry entry_of(const json& j) {
  OpProfileEntry e;
  e.name = j.at(0).get<std::string>();
  e.count = j.at(1);
  e.cycles = j.at(2);
  e.time_s = j.at(3);
  e.flops = j.at(4);
  e.hbm_bytes = j.at(5);
  e.vpu_vreg_ops = j.at(6);
  e.ici_bytes = j.at(7);
  e.compute_bound_s = j.at(8);
  e.memory_bound_s = j.at(9);
  e.vpu_bound_s = j.at(10);
  e.ici_bound_s = j.at(11);
  e.transfers = j.at(12);
  e.bound = OpBound(j.at(13).get<int>());
  return e;
}

json run_json(const DeviceRun& r) {
  json kinds = json::array();
  for (const CollectiveKindStats& k : r.collectives.kinds) kinds.push_back(kind_json(k));
  json axes = json::array();
  for (const CollectiveKindStats& k : r.collectives.axes) axes.push_back(kind_json(k));
  json entries = json::array();
  const OpProfile empty;
  const OpProfile& p = r.op_profile ? *r.op_profile : empty;
  for (const OpProfileEntry& e : p.entries) entries.push_back(entry_json(e));
  return {r.device_s,
          r.device_cycles,
          r.allreduce_s,
          r.collective_s,
          r.cores,
          r.simulated_cores,
          {r.collectives.chip, r.collectives.core, kinds, axes},
          {bool(r.op_profile), p.chip, p.core, p.cycles, p.time_s, entries}};
}
DeviceRun run_of(const json& j) {
  DeviceRun r;
  r.device_s = j.at(0);
  r.device_cycles = j.at(1);
  r.allreduce_s = j.at(2);
  r.collective_s = j.at(3);
  r.cores = j.at(4);
  r.simulated_cores = j.at(5);
  const json& c = j.at(6);
  r.collectives.chip = c.at(0);
  r.collectives.core = c.at(1);
  if (c.at(2).size() != r.collectives.kinds.size()) throw std::runtime_error("collective kinds");
  for (size_t k = 0; k < r.collectives.kinds.size(); ++k) r.collectives.kinds[k] = kind_of(c.at(2).at(k));
  if (c.at(3).size() != r.collectives.axes.size()) throw std::runtime_error("collective axes");
  for (size_t a = 0; a < r.collectives.axes.size(); ++a) r.collectives.axes[a] = kind_of(c.at(3).at(a));
  const json& p = j.at(7);
  if (p.at(0).get<bool>()) {
    auto prof = std::make_shared<OpProfile>();
    prof->chip = p.at(1);
    prof->core = p.at(2);
    prof->cycles = p.at(3);
    prof->time_s = p.at(4);
    for (const json& e : p.at(5)) prof->entries.push_back(entry_of(e));
    r.op_profile = std::move(prof);
  }
  return r;
}

// This build of tpusim: its executable's size and modification time, so that a memo directory kept
// across a rebuild (whose timing may differ) is not read by the new build ("" when unknown).
std::string binary_identity() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const auto size = fs::file_size(exe, ec);
  if (ec) return "";
  const auto mtime = fs::last_write_time(exe, ec);
  if (ec) return "";
  return fmt::format("{}:{}", size, mtime.time_since_epoch().count());
}

}  // namespace

compiler::CacheKey program_memo_salt(const HwConfig& hw, const WorkloadConfig& w, std::string_view engine) {
  WorkloadConfig neutral = w;
  TrainingWorkload& t = neutral.training();
  const TrainingWorkload defaults;
  t.seed = defaults.seed;
  t.padding = defaults.padding;
  t.epochs = defaults.epochs;
  t.steps = defaults.steps;
  const std::string format = std::to_string(kFormat);
  return compiler::text_cache_key(
      {TPUSIM_VERSION, format, binary_identity(), dump_hw_config(hw), dump_workload_config(neutral), engine});
}

ProgramMemo::ProgramMemo(std::string dir, compiler::CacheKey salt) : dir_(std::move(dir)), salt_(salt) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
}

std::string ProgramMemo::path(const StepVariant& v) const {
  const compiler::CacheKey k = compiler::text_cache_key({salt_.hex(), variant_json(v).dump()});
  return (fs::path(dir_) / (k.hex() + ".cbor")).string();
}

std::optional<ProgramMemo::Entry> ProgramMemo::load(const StepVariant& v) const {
  std::ifstream in(path(v), std::ios::binary);
  if (!in) return std::nullopt;
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    const json j = json::from_cbor(bytes);
    if (j.at("format") != kFormat || key_of(j.at("salt")) != salt_ || j.at("variant") != variant_json(v)) return std::nullopt;
    Entry e{info_of(j.at("info")), step_of(v, j.at("step"))};
    e.step.memo_run = std::make_shared<const DeviceRun>(run_of(j.at("run")));
    return e;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable: a miss (the run compiles and simulates the program itself)
  }
}

void ProgramMemo::store(const StepVariant& v, const StepInfo& info, const BuiltStep& step, const DeviceRun& run) const {
  const json j = {{"format", kFormat}, {"salt", key_json(salt_)}, {"variant", variant_json(v)},
                  {"info", info_json(info)}, {"step", step_json(step)}, {"run", run_json(run)}};
  const std::vector<uint8_t> bytes = json::to_cbor(j);
  const std::string to = path(v);
  static std::atomic<uint64_t> writes{0};  // two threads of one process writing the same entry
  const std::string tmp = fmt::format("{}.{}.{}.tmp", to, ::getpid(), writes++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    out.close();
    std::error_code ec;
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
    fs::rename(tmp, to, ec);
    if (ec) fs::remove(tmp, ec);
  }
}

ProgramMemo::Entry* MemoSteps::entry(const StepVariant& v) {
  auto it = entries_.find(v);
  if (it == entries_.end()) {
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<ProgramMemo::Entry> e = memo_.load(v);
    it = entries_.emplace(v, e ? std::make_unique<ProgramMemo::Entry>(std::move(*e)) : nullptr).first;
    load_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return it->second.get();
}

const StepInfo& MemoSteps::info(const StepVariant& v) {
  const ProgramMemo::Entry* e = entry(v);
  return e ? e->info : inner_.info(v);
}

BuiltStep& MemoSteps::get(const StepVariant& v) {
  ProgramMemo::Entry* e = entry(v);
  return e ? e->step : inner_.get(v);
}

}  // namespace tpusim
