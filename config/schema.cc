#include "config/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "config/suggest.h"

namespace tpusim::config {

namespace {

std::string num(double x, bool integer) {
  if (integer || (x == std::floor(x) && std::fabs(x) < 1e15)) return fmt::format("{}", static_cast<long long>(x));
  return fmt::format("{}", x);
}

bool is_int_kind(FieldKind k) { return k == FieldKind::U32 || k == FieldKind::I32 || k == FieldKind::U64 || k == FieldKind::U32List || k == FieldKind::U64Map; }

std::string join_path(const std::string& a, std::string_view b) { return a.empty() ? std::string(b) : a + "." + std::string(b); }

// A number followed by letters ("16GiB", "940 MHz"): the unit belongs in the key name, not the value.
std::string unit_hint(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i > 0 && i < s.size()) return "write only the number: the unit is part of the key name";
  return {};
}

std::string integer_phrase(const Bounds& b) {
  const std::string p = b.phrase(true);
  return p.empty() ? "a non-negative integer" : "an integer" + p;
}

std::string number_phrase(const Bounds& b) { return "a number" + b.phrase(false); }

std::string size_phrase(size_t lo, size_t hi) {
  if (lo == hi) return fmt::format("exactly {} ", lo);
  if (hi == SIZE_MAX) return lo > 0 ? fmt::format("at least {} ", lo) : "";
  return fmt::format("{} to {} ", lo, hi);
}

}  // namespace

bool Bounds::contains(double x) const {
  if (lo && (lo_open ? !(x > *lo) : !(x >= *lo))) return false;
  if (hi && (hi_open ? !(x < *hi) : !(x <= *hi))) return false;
  return true;
}

std::string Bounds::phrase(bool integer) const {
  if (lo && hi) return fmt::format(" in {}{}, {}{}", lo_open ? "(" : "[", num(*lo, integer), num(*hi, integer), hi_open ? ")" : "]");
  if (lo) return fmt::format(" {} {}", lo_open ? ">" : ">=", num(*lo, integer));
  if (hi) return fmt::format(" {} {}", hi_open ? "<" : "<=", num(*hi, integer));
  return {};
}

std::string FieldInfo::rule() const {
  switch (kind) {
    case FieldKind::U32:
    case FieldKind::U64: return "must be " + integer_phrase(bounds);
    case FieldKind::I32: return "must be an integer" + bounds.phrase(true);
    case FieldKind::F64: return "must be " + number_phrase(bounds);
    case FieldKind::Bool: return "must be true or false";
    case FieldKind::String: return one_of.empty() ? "must be a string" : "must be one of: " + join(one_of);
    case FieldKind::U32List: {
      const std::string each = bounds.phrase(true);
      return "must be a list of " + size_phrase(min_size, max_size) + "integers" + (each.empty() ? "" : ", each" + each);
    }
    case FieldKind::BoolList: return "must be a list of " + size_phrase(min_size, max_size) + "true/false values";
    case FieldKind::StringList:
      return "must be a list of " + size_phrase(min_size, max_size) + "names" +
             (one_of.empty() ? "" : ", each one of: " + join(one_of));
    case FieldKind::ValueList: return "must be a list of " + size_phrase(min_size, max_size) + "values";
    case FieldKind::U64Map: {
      const std::string each = bounds.phrase(true);
      return "must be a mapping of names to integers" + (each.empty() ? "" : ", each" + each);
    }
    case FieldKind::Section: return "must be a mapping (a section with keys: " + join(section->keys()) + ")";
    case FieldKind::SectionList:
      return "must be a list of " + size_phrase(min_size, max_size) + "mappings (each with keys: " +
             join(section->keys()) + ")";
  }
  return {};
}

std::string FieldInfo::type_name() const {
  switch (kind) {
    case FieldKind::U32: return "integer (32-bit)";
    case FieldKind::I32: return "integer (32-bit, signed)";
    case FieldKind::U64: return "integer (64-bit)";
    case FieldKind::F64: return "number";
    case FieldKind::Bool: return "bool";
    case FieldKind::String: return "string";
    case FieldKind::U32List: return "list of integers";
    case FieldKind::BoolList: return "list of bools";
    case FieldKind::StringList: return "list of strings";
    case FieldKind::ValueList: return "list of values";
    case FieldKind::U64Map: return "mapping name → integer";
    case FieldKind::Section: return "section";
    case FieldKind::SectionList: return "list of sections";
  }
  return {};
}

std::string FieldInfo::allowed() const {
  std::string s;
  if (!one_of.empty()) {
    for (size_t i = 0; i < one_of.size(); ++i) s += (i ? ", `" : "`") + one_of[i] + "`";
    return s;
  }
  const std::string b = bounds.phrase(is_int_kind(kind));
  if (kind == FieldKind::U32List || kind == FieldKind::BoolList || kind == FieldKind::StringList ||
      kind == FieldKind::ValueList || kind == FieldKind::SectionList) {
    s = size_phrase(min_size, max_size);
    if (!s.empty()) s = s.substr(0, s.size() - 1) + " items";
    if (!b.empty()) s += (s.empty() ? "each" : ", each") + b;
    return s;
  }
  if (kind == FieldKind::U64Map) return b.empty() ? "" : "each" + b;
  return b.rfind(" in ", 0) == 0 ? b.substr(4) : b.empty() ? "" : b.substr(1);  // "[1, 16]", ">= 1"
}

std::string FieldInfo::comment() const { return unit.empty() ? doc : unit + " — " + doc; }

void fail_at(const Node& at, const std::string& path, const std::string& rule, const std::string& suggestion) {
  if (at.kind == Node::Kind::Null) throw ConfigError({at.file, path, at.line, "", "has no value; it " + rule, suggestion});
  throw ConfigError({at.file, path, at.line, at.text(), rule, suggestion});
}

namespace {

// `rule()`: the rule's text, worked out only for an error (a hardware file has a hundred fields).
template <class T, class Rule>
T parse_integer(const Node& n, const std::string& path, const Bounds& b, const Rule& rule) {
  if (n.kind != Node::Kind::Scalar) fail_at(n, path, rule());
  const std::string& s = n.scalar;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (first != last && *first == '+') ++first;
  T v = 0;
  auto [p, ec] = std::from_chars(first, last, v);
  if (first == last || p != last || ec == std::errc::invalid_argument) fail_at(n, path, rule(), unit_hint(s));
  if (ec == std::errc::result_out_of_range)
    fail_at(n, path, rule() + fmt::format(" (at most {})", std::numeric_limits<T>::max()));
  if (!b.contains(static_cast<double>(v))) fail_at(n, path, rule());
  return v;
}

template <class Rule>
double parse_double(const Node& n, const std::string& path, const Bounds& b, const Rule& rule) {
  if (n.kind != Node::Kind::Scalar) fail_at(n, path, rule());
  const std::string& s = n.scalar;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (first != last && *first == '+') ++first;
  double v = 0;
  auto [p, ec] = std::from_chars(first, last, v);
  if (first == last || p != last || ec != std::errc() || !std::isfinite(v)) fail_at(n, path, rule(), unit_hint(s));
  if (!b.contains(v)) fail_at(n, path, rule());
  return v;
}

template <class Rule>
bool parse_bool(const Node& n, const std::string& path, const Rule& rule) {
  if (n.kind == Node::Kind::Scalar) {
    const std::string& s = n.scalar;
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  fail_at(n, path, rule());
}

}  // namespace

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, uint32_t& out) {
  out = parse_integer<uint32_t>(n, path, f.bounds, [&] { return f.rule(); });
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, int32_t& out) {
  out = parse_integer<int32_t>(n, path, f.bounds, [&] { return f.rule(); });
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, uint64_t& out) {
  out = parse_integer<uint64_t>(n, path, f.bounds, [&] { return f.rule(); });
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, double& out) {
  out = parse_double(n, path, f.bounds, [&] { return f.rule(); });
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, bool& out) { out = parse_bool(n, path, [&] { return f.rule(); }); }

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::string& out) {
  if (n.kind != Node::Kind::Scalar) fail_at(n, path, f.rule());
  if (!f.one_of.empty() && std::find(f.one_of.begin(), f.one_of.end(), n.scalar) == f.one_of.end()) {
    const auto c = closest(n.scalar, f.one_of);
    fail_at(n, path, f.rule(), c ? "did you mean '" + *c + "'?" : "");
  }
  out = n.scalar;
}

namespace {
void check_list(const Node& n, const FieldInfo& f, const std::string& path) {
  if (n.kind != Node::Kind::Sequence || n.items.size() < f.min_size || n.items.size() > f.max_size)
    fail_at(n, path, f.rule(), n.kind == Node::Kind::Scalar ? "write a list in brackets, e.g. [2, 2]" : "");
}
}  // namespace

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<uint32_t>& out) {
  check_list(n, f, path);
  const auto elem_rule = [&] { return "must be " + integer_phrase(f.bounds); };
  out.clear();
  for (size_t i = 0; i < n.items.size(); ++i)
    out.push_back(parse_integer<uint32_t>(n.items[i], fmt::format("{}[{}]", path, i), f.bounds, elem_rule));
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<bool>& out) {
  check_list(n, f, path);
  out.clear();
  for (size_t i = 0; i < n.items.size(); ++i) out.push_back(parse_bool(n.items[i], fmt::format("{}[{}]", path, i), [] { return std::string("must be true or false"); }));
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<std::string>& out) {
  if (n.kind != Node::Kind::Sequence || n.items.size() < f.min_size || n.items.size() > f.max_size)
    fail_at(n, path, f.rule(), n.kind == Node::Kind::Scalar ? "write a list in brackets, e.g. [" + n.scalar + "]" : "");
  out.clear();
  for (size_t i = 0; i < n.items.size(); ++i) {
    const Node& item = n.items[i];
    const std::string at = fmt::format("{}[{}]", path, i);
    if (item.kind != Node::Kind::Scalar) fail_at(item, at, "must be a name");
    if (!f.one_of.empty() && std::find(f.one_of.begin(), f.one_of.end(), item.scalar) == f.one_of.end()) {
      const auto c = closest(item.scalar, f.one_of);
      fail_at(item, at, "must be one of: " + join(f.one_of), c ? "did you mean '" + *c + "'?" : "");
    }
    out.push_back(item.scalar);
  }
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<YamlValue>& out) {
  if (n.kind != Node::Kind::Sequence || n.items.size() < f.min_size || n.items.size() > f.max_size)
    fail_at(n, path, f.rule(), n.kind == Node::Kind::Scalar ? "write a list in brackets, e.g. [" + n.scalar + "]" : "");
  out.clear();
  for (size_t i = 0; i < n.items.size(); ++i) {
    if (n.items[i].kind == Node::Kind::Null) fail_at(n.items[i], fmt::format("{}[{}]", path, i), "must be a value");
    out.push_back(YamlValue{n.items[i].flow()});
  }
}

std::string YamlValue::display() const {
  if (text.size() >= 2 && text.front() == '"') {
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_string()) return j.get<std::string>();
  }
  return text;
}

void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::map<std::string, uint64_t>& out) {
  if (n.kind != Node::Kind::Map) fail_at(n, path, f.rule());
  const auto elem_rule = [&] { return "must be " + integer_phrase(f.bounds); };
  out.clear();
  for (const auto& e : n.entries)
    out[e.key] = parse_integer<uint64_t>(e.value, join_path(path, e.key), f.bounds, elem_rule);
}

std::string yaml_value(uint32_t v) { return std::to_string(v); }
std::string yaml_value(int32_t v) { return std::to_string(v); }
std::string yaml_value(uint64_t v) { return std::to_string(v); }
std::string yaml_value(double v) { return fmt::format("{}", v); }  // shortest text that reads back exactly
std::string yaml_value(bool v) { return v ? "true" : "false"; }

std::string yaml_value(const std::string& v) {
  // Plain when unambiguous, else a double-quoted (JSON-style) scalar, which YAML reads back verbatim.
  static const std::vector<std::string> kReserved = {"true", "false", "True", "False", "TRUE", "FALSE", "null",
                                                     "Null", "NULL", "~",    "yes",   "no",   "on",    "off"};
  bool plain = !v.empty() && (std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_' || v[0] == '/');
  for (char c : v) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/');
  if (plain && std::find(kReserved.begin(), kReserved.end(), v) == kReserved.end()) return v;
  return nlohmann::json(v).dump();
}

std::string yaml_value(const std::vector<uint32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string yaml_value(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + yaml_value(v[i]);
  return s + "]";
}

std::string yaml_value(const std::vector<YamlValue>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].text;
  return s + "]";
}

std::string yaml_value(const std::vector<bool>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += std::string(i ? ", " : "") + (v[i] ? "true" : "false");
  return s + "]";
}

std::string yaml_value(const std::map<std::string, uint64_t>& v) {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, x] : v) {
    s += (first ? "" : ", ") + yaml_value(k) + ": " + std::to_string(x);
    first = false;
  }
  return s + "}";
}

void YamlWriter::line(int depth, std::string text, std::string comment) {
  lines_.push_back({depth, std::move(text), std::move(comment)});
}

void YamlWriter::item(int depth, const YamlWriter& item) {
  for (size_t i = 0; i < item.lines_.size(); ++i) {
    Line l = item.lines_[i];
    l.depth += depth;
    l.dash = i == 0;
    lines_.push_back(std::move(l));
  }
}

std::string YamlWriter::str() const {
  // Comments start in one column (capped, so that one long line does not push all of them right).
  constexpr size_t kMaxColumn = 44;
  size_t col = 0;
  for (const auto& l : lines_) {
    const size_t w = 2 * l.depth + l.text.size();
    if (w <= kMaxColumn) col = std::max(col, w);
  }
  std::string out;
  for (const auto& l : lines_) {
    std::string s = l.dash ? std::string(2 * l.depth - 2, ' ') + "- " + l.text : std::string(2 * l.depth, ' ') + l.text;
    if (!l.comment.empty()) s += std::string(s.size() < col ? col - s.size() : 0, ' ') + "  # " + l.comment;
    out += s + "\n";
  }
  return out;
}

std::string CheckContext::full(std::string_view rel) const { return join_path(path_, rel); }

const Node& CheckContext::locate(std::string_view rel) const {
  const Node* n = &section_;
  size_t start = 0;
  while (start <= rel.size() && !rel.empty()) {
    const size_t dot = rel.find('.', start);
    const std::string_view part = rel.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    const Node* next = n->find(part);
    if (!next) break;  // a defaulted key: point at the nearest written ancestor
    n = next;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return *n;
}

void CheckContext::fail(std::string_view rel, const std::string& rule, const std::string& suggestion) const {
  const Node& n = locate(rel);
  throw ConfigError({n.file, full(rel), n.line, n.text(), rule, suggestion});
}

void CheckContext::fail_missing(std::string_view rel, const std::string& rule, const std::string& suggestion) const {
  const Node& n = locate(rel);
  throw ConfigError({n.file, full(rel), n.line, "", rule, suggestion});
}

const FieldInfo* SchemaBase::find(std::string_view key) const {
  for (const auto& f : fields_)
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<std::string> SchemaBase::keys() const {
  std::vector<std::string> k;
  for (const auto& f : fields_) k.push_back(f.key);
  return k;
}

bool SchemaBase::has_required() const {
  for (const auto& f : fields_)
    if (f.required) return true;
  return false;
}

void SchemaBase::check_section(const Node& n, const std::string& path) const {
  if (n.kind != Node::Kind::Map) {
    const std::string rule = "must be a mapping (a section with keys: " + join(keys()) + ")";
    if (path.empty()) throw ConfigError({n.file, "", n.line, "", "the document " + rule, ""});
    fail_at(n, path, rule);
  }
  for (const auto& e : n.entries) {
    if (find(e.key)) continue;
    const std::string where = path.empty() ? "at the top level" : "in '" + path + "'";
    throw ConfigError({e.value.file, join_path(path, e.key), e.line, "", "unknown key " + where, suggest(e.key, keys())});
  }
}

void SchemaBase::check_section_list(const Node& n, const FieldInfo& f, const std::string& path) {
  if (n.kind != Node::Kind::Sequence || n.items.size() < f.min_size || n.items.size() > f.max_size)
    fail_at(n, path, f.rule(), n.kind == Node::Kind::Map ? "write each item on a line starting with '- '" : "");
}

void SchemaBase::missing(const Node& section, const std::string& path, const FieldInfo& f) {
  const std::string what = f.kind == FieldKind::Section ? "missing required section (" + f.doc + ")"
                                                         : "missing required key (" + f.doc + "; " + f.rule() + ")";
  throw ConfigError({section.file, path, section.line, "", what, ""});
}

SchemaBase::PathTarget SchemaBase::resolve_path(const std::string& path, const std::string& origin) const {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  const SchemaBase* s = this;
  std::string prefix;
  for (size_t i = 0; i < parts.size(); ++i) {
    const FieldInfo* f = s->find(parts[i]);
    const std::string here = join_path(prefix, parts[i]);
    if (!f) {
      const std::string where = prefix.empty() ? "at the top level" : "in '" + prefix + "'";
      throw ConfigError({origin, path, 0, "", "unknown key " + where, suggest(parts[i], s->keys())});
    }
    if (i + 1 == parts.size()) return {f, false};
    if (f->kind == FieldKind::Section) {
      s = f->section;
    } else if (f->kind == FieldKind::U64Map && i + 2 == parts.size()) {
      return {f, true};
    } else {
      throw ConfigError({origin, path, 0, "", "'" + here + "' is a " + f->type_name() + " and has no keys below it",
                         "set it whole, e.g. " + here + "=" + (f->kind == FieldKind::U32List ? "[4, 4]" : "VALUE")});
    }
    prefix = here;
  }
  return {};
}

bool SchemaBase::has_path(const std::string& path) const {
  try {
    resolve_path(path, "");
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

std::string SchemaBase::markdown(const std::string& path, int heading_level) const {
  auto cell = [](std::string s) {  // a table cell is one line without pipes
    for (char& c : s)
      if (c == '\n') c = ' ';
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string md = std::string(heading_level, '#') + " " + (path.empty() ? title() : "`" + path + "` — " + title()) + "\n\n";
  if (!doc().empty()) md += doc() + "\n\n";
  md += "| Key | Type | Unit | Default | Allowed | Description |\n|---|---|---|---|---|---|\n";
  for (const auto& f : fields_) {
    std::string desc = f.doc;
    if (!f.details.empty()) desc += ". " + f.details;
    if (f.kind == FieldKind::Section) desc += " (see `" + join_path(path, f.key) + "`)";
    if (f.kind == FieldKind::SectionList) desc += " (see `" + join_path(path, f.key) + "[]`)";
    if (!f.source.empty()) desc += " *Source:* " + f.source;
    // A plain section has no default of its own (its keys do); an optional one defaults to none.
    const std::string def = f.kind == FieldKind::Section && !f.default_derived ? ""
                            : f.required                 ? "required"
                            : f.default_derived          ? "*" + f.default_text + "*"
                                                         : "`" + f.default_text + "`";
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", f.key, f.type_name(), cell(f.unit), cell(def), cell(f.allowed()), cell(desc));
  }
  md += "\n";
  for (const auto& f : fields_) {
    if (f.kind == FieldKind::Section) md += f.section->markdown(join_path(path, f.key), heading_level);
    if (f.kind == FieldKind::SectionList) md += f.section->markdown(join_path(path, f.key) + "[]", heading_level);
  }
  return md;
}

void apply_overrides(Node& root, const SchemaBase& schema, const std::vector<Override>& overrides) {
  for (const Override& ov : overrides) {
    const auto target = schema.resolve_path(ov.path, ov.origin);
    Node value;
    try {
      value = parse_yaml(ov.value, ov.origin);
    } catch (const ConfigError& e) {
      throw ConfigError({ov.origin, ov.path, 0, ov.value, e.info().rule, "quote it, or write a list as [a, b]"});
    }
    set_origin(value, ov.origin, 0);
    Node& parent = parent_of(root, ov.path, ov.origin);
    const std::string leaf = ov.path.substr(ov.path.rfind('.') + 1);  // npos + 1 = 0: the whole path
    Node* existing = parent.find(leaf);
    if (existing && existing->is_map() && value.is_map() && target.field->kind == FieldKind::Section)
      merge_into(*existing, value);
    else
      parent.set(leaf, std::move(value));
  }
}

}  // namespace tpusim::config
