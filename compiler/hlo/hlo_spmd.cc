#include "compiler/hlo/hlo_spmd.h"

#include <algorithm>
#include <numeric>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_import_collectives.h"
#include "compiler/hlo/hlo_import_stats.h"
#include "compiler/hlo/hlo_spmd_partitioner.h"

namespace tpusim::hlo {

namespace {

// An instruction that only XLA's SPMD partitioner puts outside a manual region: a collective or a
// partition-id (a pre-partitioning module has them only inside shard_map regions, whose values are
// manual: a `{manual}` sharding, or reached from SPMDFullToShardShape before SPMDShardToFullShape).
// Computations are read callers first (callees come before their callers): a computation called
// from a manual instruction is manual throughout.
const Instruction* partitioner_made(const Module& m) {
  std::vector<char> manual_comp(m.computations.size(), 0);
  for (size_t ci = m.computations.size(); ci-- > 0;) {
    const Computation& c = m.computations[ci];
    std::vector<char> manual(c.instructions.size(), 0);
    for (size_t i = 0; i < c.instructions.size(); ++i) {
      const Instruction& in = c.instructions[i];
      const Attribute* a = in.attr("sharding");
      const std::string target = in.opcode == "custom-call" ? string_attr(m, in, "custom_call_target").value_or("") : "";
      bool man = manual_comp[ci] || (a && a->value.find("manual") != std::string::npos) || target == "SPMDFullToShardShape";
      for (int o : in.operands) man = man || manual[size_t(o)];
      if (target == "SPMDShardToFullShape") man = false;
      manual[i] = man;
      if (man)
        for (int x : in.called) manual_comp[size_t(x)] = 1;
      else if (is_collective_opcode(in.opcode) || in.opcode == "partition-id")
        return &in;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<SpmdMode> spmd_mode_named(std::string_view name) { return find_value(enum_names(SpmdMode{}), name); }

SpmdDetection spmd_detect(const Module& m, SpmdMode mode) {
  if (m.num_partitions <= 1) return {false, "num_partitions is 1: every core runs the module as written"};
  if (mode == SpmdMode::kAsWritten) return {false, "spmd: as_written: every core runs the module as written"};
  int64_t annotated = 0;
  bool fusion = false;
  for (const Computation& c : m.computations)
    for (const Instruction& in : c.instructions) {
      fusion = fusion || in.opcode == "fusion";
      if (const Attribute* a = in.attr("sharding"); a && c.is_entry && a->value.find("manual") == std::string::npos) ++annotated;
    }
  const std::string n = std::to_string(m.num_partitions);
  if (mode == SpmdMode::kPartition)
    return {true, "spmd: partition: num_partitions " + n + ", " + std::to_string(annotated) + " ENTRY instructions annotated"};
  // XLA partitions before it fuses, and names its dumps after the stage: an optimized module's
  // shapes are already one partition's (its parameters keep their sharding for the runtime).
  if (m.file.find("after_optimizations") != std::string::npos)
    return {false, "an after_optimizations dump: shapes are already one partition's (the module runs as written)"};
  if (m.file.find("after_spmd") != std::string::npos)
    return {false, "a dump after XLA's SPMD partitioner (after_spmd in its name): shapes are already one partition's "
                   "(the module runs as written)"};
  if (fusion) return {false, "the module has fusion instructions (optimized after SPMD partitioning): it runs as written"};
  if (annotated == 0)
    return {false, "num_partitions " + n + " but no sharding annotation in ENTRY: taken as already partitioned (it runs as written)"};
  if (const Instruction* in = partitioner_made(m))
    return {false, "'" + in->name + "' (" + in->opcode + ", line " + std::to_string(in->line) +
                       ") is outside a manual region, where only XLA's SPMD partitioner puts a collective or a "
                       "partition-id: taken as already partitioned (it runs as written; spmd: partition partitions it again)"};
  return {true, "num_partitions " + n + " with " + std::to_string(annotated) +
                    " ENTRY instructions annotated: a pre-partitioning module, one partition per core"};
}

SpmdResult spmd_partition(const Module& m, const SpmdOptions& o) {
  SpmdResult r;
  r.report.num_partitions = m.num_partitions;
  const SpmdDetection d = spmd_detect(m, o.mode);
  r.report.reason = d.reason;
  if (!d.pre_partitioning || m.entry < 0) return r;
  r.report.partitioned = true;
  r.module = spmd::Partitioner(m, o, r.report).run();
  return r;
}

namespace spmd {

Partitioner::Partitioner(const Module& m, const SpmdOptions& o, SpmdReport& report)
    : m_(m), c_(&m.entry_computation()), report_(report), n_(m.num_partitions), copies_(std::max<int64_t>(1, o.copies)) {}

void Partitioner::run_instructions() {
  for (const Instruction& in : c_->instructions) names_.insert(in.name);
  users_.assign(c_->instructions.size(), 0);
  for (const Instruction& in : c_->instructions)
    for (int x : in.operands) ++users_.at(size_t(x));
  vals_.resize(c_->instructions.size());
  processed_ += int64_t(c_->instructions.size());
  for (size_t i = 0; i < c_->instructions.size(); ++i) {
    const Instruction& in = c_->instructions[i];
    cur_ = &in;
    const std::optional<std::vector<Tiling>> g = given_of(in);
    ++(g ? report_.given : report_.propagated);
    vals_[i] = partition(in, g ? &*g : nullptr);
    if (!fits(vals_[i], in.shape)) {  // a malformed module (a result not of its declared shape): replicated
      size_t k = 0;
      vals_[i] = tree(in.shape, {}, k, use(vals_[i]));
    }
  }
}

Module Partitioner::run() {
  run_instructions();
  const Val& root = vals_.at(size_t(c_->root));
  return assemble(close(root.index >= 0 ? root.index : int(out_.size()) - 1));
}

Computation Partitioner::close(int root) {
  root = fold_reduce_scatters(root);
  Computation e;
  e.name = c_->name;
  e.is_entry = c_->is_entry;
  e.has_signature = c_->has_signature;
  e.params = c_->params;
  e.result = c_->result;
  e.attrs = c_->attrs;
  e.line = c_->line;
  e.column = c_->column;
  e.instructions = std::move(out_);
  out_.clear();
  e.root = root;
  for (Instruction& in : e.instructions) in.is_root = false;
  e.instructions.at(size_t(e.root)).is_root = true;
  if (e.has_signature) {  // the signature states the per-partition shapes too
    e.result = e.instructions.at(size_t(e.root)).shape;
    for (const Instruction& in : e.instructions)
      if (in.opcode == "parameter" && in.parameter_number && *in.parameter_number < int64_t(e.params.size()))
        e.params[size_t(*in.parameter_number)].second = in.shape;
  }
  for (size_t i = 0; i < e.instructions.size(); ++i) e.index[e.instructions[i].name] = int(i);
  return e;
}

Module Partitioner::assemble(Computation entry) {
  Module r;
  r.file = m_.file;
  r.name = m_.name;
  r.attrs = m_.attrs;
  r.entry_computation_layout = m_.entry_computation_layout;
  r.input_output_alias = m_.input_output_alias;
  r.replica_count = m_.replica_count;
  r.num_partitions = m_.num_partitions;
  // A computation replaced by its partitioned versions is dropped unless something still calls it as
  // written (an op the pass runs whole); the others stay. Callees come before their callers: the
  // helpers first, each version where its computation was.
  const size_t nc = m_.computations.size();
  std::vector<char> replaced(nc, 0), kept(nc, 0);
  for (int c : part_of_) replaced[size_t(c)] = 1;
  std::vector<int> stack;
  auto mark = [&](const Computation& c) {
    for (const Instruction& in : c.instructions)
      for (int x : in.called)
        if (x >= 0 && x < kPartBase && !kept[size_t(x)]) kept[size_t(x)] = 1, stack.push_back(x);
  };
  mark(entry);
  for (const Computation& p : parts_) mark(p);
  for (size_t i = 0; i < nc; ++i)
    if (!replaced[i] && int(i) != m_.entry) mark(m_.computations[i]);
  while (!stack.empty()) {
    const int c = stack.back();
    stack.pop_back();
    mark(m_.computations[size_t(c)]);
  }
  std::set<std::string> taken;
  for (const Computation& c : m_.computations) taken.insert(c.name);
  for (const Computation& h : helpers_) taken.insert(h.name);
  std::vector<int> at(nc, -1), part_at(parts_.size(), -1);
  r.computations = helpers_;
  std::vector<std::vector<size_t>> versions(nc);
  for (size_t j = 0; j < parts_.size(); ++j) versions[size_t(part_of_[j])].push_back(j);
  for (size_t i = 0; i < nc; ++i) {
    const bool keep = !replaced[i] || kept[i];
    if (int(i) == m_.entry) {
      r.entry = int(r.computations.size());
      r.computations.push_back(std::move(entry));
      continue;
    }
    if (keep) {
      at[i] = int(r.computations.size());
      r.computations.push_back(m_.computations[i]);
    }
    for (size_t v = 0; v < versions[i].size(); ++v) {
      const size_t j = versions[i][v];
      Computation& p = parts_[j];
      if (keep || v > 0) {  // the original's name is taken: name.spmd, name.spmd.1, ...
        const std::string base = p.name + ".spmd";
        p.name = base;
        for (int k = 1; taken.count(p.name); ++k) p.name = base + "." + std::to_string(k);
        taken.insert(p.name);
      }
      part_at[j] = int(r.computations.size());
      r.computations.push_back(std::move(p));
    }
  }
  for (size_t c = helpers_.size(); c < r.computations.size(); ++c)
    for (Instruction& in : r.computations[c].instructions)
      for (int& x : in.called) x = x < 0 ? -x - 1 : x >= kPartBase ? part_at.at(size_t(x - kPartBase)) : at.at(size_t(x));
  for (size_t i = 0; i < r.computations.size(); ++i) r.index[r.computations[i].name] = int(i);
  return r;
}

std::optional<std::vector<Tiling>> Partitioner::given_of(const Instruction& in) {
  const std::optional<Sharding> sh = sharding_attr(m_, in);
  if (!sh) return std::nullopt;
  const Attribute* a = in.attr("sharding");
  const SourcePos at{&m_.file, a->line, a->column, in.name};
  std::vector<const Shape*> leaves;
  std::vector<const Shape*> stack{&in.shape};
  while (!stack.empty()) {  // the array leaves in order (tuple shardings list them flattened)
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->is_tuple())
      for (size_t i = s->tuple.size(); i-- > 0;) stack.push_back(&s->tuple[i]);
    else
      leaves.push_back(s);
  }
  std::vector<const Sharding*> parts;
  if (sh->kind == Sharding::Kind::kTuple) {
    for (const Sharding& e : sh->elements) parts.push_back(&e);
    if (parts.size() != leaves.size())
      throw_hlo_error(at, a->value, "has " + std::to_string(parts.size()) + " elements for the " + std::to_string(leaves.size()) +
                                        " array leaves of " + in.shape.to_string() + "; expected one sharding per leaf");
  } else {
    parts.assign(leaves.size(), &*sh);
  }
  std::vector<Tiling> r;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Sharding& s = *parts[i];
    const size_t rank = leaves[i]->dims.size();
    switch (s.kind) {
      case Sharding::Kind::kReplicated: r.push_back(replicated(rank, n_)); break;
      case Sharding::Kind::kManual: r.push_back(manual(rank)); break;
      case Sharding::Kind::kMaximal:
        if (s.device < 0 || s.device >= n_)
          throw_hlo_error(at, "device=" + std::to_string(s.device), "is not a partition of num_partitions " + std::to_string(n_) +
                                                                       "; expected a device in 0.." + std::to_string(n_ - 1));
        note(in, "maximal sharding (device " + std::to_string(s.device) + ") as replicated: the device runs the whole op, "
                 "as here; the others would idle rather than compute it (same step time)");
        r.push_back(replicated(rank, n_));
        break;
      case Sharding::Kind::kTiled: {
        const size_t nt = s.tile_dims.size();
        const bool subgroup = s.raw.find("last_tile_dims") != std::string::npos;
        if (subgroup && s.raw.find("manual") != std::string::npos) {
          note(in, "partially manual sharding (last_tile_dims={manual...}) is not partitioned: taken as replicated");
          r.push_back(replicated(rank, n_));
          break;
        }
        const bool fits = subgroup ? nt > rank : s.last_tile_dim_replicate ? nt == rank + 1 : nt == rank;
        if (!fits)
          throw_hlo_error(at, a->value, "has " + std::to_string(nt) + " tile dimensions for the rank-" + std::to_string(rank) +
                                            " shape " + leaves[i]->to_string() + "; expected " + std::to_string(rank) +
                                            " (one more with last_tile_dim_replicate)");
        std::vector<char> seen(size_t(n_), 0);
        for (int64_t dev : s.devices) {
          if (dev < 0 || dev >= n_ || seen[size_t(dev)])
            throw_hlo_error(at, a->value, "lists device " + std::to_string(dev) + (dev >= 0 && dev < n_ ? " twice" : "") +
                                              "; expected each of the num_partitions " + std::to_string(n_) + " devices once");
          seen[size_t(dev)] = 1;
        }
        if (int64_t(s.devices.size()) != n_)
          throw_hlo_error(at, a->value, "assigns " + std::to_string(s.devices.size()) + " devices; expected the num_partitions " +
                                            std::to_string(n_) + " devices, each once");
        Tiling t;
        t.tiles.assign(s.tile_dims.begin(), s.tile_dims.begin() + int64_t(rank));
        t.rep = std::accumulate(s.tile_dims.begin() + int64_t(rank), s.tile_dims.end(), int64_t(1), std::multiplies<>());
        t.devices = s.devices;
        r.push_back(std::move(t));
        break;
      }
      default:
        note(in, "sharding {" + s.raw.substr(0, 60) + "} is not a form the SPMD pass reads: taken as replicated");
        r.push_back(replicated(rank, n_));
    }
  }
  return r;
}

Attribute Partitioner::attr(const std::string& name, const std::string& value) const {
  return Attribute{name, value, cur_ ? cur_->line : 0, cur_ ? cur_->column : 0};
}

int Partitioner::emit_self(const Instruction& in, const std::vector<int>& operands, const Shape& shape) {
  Instruction x = in;
  x.shape = shape;
  x.operands = operands;
  x.operand_names.clear();
  for (int o : operands) x.operand_names.push_back(out_.at(size_t(o)).name);
  x.operand_shapes.assign(operands.size(), std::nullopt);
  x.operand_positions.resize(operands.size(), {in.line, in.column});
  x.control_predecessors.clear();  // ordering only: no cost
  x.is_root = false;
  out_.push_back(std::move(x));
  return int(out_.size()) - 1;
}

int Partitioner::emit(const std::string& opcode, const std::string& suffix, const Shape& shape, const std::vector<int>& operands,
                      std::vector<Attribute> attrs, std::vector<int> called) {
  Instruction x;
  const std::string base = (operands.empty() ? cur_->name : out_.at(size_t(operands[0])).name) + ".spmd_" + suffix;
  x.name = base;
  for (int k = 1; names_.count(x.name); ++k) x.name = base + "." + std::to_string(k);
  names_.insert(x.name);
  x.opcode = opcode;
  x.shape = shape;
  x.operands = operands;
  for (int o : operands) x.operand_names.push_back(out_.at(size_t(o)).name);
  x.operand_shapes.assign(operands.size(), std::nullopt);
  x.operand_positions.assign(operands.size(), {cur_->line, cur_->column});
  x.attrs = std::move(attrs);
  x.called = std::move(called);
  x.line = cur_->line;
  x.column = cur_->column;
  out_.push_back(std::move(x));
  return int(out_.size()) - 1;
}

std::string Partitioner::groups_text(const std::vector<std::vector<int64_t>>& groups) const {
  std::string s = "{";
  bool first_group = true;
  for (int64_t k = 0; k < copies_; ++k)
    for (const std::vector<int64_t>& g : groups) {
      s += first_group ? "{" : ",{";
      first_group = false;
      for (size_t i = 0; i < g.size(); ++i) {
        if (i) s += ',';  // appended apart: GCC 12's false -Wrestrict
        s += std::to_string(k * n_ + g[i]);
      }
      s += "}";
    }
  return s + "}";
}

void Partitioner::count(const std::string& opcode, const Shape& shape) {
  SpmdCollectiveStats& c = report_.collectives[opcode];
  ++c.count;
  c.result_bytes = sat_add(c.result_bytes, shape_bytes(shape));
}

void Partitioner::note(const Instruction& in, std::string reason) {
  report_.unmodelled.push_back({in.name, in.opcode, in.line, std::move(reason)});
}

int Partitioner::add_computation(ElementType type) {
  if (auto it = add_.find(type); it != add_.end()) return it->second;
  Computation c;
  const std::string base = "spmd_add." + std::string(element_type_name(type));
  c.name = base;
  for (int k = 1; m_.find(c.name); ++k) c.name = base + "." + std::to_string(k);
  Shape s;
  s.type = type;
  for (int p = 0; p < 2; ++p) {
    Instruction x;
    x.name = p ? "y" : "x";
    x.opcode = "parameter";
    x.shape = s;
    x.parameter_number = p;
    c.instructions.push_back(x);
  }
  Instruction sum;
  sum.name = "sum";
  sum.opcode = "add";
  sum.shape = s;
  sum.operands = {0, 1};
  sum.operand_names = {"x", "y"};
  sum.operand_shapes.assign(2, std::nullopt);
  sum.operand_positions.assign(2, {0, 0});
  sum.is_root = true;
  c.instructions.push_back(sum);
  c.root = 2;
  for (size_t i = 0; i < c.instructions.size(); ++i) c.index[c.instructions[i].name] = int(i);
  c.params = {{"x", s}, {"y", s}};
  c.result = s;
  helpers_.push_back(std::move(c));
  return add_[type] = -int(helpers_.size());
}

int Partitioner::all_reduce(int x, const Tiling& t, const std::vector<int>& axes, int to_apply, const std::string& suffix) {
  const Shape s = out_.at(size_t(x)).shape;
  count("all-reduce", s);
  const std::string& name = to_apply < 0 ? helpers_.at(size_t(-to_apply - 1)).name : m_.computations.at(size_t(to_apply)).name;
  const int r = emit("all-reduce", suffix, s, {x}, {attr("replica_groups", groups_text(groups_along(t, axes))), attr("to_apply", name)},
                     {to_apply});
  all_reduces_[r] = {t, axes};
  return r;
}

int Partitioner::reshard(int x, const Tiling& from_, const Tiling& to, const Shape& global) {
  if (from_.manual || to.manual || from_ == to || global.is_tuple()) return x;
  // Tilings of another rank than the value (a body whose result is not the loop's shape): left as it
  // is, for the importer to stand in.
  if (from_.tiles.size() != global.dims.size() || to.tiles.size() != global.dims.size()) return x;
  Tiling from = from_;
  Shape cur = out_.at(size_t(x)).shape;
  const size_t r = global.dims.size();
  if (from.tiles == to.tiles) {
    // Only the devices' order differs: each device fetches its new tile from a holder of it.
    std::vector<int64_t> tile_from(static_cast<size_t>(n_)), tile_to(static_cast<size_t>(n_));
    for (size_t p = 0; p < from.devices.size(); ++p) tile_from[size_t(from.devices[p])] = int64_t(p) / from.rep;
    for (size_t p = 0; p < to.devices.size(); ++p) tile_to[size_t(to.devices[p])] = int64_t(p) / to.rep;
    std::string pairs;
    for (int64_t k = 0; k < copies_; ++k)
      for (int64_t d = 0; d < n_; ++d) {
        if (tile_from[size_t(d)] == tile_to[size_t(d)]) continue;
        int64_t src = 0;
        while (tile_from[size_t(src)] != tile_to[size_t(d)]) ++src;
        pairs += (pairs.empty() ? "{" : ",{") + std::to_string(k * n_ + src) + "," + std::to_string(k * n_ + d) + "}";
      }
    if (pairs.empty()) return x;
    count("collective-permute", cur);
    return emit("collective-permute", "collective-permute", cur, {x}, {attr("source_target_pairs", "{" + pairs + "}")});
  }
  // A tile moving from dimension i to j: all-to-all (dimensions exact multiples, else gather and slice).
  for (size_t i = 0; i < r; ++i) {
    const int64_t f = from.tiles[i];
    if (f == 1 || to.tiles[i] != 1 || global.dims[i] % f) continue;
    for (size_t j = 0; j < r; ++j) {
      if (j == i || from.tiles[j] != 1 || to.tiles[j] != f || global.dims[j] % f) continue;
      count("all-to-all", cur);
      x = emit("all-to-all", "all-to-all", cur, {x},
               {attr("replica_groups", groups_text(groups_along(from, {int(i)}))), attr("dimensions", "{" + std::to_string(j) + "}")});
      cur.dims[i] *= f;
      cur.dims[j] /= f;
      x = emit("reshape", "reshape", cur, {x});
      std::vector<int> map(r);
      std::iota(map.begin(), map.end(), 0);
      map[i] = int(j);
      std::vector<int64_t> sizes = from.tiles;
      sizes[i] = 1;
      sizes[j] = f;
      from = *remap(from, map, sizes);
      break;
    }
  }
  // Tiles the target does not keep: all-gather along that dimension.
  for (size_t i = 0; i < r; ++i) {
    const int64_t f = from.tiles[i];
    if (f == 1 || to.tiles[i] % f == 0) continue;
    Shape g = cur;
    g.dims[i] *= f;
    count("all-gather", g);
    x = emit("all-gather", "all-gather", g, {x},
             {attr("replica_groups", groups_text(groups_along(from, {int(i)}))), attr("dimensions", "{" + std::to_string(i) + "}")});
    cur = g;
    from = untile(from, {int(i)});
  }
  // What remains is finer tiling: each partition slices its own tile out (no communication), and
  // the gathered padding of ceil-divided tiles is dropped.
  const Shape target = local_shape(global, to);
  if (cur.dims != target.dims) {
    std::string sl = "{";
    for (size_t i = 0; i < r; ++i) sl += (i ? ", [0:" : "[0:") + std::to_string(target.dims[i]) + "]";
    const bool finer = from.tile_count() < to.tile_count();
    if (finer) ++report_.local_slices;
    x = emit("slice", "slice", target, {x}, {attr("slice", sl + "}")});
    slices_[x] = {to, finer};
  }
  return x;
}

int Partitioner::reshard(const Val& v, const Tiling& to, const Shape& global) {
  if (v.deferred < 0) return reshard(v.index, v.t, to, global);
  const Instruction& orig = c_->instructions.at(size_t(v.deferred));
  const Instruction* user = cur_;
  cur_ = &orig;
  const std::vector<Tiling> g{to.manual ? v.t : to};
  const Val built = orig.opcode == "iota" ? source(orig, &g) : broadcast(orig, &g);
  cur_ = user;
  return built.index;
}

int Partitioner::use(const Val& v) {
  return v.deferred < 0 ? v.index : reshard(v, v.t, c_->instructions.at(size_t(v.deferred)).shape);
}

size_t Partitioner::leaf_count(const Val& v) {
  if (!v.tuple) return 1;
  size_t n = 0;
  for (const Val& e : v.elems) n += leaf_count(e);
  return n;
}

Val Partitioner::tree(const Shape& s, const std::vector<Tiling>& leaves, size_t& k, int index) const {
  if (!s.is_tuple()) return leaf(index, k < leaves.size() ? leaves[k++] : replicated(s.dims.size(), n_));
  Val v;
  v.index = index;
  v.tuple = true;
  for (const Shape& e : s.tuple) v.elems.push_back(tree(e, leaves, k, -1));
  return v;
}

Shape Partitioner::local(const Shape& s, const Val& v) const {
  if (!s.is_tuple()) return local_shape(s, v.t);
  Shape r = s;
  for (size_t i = 0; i < r.tuple.size() && i < v.elems.size(); ++i) r.tuple[i] = local(s.tuple[i], v.elems[i]);
  return r;
}

// The operand instruction's own shape, which its value's tilings follow (an older dump's written
// operand shape may differ from it in a malformed module).
const Shape& Partitioner::operand_global(const Instruction& in, size_t i) const {
  return c_->instructions.at(size_t(in.operands.at(i))).shape;
}

int Partitioner::fold_reduce_scatters(int root) {
  if (all_reduces_.empty() || slices_.empty()) return root;
  std::vector<int> users(out_.size(), 0), user(out_.size(), -1);
  for (size_t i = 0; i < out_.size(); ++i)
    for (int o : out_[i].operands) ++users[size_t(o)], user[size_t(o)] = int(i);
  ++users.at(size_t(root));
  std::vector<int> into(out_.size(), -1);  // a folded slice: the reduce-scatter that replaces it
  for (const auto& [a, how] : all_reduces_) {
    const int s = user[size_t(a)];
    const auto sl = slices_.find(s);
    if (users[size_t(a)] != 1 || sl == slices_.end()) continue;
    const Shape& whole = out_[size_t(a)].shape;
    const Shape& part = out_[size_t(s)].shape;
    if (whole.is_tuple() || whole.dims.size() != part.dims.size()) continue;
    int d = -1;  // the one dimension the slice cuts
    bool one = true;
    for (size_t i = 0; i < whole.dims.size(); ++i) {
      if (whole.dims[i] == part.dims[i]) continue;
      one = one && d < 0;
      d = int(i);
    }
    const std::vector<std::vector<int64_t>> groups = groups_along(how.first, how.second);
    const Tiling& to = sl->second.first;
    if (!one || d < 0 || groups.empty() || to.tiles.size() != whole.dims.size() ||
        whole.dims[size_t(d)] != part.dims[size_t(d)] * int64_t(groups[0].size()) || to.tiles[size_t(d)] != int64_t(groups[0].size()))
      continue;
    // A reduce-scatter leaves chunk p of the dimension on the group's p-th device: the slice must keep that one.
    int64_t stride = to.rep;
    for (size_t i = size_t(d) + 1; i < to.tiles.size(); ++i) stride *= to.tiles[i];
    std::vector<int64_t> chunk(size_t(n_), -1);
    for (size_t q = 0; q < to.devices.size(); ++q) chunk[size_t(to.devices[q])] = (int64_t(q) / stride) % to.tiles[size_t(d)];
    bool placed = true;
    for (const std::vector<int64_t>& g : groups)
      for (size_t p = 0; p < g.size(); ++p) placed = placed && chunk[size_t(g[p])] == int64_t(p);
    if (!placed) continue;
    SpmdCollectiveStats& ar = report_.collectives["all-reduce"];
    --ar.count;
    ar.result_bytes -= std::min(ar.result_bytes, shape_bytes(whole));
    if (ar.count == 0) report_.collectives.erase("all-reduce");
    count("reduce-scatter", part);
    if (sl->second.second) --report_.local_slices;
    Instruction& rs = out_[size_t(a)];
    rs.opcode = "reduce-scatter";
    rs.shape = part;
    rs.attrs.push_back(Attribute{"dimensions", "{" + std::to_string(d) + "}", rs.line, rs.column});
    const size_t at = rs.name.rfind(".spmd_all-reduce");
    if (std::string name = rs.name; at != std::string::npos) {
      name.replace(at, 16, ".spmd_reduce-scatter");
      if (names_.insert(name).second) rs.name = name;
    }
    into[size_t(s)] = a;
  }
  all_reduces_.clear();
  slices_.clear();
  if (std::all_of(into.begin(), into.end(), [](int x) { return x < 0; })) return root;
  std::vector<int> at(out_.size());
  std::vector<Instruction> kept;
  for (size_t i = 0; i < out_.size(); ++i) {
    if (into[i] >= 0) {
      at[i] = at[size_t(into[i])];
      continue;
    }
    at[i] = int(kept.size());
    kept.push_back(std::move(out_[i]));
  }
  for (Instruction& x : kept)
    for (size_t j = 0; j < x.operands.size(); ++j) {
      x.operands[j] = at[size_t(x.operands[j])];
      x.operand_names[j] = kept[size_t(x.operands[j])].name;
    }
  out_ = std::move(kept);
  return at[size_t(root)];
}

Val Partitioner::finish(Val v, const Instruction& in, const std::vector<Tiling>* given) {
  if (!given || in.shape.is_tuple() || given->empty() || v.tuple) return v;
  const Tiling& g = given->front();
  if (g.manual || v.t.manual || g == v.t) return v;
  v.index = reshard(v.index, v.t, g, in.shape);
  v.t = g;
  return v;
}

}  // namespace spmd
}  // namespace tpusim::hlo
