#include "compiler/hlo/hlo_attrs.h"

#include "compiler/hlo/hlo_limits.h"
#include "compiler/hlo/hlo_scanner.h"

namespace tpusim::hlo {
namespace {

Scanner reader(const Module& m, const Instruction& in, const Attribute& a) {
  Scanner s(a.value, &m.file, a.line, a.column);
  s.instruction = in.name;
  return s;
}

void expect_end(Scanner& s, std::string_view what) {
  s.skip_space();
  if (!s.eof()) s.fail("follows the value; expected the end of " + std::string(what));
}

std::vector<int64_t> int_list(Scanner& s, std::string_view what) {
  std::vector<int64_t> r;
  s.expect('{', "'{' opening " + std::string(what));
  if (s.accept('}')) return r;
  do r.push_back(s.integer(what));
  while (s.accept(','));
  s.expect('}', "',' or '}' in " + std::string(what));
  return r;
}

// "1x2x3" or "1_1x0_0" (each dim: `parts` '_'-separated integers, at least `min_parts`).
std::vector<std::vector<int64_t>> x_separated(Scanner& s, int min_parts, int max_parts, std::string_view what) {
  std::vector<std::vector<int64_t>> dims;
  do {
    std::vector<int64_t> d;
    do d.push_back(s.integer(what));
    while (int(d.size()) < max_parts && s.peek() == '_' && (s.accept('_'), true));
    if (int(d.size()) < min_parts) s.fail("is not what comes here; expected '_' and the next number of " + std::string(what));
    if (dims.size() >= kMaxRank) s.fail("is one dimension too many for " + std::string(what));
    dims.push_back(std::move(d));
  } while (s.peek() == 'x' && (s.accept('x'), true));
  return dims;
}

// `at`: where the dimensions were written.
int64_t checked_product(const SourcePos& at, const std::vector<int64_t>& dims, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxDeviceList / d))
      throw_hlo_error(at, std::to_string(d), "makes " + std::string(what) + " hold more than 2^20 devices (the parser's limit, docs/hlo.md)");
    n *= d;
  }
  return n;
}

// `<=[dims]T(perm)` after the shape list: iota(prod(dims)) reshaped to dims, transposed by perm, flattened.
std::vector<int64_t> iota_devices(Scanner& s, std::string_view what) {
  s.expect('<', "'<=' and the iota's dimensions");
  s.expect('=', "'<=' and the iota's dimensions");
  s.expect('[', "'[' opening the iota's dimensions");
  const SourcePos at = s.here();
  std::vector<int64_t> dims;
  do dims.push_back(s.integer("a dimension"));
  while (s.accept(','));
  s.expect(']', "',' or ']' in the iota's dimensions");
  const int64_t n = checked_product(at, dims, what);
  std::vector<int64_t> perm(dims.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
  if (s.peek() == 'T') {
    s.accept('T');
    s.expect('(', "'(' opening the transpose permutation");
    perm.clear();
    do perm.push_back(s.integer("a dimension of the permutation"));
    while (s.accept(','));
    s.expect(')', "',' or ')' in the permutation");
    std::vector<bool> seen(dims.size(), false);
    if (perm.size() != dims.size()) s.fail_value("T(...)", "has " + std::to_string(perm.size()) + " entries for " + std::to_string(dims.size()) + " dimensions; expected a permutation");
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(dims.size()) || seen[size_t(p)]) s.fail_value(std::to_string(p), "is not a permutation of 0.." + std::to_string(dims.size() - 1));
      seen[size_t(p)] = true;
    }
  }
  // Transposed dims t[i] = dims[perm[i]]; walk the output in row-major order, map back to the source.
  std::vector<int64_t> tdims(dims.size()), src_stride(dims.size()), out;
  int64_t st = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    src_stride[i] = st;
    st *= dims[i];
  }
  for (size_t i = 0; i < dims.size(); ++i) tdims[i] = dims[size_t(perm[i])];
  out.reserve(size_t(n));
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t src = 0;
    for (size_t i = 0; i < dims.size(); ++i) src += idx[i] * src_stride[size_t(perm[i])];
    out.push_back(src);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < tdims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

const Attribute* find(const Instruction& in, std::string_view name) { return in.attr(name); }

}  // namespace

std::optional<std::vector<int64_t>> int_list_attr(const Module& m, const Instruction& in, std::string_view name) {
  const Attribute* a = find(in, name);
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  auto r = int_list(s, name);
  expect_end(s, name);
  return r;
}

std::optional<int64_t> int_attr(const Module& m, const Instruction& in, std::string_view name) {
  const Attribute* a = find(in, name);
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  const int64_t v = s.integer(name);
  expect_end(s, name);
  return v;
}

std::optional<std::string> string_attr(const Module& m, const Instruction& in, std::string_view name) {
  const Attribute* a = find(in, name);
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  s.skip_space();
  std::string v = s.peek() == '"' ? s.quoted(name) : s.name(name);
  expect_end(s, name);
  return v;
}

std::optional<std::vector<SliceDim>> slice_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "slice");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  std::vector<SliceDim> r;
  s.expect('{', "'{' opening slice={[start:limit:stride], ...}");
  if (!s.accept('}')) {
    do {
      s.expect('[', "'[' opening [start:limit] or [start:limit:stride]");
      SliceDim d;
      d.start = s.integer("the slice's start");
      s.expect(':', "':' and the slice's limit");
      d.limit = s.integer("the slice's limit");
      if (s.accept(':')) d.stride = s.integer("the slice's stride");
      s.expect(']', "']' closing the slice dimension");
      if (r.size() >= kMaxRank) s.fail("is one dimension too many for slice");
      r.push_back(d);
    } while (s.accept(','));
    s.expect('}', "',' or '}' in slice");
  }
  expect_end(s, "slice");
  return r;
}

std::optional<std::vector<PadDim>> padding_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "padding");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  std::vector<PadDim> r;
  for (const auto& d : x_separated(s, 2, 3, "padding (low_high[_interior]x...)"))
    r.push_back({d[0], d[1], d.size() > 2 ? d[2] : 0});
  expect_end(s, "padding");
  return r;
}

std::optional<std::vector<WindowDim>> window_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "window");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  s.expect('{', "'{' opening window={size=... stride=... pad=...}");
  std::vector<WindowDim> r;
  bool have_size = false;
  while (!s.accept('}')) {
    s.skip_space();
    const SourcePos at = s.here();
    const std::string key = s.name("a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)");
    s.expect('=', "'=' after the window field '" + key + "'");
    s.skip_space();
    const auto dims = x_separated(s, key == "pad" ? 2 : 1, key == "pad" ? 2 : 1, key);
    if (key == "size") {
      have_size = true;
      r.resize(dims.size());
    } else if (!have_size) {
      throw_hlo_error(at, key, "comes before size; expected size= first in window");
    }
    if (dims.size() != r.size())
      throw_hlo_error(at, key, "has " + std::to_string(dims.size()) + " dimensions but size has " + std::to_string(r.size()) + "; expected the same number");
    for (size_t i = 0; i < dims.size(); ++i) {
      const auto& d = dims[i];
      if (key == "size") r[i].size = d[0];
      else if (key == "stride") r[i].stride = d[0];
      else if (key == "pad") r[i].pad_low = d[0], r[i].pad_high = d[1];
      else if (key == "lhs_dilate") r[i].lhs_dilate = d[0];
      else if (key == "rhs_dilate") r[i].rhs_dilate = d[0];
      else if (key == "rhs_reversal") r[i].reversal = d[0] != 0;
      else throw_hlo_error(at, key, "is not a window field; expected size, stride, pad, lhs_dilate, rhs_dilate or rhs_reversal");
    }
    if (s.eof()) s.fail("the text ends here; expected '}' closing window");
  }
  expect_end(s, "window");
  return r;
}

std::optional<DimLabels> dim_labels_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "dim_labels");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  const SourcePos start = s.here();
  const std::string v = s.name("dim_labels such as b01f_01io->b01f");
  s.expect('>', "'->' and the output labels");  // name() stops at '>' after consuming "...-"
  DimLabels d;
  d.out = s.name("the output labels");
  expect_end(s, "dim_labels");
  const size_t u = v.find('_');
  if (u == std::string::npos || v.back() != '-')
    throw_hlo_error(start, a->value, "is not LHS_RHS->OUT; expected dim_labels such as b01f_01io->b01f");
  d.lhs = v.substr(0, u);
  d.rhs = v.substr(u + 1, v.size() - u - 2);
  auto check = [&](const std::string& l, std::string_view letters) {
    for (char c : l)
      if (!(c >= '0' && c <= '9') && letters.find(c) == std::string_view::npos)
        throw_hlo_error(start, a->value, "has label '" + std::string(1, c) + "'; expected digits and " + std::string(letters));
  };
  check(d.lhs, "bf");
  check(d.rhs, "io");
  check(d.out, "bf");
  return d;
}

DotDims dot_dims(const Module& m, const Instruction& in) {
  DotDims d;
  auto get = [&](std::string_view n) { return int_list_attr(m, in, n).value_or(std::vector<int64_t>{}); };
  d.lhs_batch = get("lhs_batch_dims");
  d.lhs_contracting = get("lhs_contracting_dims");
  d.rhs_batch = get("rhs_batch_dims");
  d.rhs_contracting = get("rhs_contracting_dims");
  return d;
}

std::optional<std::vector<std::vector<int64_t>>> replica_groups_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "replica_groups");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  std::vector<std::vector<int64_t>> r;
  s.skip_space();
  const SourcePos at = s.here();
  if (s.peek() == '[') {  // iota form [G,S]<=[dims]T(perm)
    s.accept('[');
    const int64_t g = s.integer("the number of groups");
    s.expect(',', "',' and the group size");
    const int64_t n = s.integer("the group size");
    s.expect(']', "']' closing [GROUPS,SIZE]");
    const int64_t total = checked_product(at, {g, n}, "replica_groups");
    const std::vector<int64_t> devs = iota_devices(s, "replica_groups");
    if (int64_t(devs.size()) != total)
      throw_hlo_error(at, a->value, "lists " + std::to_string(devs.size()) + " devices for " + std::to_string(g) + " groups of " + std::to_string(n) + "; expected the same count");
    for (int64_t i = 0; i < g; ++i) r.emplace_back(devs.begin() + i * n, devs.begin() + (i + 1) * n);
  } else {
    s.expect('{', "'{' opening replica_groups={{0,1},...} or the iota form [G,S]<=[N]");
    if (!s.accept('}')) {
      int64_t count = 0;
      do {
        r.push_back(int_list(s, "a replica group"));
        count += int64_t(r.back().size());
        if (count > kMaxDeviceList) s.fail("makes replica_groups list more than 2^20 devices (the parser's limit)");
      } while (s.accept(','));
      s.expect('}', "',' or '}' in replica_groups");
    }
  }
  expect_end(s, "replica_groups");
  return r;
}

std::optional<std::vector<std::pair<int64_t, int64_t>>> source_target_pairs_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "source_target_pairs");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  std::vector<std::pair<int64_t, int64_t>> r;
  s.expect('{', "'{' opening source_target_pairs={{0,1},...}");
  if (!s.accept('}')) {
    do {
      s.expect('{', "'{' opening a {source,target} pair");
      const int64_t src = s.integer("the source device");
      s.expect(',', "',' and the target device");
      const int64_t dst = s.integer("the target device");
      s.expect('}', "'}' closing the pair");
      r.emplace_back(src, dst);
    } while (s.accept(','));
    s.expect('}', "',' or '}' in source_target_pairs");
  }
  expect_end(s, "source_target_pairs");
  return r;
}

std::optional<std::string> direction_attr(const Module& m, const Instruction& in) {
  auto d = string_attr(m, in, "direction");
  if (d && *d != "EQ" && *d != "NE" && *d != "LT" && *d != "LE" && *d != "GT" && *d != "GE") {
    const Attribute* a = find(in, "direction");
    throw_hlo_error({&m.file, a->line, a->column, in.name}, *d, "is not a comparison direction; expected EQ, NE, LT, LE, GT or GE");
  }
  return d;
}

namespace {

Sharding sharding_of(Scanner& s, int depth) {
  if (depth > kMaxNesting) s.fail("nests tuple shardings deeper than the parser's limit; expected a flatter sharding");
  Sharding sh;
  s.skip_space();
  const SourcePos at = s.here();
  s.expect('{', "'{' opening a sharding");
  s.skip_space();
  if (s.peek() == '{') {
    sh.kind = Sharding::Kind::kTuple;
    do sh.elements.push_back(sharding_of(s, depth + 1));
    while (s.accept(','));
    s.expect('}', "',' or '}' in a tuple sharding");
    return sh;
  }
  if (s.accept_word("replicated")) {
    sh.kind = Sharding::Kind::kReplicated;
  } else if (s.accept_word("manual")) {
    sh.kind = Sharding::Kind::kManual;
  } else if (s.accept_word("maximal")) {
    sh.kind = Sharding::Kind::kMaximal;
    if (!s.accept_word("device")) s.fail("is not what comes here; expected device=N after maximal");
    s.expect('=', "'=' after device");
    sh.device = s.integer("the device number");
  } else if (s.accept_word("devices")) {
    sh.kind = Sharding::Kind::kTiled;
    s.expect('=', "'=' after devices");
    s.expect('[', "'[' opening the tile dimensions");
    const SourcePos dims_at = s.here();
    do sh.tile_dims.push_back(s.integer("a tile dimension"));
    while (s.accept(','));
    s.expect(']', "',' or ']' in the tile dimensions");
    const int64_t n = checked_product(dims_at, sh.tile_dims, "sharding");
    s.skip_space();
    if (s.peek() == '<') {
      sh.devices = iota_devices(s, "sharding");
    } else {
      do sh.devices.push_back(s.integer("a device number"));
      while (int64_t(sh.devices.size()) < n && s.accept(','));
    }
    if (int64_t(sh.devices.size()) != n)
      throw_hlo_error(at, std::to_string(sh.devices.size()) + " devices", "do not fill the tile dimensions (" + std::to_string(n) + " tiles); expected one device per tile");
  }
  // Anything after the known part (last_tile_dims={...}, metadata={...}, an unknown form) is kept raw.
  while (true) {
    s.skip_space();
    if (s.eof()) s.fail("the text ends here; expected '}' closing the sharding");
    const char c = s.peek();
    if (c == '}') break;
    if (s.accept_word("last_tile_dim_replicate")) sh.last_tile_dim_replicate = true;
    else if (c == '{' || c == '[' || c == '(') s.balanced("a balanced value");
    else if (c == '"') s.quoted("a string");
    else if (c == '=' || c == ',' || c == '<') s.accept(c);
    else if (is_name_char(c)) s.name("a sharding field");
    else s.fail("is not part of a sharding; expected '}'");
  }
  s.accept('}');
  return sh;
}

}  // namespace

std::optional<Sharding> sharding_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "sharding");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  Sharding sh = sharding_of(s, 0);
  expect_end(s, "sharding");
  sh.raw = a->value.size() >= 2 ? a->value.substr(1, a->value.size() - 2) : a->value;
  return sh;
}

std::optional<std::map<std::string, std::string>> metadata_attr(const Module& m, const Instruction& in) {
  const Attribute* a = find(in, "metadata");
  if (!a) return std::nullopt;
  Scanner s = reader(m, in, *a);
  std::map<std::string, std::string> r;
  s.expect('{', "'{' opening metadata={op_type=\"...\" ...}");
  while (!s.accept('}')) {
    if (s.eof()) s.fail("the text ends here; expected '}' closing metadata");
    const std::string key = s.name("a metadata field such as op_name");
    s.expect('=', "'=' after the metadata field '" + key + "'");
    s.skip_space();
    if (s.peek() == '"') r[key] = s.quoted(key);
    else if (s.peek() == '{') r[key] = s.balanced(key);
    else r[key] = std::to_string(s.integer(key));
  }
  expect_end(s, "metadata");
  return r;
}

}  // namespace tpusim::hlo
