#include "workloads/analysis/advisor.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "base/config_error.h"
#include "models/families.h"
#include "sim/base/sim_error.h"
#include "workloads/loop/framework.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

// padding, precision (by name: the ranking's ties keep this order), batch, remat policy, mesh
using Key = std::tuple<std::string, std::string, double, std::string, std::string>;

// A parallel layout: data parallel or FSDP over the devices `tensor` leaves.
struct Layout {
  Sharding sharding = Sharding::kDataParallel;
  uint32_t tensor = 1;
  bool operator==(const Layout&) const = default;
};

// The workload's own layout: its sharding, and the tensor axis its mesh gives (1 without one).
Layout layout_of(const TrainingWorkload& t) { return {t.sharding, t.mesh.tensor > 1 ? uint32_t(t.mesh.tensor) : 1u}; }

std::string mesh_name(const Layout& l, uint32_t devices) {
  const std::string rest = fmt::format("{} {}", l.sharding == Sharding::kFsdp ? "fsdp" : "data", devices / l.tensor);
  return l.tensor > 1 ? fmt::format("{} x tensor {}", rest, l.tensor) : rest;
}

// The remat policies the search tries for a Llama-family model, from the one that keeps most to
// the one that keeps least in HBM.
constexpr models::RematPolicy kRematOrder[] = {
    models::RematPolicy::kNone,          models::RematPolicy::kMinimal,          models::RematPolicy::kSaveDotExceptMlp,
    models::RematPolicy::kSaveQkvProj,   models::RematPolicy::kQkvProjOffloaded, models::RematPolicy::kFull};

// The ranking: settings that fit first, then shorter time-to-train.
bool ranks_before(const AdviceRow& a, const AdviceRow& b) {
  if (a.fits != b.fits) return a.fits;
  return a.total_time_s < b.total_time_s;
}

class Search {
 public:
  Search(const HwConfig& hw, const WorkloadConfig& w, const AdviceOptions& o) : hw_(hw), w_(w), o_(o) {}

  const AdviceRow& run(const data::PaddingSpec& padding, Precision precision, double batch,
                       models::RematPolicy remat, const Layout& layout) {
    const std::string mesh = mesh_name(layout, slice_devices(hw_));
    const Key key{padding.to_string(), enum_name(precision), batch, enum_name(remat), mesh};
    if (auto it = rows_.find(key); it != rows_.end()) return it->second;
    AdviceRow r;
    r.padding = padding;
    r.precision = precision;
    r.batch = batch;
    r.remat = remat;
    r.sharding = layout.sharding;
    r.tensor = layout.tensor;
    r.mesh = mesh;
    r.is_base = padding == w_.training().padding && precision == w_.training().precision &&
                batch == w_.training().per_device_batch_size && remat == effective_remat_policy(w_.training()) &&
                layout == layout_of(w_.training());
    if (o_.on_run)
      o_.on_run(fmt::format("padding {}, precision {}, batch {}, remat {}, mesh {}", padding.to_string(), enum_name(precision),
                            batch, enum_name(remat), mesh));
    try {
      const TrainingRunResult t = run_training(hw_, setting(r), options());
      r.total_time_s = t.total_time_s;
      r.steady_step_time_s = t.steady_step_time_s;
      r.compile_time_s = t.compile_time_s;
      r.examples_per_s = t.examples_per_s;
      r.compiles = t.compiles;
      r.peak_hbm_bytes = t.peak_hbm_bytes;
      r.global_batch = t.global_batch;
    } catch (const SimError& e) {  // out of HBM / host RAM: the setting does not fit
      r.fits = false;
      r.error = e.what();
    } catch (const ConfigError& e) {  // e.g. a batch larger than the dataset allows
      r.fits = false;
      r.error = e.what();
    }
    return rows_.emplace(key, std::move(r)).first->second;
  }

  TrainingRunOptions options() const {
    TrainingRunOptions opts;
    opts.engine = "analytical";
    opts.tables = o_.tables;
    opts.datasets_dir = o_.datasets_dir;
    opts.limits = o_.limits;
    return opts;
  }

  // A run of `r`'s setting, then a second run with the same persistent compile cache (a scratch
  // directory, removed afterwards): the second run's total time.
  double rerun_with_cache(const AdviceRow& r) const {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / fmt::format("tpusim-advise-cache-{}", ::getpid());
    WorkloadConfig w = setting(r);
    w.training().compile_cache.persistent_dir = dir.string();
    if (o_.on_run) o_.on_run("the recommended setting, run twice with a persistent compile cache");
    double s = -1;
    try {
      run_training(hw_, w, options());
      s = run_training(hw_, w, options()).total_time_s;
    } catch (const std::exception&) {  // the first run fitted; a failure here only loses the note
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return s;
  }

  // The workload with `r`'s setting. A policy other than the workload's own custom one replaces
  // its remat settings (fsdp_grad_ckpt is remat_policy full).
  WorkloadConfig setting(const AdviceRow& r) const {
    WorkloadConfig w = w_;
    TrainingWorkload& t = w.training();
    t.padding = r.padding;
    t.precision = r.precision;
    t.per_device_batch_size = r.batch;
    if (r.remat != effective_remat_policy(w_.training())) {
      t.remat_policy = r.remat;
      t.remat_tensors = {};
      t.fsdp_grad_ckpt = false;
    }
    const Layout layout{r.sharding, r.tensor};
    if (!(layout == layout_of(w_.training()))) {  // the mesh MaxText's ici_* settings would give
      if (t.fsdp_grad_ckpt) t.remat_policy = models::RematPolicy::kFull;
      t.fsdp_grad_ckpt = false;
      t.sharding = r.sharding;
      t.mesh = {};
      if (r.tensor > 1) {
        (r.sharding == Sharding::kFsdp ? t.mesh.fsdp : t.mesh.data) = -1;
        t.mesh.tensor = int32_t(r.tensor);
      }
    }
    return w;
  }

  std::vector<AdviceRow> ranked() const {
    std::vector<AdviceRow> v;
    for (const auto& [k, r] : rows_) v.push_back(r);
    std::stable_sort(v.begin(), v.end(), ranks_before);
    return v;
  }

 private:
  const HwConfig& hw_;
  const WorkloadConfig& w_;
  const AdviceOptions& o_;
  std::map<Key, AdviceRow> rows_;
};

// The better of two rows (ties keep the first).
const AdviceRow* better(const AdviceRow* a, const AdviceRow* b) { return ranks_before(*b, *a) ? b : a; }

std::string gib(uint64_t b) { return fmt::format("{:.2f} GiB", double(b) / (1024.0 * 1024.0 * 1024.0)); }

}  // namespace

std::vector<AdviceRow> advise(const HwConfig& hw, const WorkloadConfig& w, const AdviceOptions& o) {
  if (w.kind() != WorkloadKind::kTraining) throw ConfigError({"", "kind", 0, enum_name(w.kind()), "tpusim advise needs a workload of kind: training", ""});
  Search s(hw, w, o);
  const TrainingWorkload& t = w.training();
  const models::RematPolicy remat0 = effective_remat_policy(t);
  const Layout layout0 = layout_of(t);
  const AdviceRow* best = &s.run(t.padding, t.precision, t.per_device_batch_size, remat0, layout0);
  if (image_tokens(t) == 0)  // an image task has no padding to choose: one sequence fixed by the image
    for (const data::PaddingSpec& p : {data::PaddingSpec::max_length(), data::PaddingSpec::longest(), data::PaddingSpec::multiple_of(8),
                                       data::PaddingSpec::multiple_of(16), data::PaddingSpec::multiple_of(32), data::PaddingSpec::multiple_of(64)})
      best = better(best, &s.run(p, t.precision, t.per_device_batch_size, remat0, layout0));
  const data::PaddingSpec padding = best->padding;
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kMixedBf16})
    best = better(best, &s.run(padding, p, t.per_device_batch_size, remat0, layout0));
  const Precision precision = best->precision;
  const models::Family* family = model_family(t);
  const bool named_policies = family && models::llama_like(family->id);
  if (named_policies)
    for (models::RematPolicy p : kRematOrder)
      best = better(best, &s.run(padding, precision, t.per_device_batch_size, p, layout0));
  const models::RematPolicy remat = best->remat;
  // The meshes (Llama family: its layers carry the tensor splits): FSDP or data parallel over what a
  // tensor axis leaves; the tensor sizes that divide the devices (chips on a megacore) and the
  // key/value heads. A tensor axis over every device is one mesh, tried once (as fsdp 1 x tensor T).
  if (named_policies && o.meshes) {
    const uint32_t devices = slice_devices(hw);
    const models::ModelArch arch = resolve_model_arch(t);
    const int64_t kv = arch.kv_heads > 0 ? arch.kv_heads : arch.heads;
    for (Sharding sh : {Sharding::kFsdp, Sharding::kDataParallel})
      for (uint32_t tp : {1u, 2u, 4u, 8u}) {
        if (tp > 1 && (devices % tp != 0 || kv % tp != 0)) continue;
        if (sh == Sharding::kDataParallel && tp == devices) continue;  // the same mesh as fsdp 1 x tensor T
        best = better(best, &s.run(padding, precision, t.per_device_batch_size, remat, {sh, tp}));
      }
  }
  const Layout layout{best->sharding, best->tensor};
  for (uint32_t b : o.batches) {
    const AdviceRow* r = &s.run(padding, precision, b, remat, layout);
    // A batch that does not fit keeping as much: the policies that keep less (Llama family).
    const auto* p = std::find(std::begin(kRematOrder), std::end(kRematOrder), remat);
    while (named_policies && !r->fits && p != std::end(kRematOrder) && ++p != std::end(kRematOrder))
      r = &s.run(padding, precision, b, *p, layout);
    if (!r->fits) break;  // larger batches do not fit either
    best = better(best, r);
  }
  std::vector<AdviceRow> rows = s.ranked();
  AdviceRow& top = rows.front();
  if (top.fits && t.compile_cache.persistent_dir.empty() && top.compile_time_s >= kCompileDominates * top.total_time_s)
    top.rerun_with_cache_s = s.rerun_with_cache(top);
  return rows;
}

std::string format_advice(const std::vector<AdviceRow>& rows, const WorkloadConfig& w) {
  std::string o = fmt::format("{:>4}  {:<16} {:<11} {:>5} {:>6} {:<18} {:<18}  {:>13} {:>10} {:>9} {:>13} {:>10}\n", "rank",
                              "padding", "precision", "batch", "global", "remat", "mesh", "time to train", "steady",
                              "compiles", "compile time", "peak HBM");
  int rank = 0;
  for (const AdviceRow& r : rows) {
    if (!r.fits) {
      o += fmt::format("{:>4}  {:<16} {:<11} {:>5} {:>6} {:<18} {:<18}  does not fit: {}\n", "-", r.padding.to_string(),
                       enum_name(r.precision), r.batch, "", enum_name(r.remat), r.mesh, r.error.substr(0, 90));
      continue;
    }
    o += fmt::format("{:>4}  {:<16} {:<11} {:>5} {:>6} {:<18} {:<18}  {:>11.1f} s {:>7.1f} ms {:>9} {:>11.1f} s {:>10}{}\n",
                     ++rank, r.padding.to_string(), enum_name(r.precision), r.batch, r.global_batch, enum_name(r.remat),
                     r.mesh, r.total_time_s, r.steady_step_time_s * 1e3, r.compiles, r.compile_time_s,
                     gib(r.peak_hbm_bytes), r.is_base ? "  (as given)" : "");
  }
  const AdviceRow* base = nullptr;
  for (const AdviceRow& r : rows)
    if (r.is_base) base = &r;
  if (!rows.empty() && rows.front().fits) {
    const AdviceRow& b = rows.front();
    o += fmt::format("\nrecommendation: padding {}, precision {}, per_device_batch_size {}, remat_policy {}, "
                     "sharding {}{}",
                     b.padding.to_string(), enum_name(b.precision), b.batch, enum_name(b.remat), enum_name(b.sharding),
                     b.tensor > 1 ? fmt::format(", mesh {{{}: -1, tensor: {}}}",
                                                b.sharding == Sharding::kFsdp ? "fsdp" : "data", b.tensor)
                                  : std::string());
    if (base && base->fits && !b.is_base)
      o += fmt::format(": {:.1f} s to train instead of {:.1f} s ({:.1f}x)", b.total_time_s, base->total_time_s,
                       base->total_time_s / b.total_time_s);
    o += ".\n";
    if (b.batch != w.training().per_device_batch_size)
      o += "note: a different batch size changes the optimization (global batch, steps per epoch); scale the "
           "learning rate and check convergence before adopting it.\n";
    if (b.rerun_with_cache_s >= 0)
      o += fmt::format("note: compilation is {:.0f}% of this run ({} compiles, {:.1f} s on the busiest process). "
                       "With a persistent compile cache (compile_cache.persistent_dir; XLA_PERSISTENT_CACHE_PATH "
                       "in torch_xla) every later run of the same setting loads its programs instead: {:.1f} s to "
                       "train instead of {:.1f} s (simulated second run).\n",
                       100 * b.compile_time_s / b.total_time_s, b.compiles, b.compile_time_s, b.rerun_with_cache_s,
                       b.total_time_s);
    if (b.precision != w.training().precision && b.precision == Precision::kBf16)
      o += "note: bf16 (XLA_USE_BF16) also keeps weights and optimizer state in bf16; mixed_bf16 keeps f32 master "
           "weights if accuracy suffers.\n";
  }
  return o;
}

}  // namespace tpusim
