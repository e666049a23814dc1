// Config schemas, declared once per struct in code: each field's key, type, unit, default or
// "required", allowed range or values, description and (optionally) the source of the rule.
// The same declaration parses and validates a YAML tree into the struct (unknown keys are errors
// with "did you mean"), dumps the resolved struct as commented YAML, converts it to JSON, compares
// two structs, and writes the Markdown reference. A field parses straight into its type: numbers,
// strings, lists, and typed strings — a named enum (base/enum_names.h: its table gives the allowed
// values) or a TextValue such as a padding rule. Besides scalar and list fields a schema may hold
// nested sections (`section`), optional sections (`optional_section`, a std::optional member) and
// lists of sections (`section_list`, e.g. a sweep's `axes:`).
//
//   static const Schema<MxuParams> s = [] {
//     Schema<MxuParams> s("MXU", "A weight-stationary systolic array.");
//     s.field(&MxuParams::count, "count").range(1, 16).doc("MXUs per TensorCore");
//     return s;
//   }();
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/config_error.h"
#include "base/enum_names.h"
#include "config/override.h"
#include "config/tree.h"

namespace tpusim::config {

enum class FieldKind { U32, I32, U64, F64, Bool, String, U32List, BoolList, StringList, ValueList, U64Map, Section, SectionList };

// One YAML value of any shape, kept as flow text that parses back to it ("128", "[true, true]",
// "\"multiple_of:32\""): what a `--set PATH=VALUE` takes as VALUE. A list of them is a ValueList field.
struct YamlValue {
  std::string text;
  bool operator==(const YamlValue&) const = default;
  // The value for people: a quoted scalar unquoted, anything else as `text`.
  std::string display() const;
};
inline void to_json(nlohmann::json& j, const YamlValue& v) { j = v.text; }

// Numeric bounds (of a number, or of each element of a list or map); open bounds exclude the endpoint.
struct Bounds {
  std::optional<double> lo, hi;
  bool lo_open = false, hi_open = false;
  bool contains(double x) const;
  // " in [1, 16]", " > 0", "" (unbounded). `integer` prints bounds without decimals.
  std::string phrase(bool integer) const;
};

class SchemaBase;

struct FieldInfo {
  std::string key;
  FieldKind kind = FieldKind::String;
  std::string unit;          // "MHz", "GB/s", ... ; empty when dimensionless (a count)
  std::string doc;           // one line; also the comment in dumps
  std::string details;       // longer explanation, in the Markdown reference only
  std::string source;        // where the value or rule comes from (optional, shown in the reference)
  bool required = true;
  std::string default_text;  // the default as YAML, or how it is derived ("file stem")
  bool default_derived = false;  // default_text describes a derivation rather than a value
  Bounds bounds;
  std::vector<std::string> one_of;  // allowed strings (empty: any)
  size_t min_size = 0, max_size = SIZE_MAX;  // list lengths
  const SchemaBase* section = nullptr;       // kind == Section or SectionList

  std::string rule() const;       // "must be an integer in [1, 16]"
  std::string type_name() const;  // "integer", "list of integers", ...
  std::string allowed() const;    // "[1, 16]", "`simple`", "" (Markdown)
  std::string comment() const;    // "MHz — core clock"
};

// Throws ConfigError at `at` (its file and line), quoting the value written there.
[[noreturn]] void fail_at(const Node& at, const std::string& path, const std::string& rule,
                          const std::string& suggestion = {});

// Conversions, one overload per supported field type. parse_value validates against `f`.
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, uint32_t& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, int32_t& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, uint64_t& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, double& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, bool& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::string& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<uint32_t>& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<bool>& out);
// Each item one of f.one_of when that is set (else any string).
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<std::string>& out);
// Each item any non-null YAML value (a scalar, or a list or mapping in flow or block style).
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::vector<YamlValue>& out);
void parse_value(const Node& n, const FieldInfo& f, const std::string& path, std::map<std::string, uint64_t>& out);
// YAML flow text that parses back to the same value (doubles print shortest-exact).
std::string yaml_value(uint32_t v);
std::string yaml_value(int32_t v);
std::string yaml_value(uint64_t v);
std::string yaml_value(double v);
std::string yaml_value(bool v);
std::string yaml_value(const std::string& v);
std::string yaml_value(const std::vector<uint32_t>& v);
std::string yaml_value(const std::vector<bool>& v);
std::string yaml_value(const std::vector<std::string>& v);
std::string yaml_value(const std::vector<YamlValue>& v);
std::string yaml_value(const std::map<std::string, uint64_t>& v);

// A value written in YAML as one string and parsed into its own type (e.g. a padding rule,
// "multiple_of:32"): declared beside the type by argument-dependent lookup,
// `parse_config_text(text, out, at)` (throws ConfigError at `at`, whose file, path and line are
// filled in) and `config_text(value)`. Named enums (base/enum_names.h) are the other typed strings.
template <class V>
concept TextValue = requires(std::string_view s, V& v, const V& cv, const ConfigErrorInfo& at) {
  parse_config_text(s, v, at);
  { config_text(cv) } -> std::convertible_to<std::string>;
};
template <class V>
concept TypedString = NamedEnum<V> || TextValue<V>;

// The string a typed-string value is written as.
template <TypedString V>
std::string string_of(const V& v) {
  if constexpr (NamedEnum<V>) return enum_name(v);
  else return config_text(v);
}
// A count that may be a fraction (per_device_batch_size) as JSON: an integer when whole, so that
// whole counts print as they always have.
inline nlohmann::json json_count(double x) {
  if (x == double(int64_t(x))) return nlohmann::json(int64_t(x));
  return nlohmann::json(x);
}
// YAML flow text of any field value.
template <class V>
std::string yaml_of(const V& v) {
  if constexpr (TypedString<V>) return yaml_value(string_of(v));
  else return yaml_value(v);
}

template <class V>
constexpr FieldKind kind_of() {
  if constexpr (TypedString<V>) return FieldKind::String;  // written and documented as a string
  else if constexpr (std::is_same_v<V, uint32_t>) return FieldKind::U32;
  else if constexpr (std::is_same_v<V, int32_t>) return FieldKind::I32;
  else if constexpr (std::is_same_v<V, uint64_t>) return FieldKind::U64;
  else if constexpr (std::is_same_v<V, double>) return FieldKind::F64;
  else if constexpr (std::is_same_v<V, bool>) return FieldKind::Bool;
  else if constexpr (std::is_same_v<V, std::string>) return FieldKind::String;
  else if constexpr (std::is_same_v<V, std::vector<uint32_t>>) return FieldKind::U32List;
  else if constexpr (std::is_same_v<V, std::vector<bool>>) return FieldKind::BoolList;
  else if constexpr (std::is_same_v<V, std::vector<std::string>>) return FieldKind::StringList;
  else if constexpr (std::is_same_v<V, std::vector<YamlValue>>) return FieldKind::ValueList;
  else if constexpr (std::is_same_v<V, std::map<std::string, uint64_t>>) return FieldKind::U64Map;
  else static_assert(!sizeof(V*), "unsupported config field type");
}

// Builds YAML text line by line, aligning the `# comments`.
class YamlWriter {
 public:
  void line(int depth, std::string text, std::string comment = {});
  // Appends `item` (written from depth 0) as one item of a block list at `depth`: "- first: line".
  void item(int depth, const YamlWriter& item);
  std::string str() const;

 private:
  struct Line {
    int depth;
    std::string text, comment;
    bool dash = false;  // the first line of a list item: "- " replaces the last indentation step
  };
  std::vector<Line> lines_;
};

// Handed to cross-field checks: errors point at a key of the section being checked.
class CheckContext {
 public:
  CheckContext(const Node& section, std::string path) : section_(section), path_(std::move(path)) {}
  // Fails at `rel` (dotted, relative to the section), quoting the value written there.
  [[noreturn]] void fail(std::string_view rel, const std::string& rule, const std::string& suggestion = {}) const;
  // Same, without quoting a value (for something missing).
  [[noreturn]] void fail_missing(std::string_view rel, const std::string& rule, const std::string& suggestion = {}) const;
  const std::string& path() const { return path_; }

 private:
  const Node& locate(std::string_view rel) const;
  std::string full(std::string_view rel) const;
  const Node& section_;
  std::string path_;
};

class SchemaBase {
 public:
  SchemaBase(std::string title, std::string doc) : title_(std::move(title)), doc_(std::move(doc)) {}
  virtual ~SchemaBase() = default;

  const std::string& title() const { return title_; }
  const std::string& doc() const { return doc_; }
  const std::deque<FieldInfo>& fields() const { return fields_; }
  const FieldInfo* find(std::string_view key) const;
  std::vector<std::string> keys() const;
  bool has_required() const;  // a section without required keys may be omitted

  // Markdown reference: a heading and a table per section, depth first. `path` prefixes the headings.
  std::string markdown(const std::string& path = "", int heading_level = 3) const;

  // Checks that a dotted path (an override) names a key; throws ConfigError (file = origin) with
  // "did you mean" otherwise. `field` is the key's declaration; `map_entry` when the path names an
  // entry of a map field (e.g. shape.m).
  struct PathTarget {
    const FieldInfo* field = nullptr;
    bool map_entry = false;
  };
  PathTarget resolve_path(const std::string& path, const std::string& origin) const;
  bool has_path(const std::string& path) const;

 protected:
  // `n` must be a mapping whose keys are all declared.
  void check_section(const Node& n, const std::string& path) const;
  // `n` must be a list of f.min_size..f.max_size items (of a section_list field).
  static void check_section_list(const Node& n, const FieldInfo& f, const std::string& path);
  [[noreturn]] static void missing(const Node& section, const std::string& path, const FieldInfo& f);
  std::deque<FieldInfo> fields_;  // deque: builders keep references while more fields are added

 private:
  std::string title_, doc_;
};

template <class T>
class Schema : public SchemaBase {
  struct Ops {
    std::function<void(T&, const Node&, const FieldInfo&, const std::string&)> parse;
    std::function<void(T&)> set_default;  // empty when the field is required
    std::function<void(const T&, const FieldInfo&, YamlWriter&, int)> dump;
    std::function<bool(const T&, const T&)> equal;
    std::function<nlohmann::json(const T&)> json;
  };

 public:
  using SchemaBase::SchemaBase;

  template <class V>
  class FieldBuilder {
   public:
    FieldBuilder(FieldInfo& info, Ops& ops, std::function<V&(T&)> get) : info_(info), ops_(ops), get_(std::move(get)) {}
    FieldBuilder& unit(std::string u) { info_.unit = std::move(u); return *this; }
    FieldBuilder& doc(std::string d) { info_.doc = std::move(d); return *this; }
    FieldBuilder& details(std::string d) { info_.details = std::move(d); return *this; }
    FieldBuilder& source(std::string s) { info_.source = std::move(s); return *this; }
    FieldBuilder& range(double lo, double hi) { return min(lo).max(hi); }  // inclusive
    FieldBuilder& min(double lo) { info_.bounds.lo = lo; info_.bounds.lo_open = false; return *this; }
    FieldBuilder& greater_than(double lo) { info_.bounds.lo = lo; info_.bounds.lo_open = true; return *this; }
    FieldBuilder& max(double hi) { info_.bounds.hi = hi; info_.bounds.hi_open = false; return *this; }
    FieldBuilder& less_than(double hi) { info_.bounds.hi = hi; info_.bounds.hi_open = true; return *this; }
    FieldBuilder& one_of(std::vector<std::string> v) { info_.one_of = std::move(v); return *this; }
    FieldBuilder& size(size_t lo, size_t hi) { info_.min_size = lo; info_.max_size = hi; return *this; }
    // Makes the key optional. `shown` documents a derived default (e.g. "file stem").
    FieldBuilder& default_value(V v, std::string shown = {}) {
      info_.required = false;
      info_.default_derived = !shown.empty();
      info_.default_text = shown.empty() ? yaml_of(v) : std::move(shown);
      ops_.set_default = [get = get_, v = std::move(v)](T& t) { get(t) = v; };
      return *this;
    }

   private:
    FieldInfo& info_;
    Ops& ops_;
    std::function<V&(T&)> get_;
  };

  // A value field: `member` of T.
  template <class V>
  FieldBuilder<V> field(V T::*member, std::string key) {
    return add<V>(std::move(key), [member](auto& t) -> auto& { return t.*member; });
  }
  // A value field one struct down (`(t.*outer).*inner`), for YAML that is flatter than the structs.
  template <class M, class V>
  FieldBuilder<V> field(M T::*outer, V M::*inner, std::string key) {
    return add<V>(std::move(key), [outer, inner](auto& t) -> auto& { return (t.*outer).*inner; });
  }
  // A value field of one alternative of a variant member (`std::get<M>(t.*outer).*inner`): a schema
  // of one kind of a config that is a variant by kind. The caller selects the alternative before parsing.
  template <class... Ts, class M, class V>
  FieldBuilder<V> field(std::variant<Ts...> T::*outer, V M::*inner, std::string key) {
    return add<V>(std::move(key), [outer, inner](auto& t) -> auto& { return std::get<M>(t.*outer).*inner; });
  }
  // A key whose value is fixed (`kind: training`): checked, dumped and written to JSON, stored nowhere
  // (the schema that declares it is what it selects).
  void tag(std::string key, std::string value, std::string doc) {
    FieldInfo& f = fields_.emplace_back();
    f.key = std::move(key);
    f.kind = FieldKind::String;
    f.doc = std::move(doc);
    f.one_of = {value};
    Ops& o = ops_.emplace_back();
    o.parse = [](T&, const Node& n, const FieldInfo& fi, const std::string& p) {
      std::string v;
      parse_value(n, fi, p, v);
    };
    o.dump = [value](const T&, const FieldInfo& fi, YamlWriter& w, int depth) {
      w.line(depth, fi.key + ": " + yaml_value(value), fi.comment());
    };
    o.equal = [](const T&, const T&) { return true; };
    o.json = [value](const T&) { return nlohmann::json(value); };
  }
  // A nested section with its own schema (which must outlive this one: schemas are static).
  template <class S>
  void section(S T::*member, std::string key, const Schema<S>& sub) {
    add_section(std::move(key), sub, [member](auto& t) -> auto& { return t.*member; });
  }
  // A nested section one struct down (`(t.*outer).*inner`), like the two-level field() above.
  template <class M, class S>
  void section(M T::*outer, S M::*inner, std::string key, const Schema<S>& sub) {
    add_section(std::move(key), sub, [outer, inner](auto& t) -> auto& { return (t.*outer).*inner; });
  }
  // A nested section of one alternative of a variant member, like the variant field() above.
  template <class... Ts, class M, class S>
  void section(std::variant<Ts...> T::*outer, S M::*inner, std::string key, const Schema<S>& sub) {
    add_section(std::move(key), sub, [outer, inner](auto& t) -> auto& { return std::get<M>(t.*outer).*inner; });
  }
  // An optional section: absent in the YAML, the member stays std::nullopt (no defaults filled in).
  template <class S>
  void optional_section(std::optional<S> T::*member, std::string key, const Schema<S>& sub) {
    FieldInfo& f = fields_.emplace_back();
    f.key = std::move(key);
    f.kind = FieldKind::Section;
    f.section = &sub;
    f.doc = sub.title();
    f.required = false;
    f.default_derived = true;
    f.default_text = "none";
    Ops& o = ops_.emplace_back();
    o.parse = [member, &sub](T& t, const Node& n, const FieldInfo&, const std::string& p) {
      sub.parse_into((t.*member).emplace(), n, p);
    };
    o.set_default = [member](T& t) { (t.*member).reset(); };
    o.dump = [member, &sub](const T& t, const FieldInfo& fi, YamlWriter& w, int depth) {
      if (!(t.*member)) return;
      w.line(depth, fi.key + ":", fi.doc);
      sub.dump_into(*(t.*member), w, depth + 1);
    };
    o.equal = [member, &sub](const T& a, const T& b) {
      const auto &x = a.*member, &y = b.*member;
      return x.has_value() == y.has_value() && (!x || sub.equal(*x, *y));
    };
    o.json = [member, &sub](const T& t) { return (t.*member) ? sub.to_json(*(t.*member)) : nlohmann::json(nullptr); };
  }
  // A list of sections, each item checked by `sub` (errors name `key[i]`). With `min_items` 0 the
  // key is optional and defaults to an empty list.
  template <class S>
  void section_list(std::vector<S> T::*member, std::string key, const Schema<S>& sub, size_t min_items,
                    size_t max_items = SIZE_MAX) {
    FieldInfo& f = fields_.emplace_back();
    f.key = std::move(key);
    f.kind = FieldKind::SectionList;
    f.section = &sub;
    f.doc = sub.title();
    f.min_size = min_items;
    f.max_size = max_items;
    f.required = min_items > 0;
    if (!f.required) f.default_text = "[]";
    Ops& o = ops_.emplace_back();
    o.parse = [member, &sub](T& t, const Node& n, const FieldInfo& fi, const std::string& p) {
      check_section_list(n, fi, p);
      auto& v = t.*member;
      v.clear();
      for (size_t i = 0; i < n.items.size(); ++i) sub.parse_into(v.emplace_back(), n.items[i], p + "[" + std::to_string(i) + "]");
    };
    if (!f.required) o.set_default = [member](T& t) { (t.*member).clear(); };
    o.dump = [member, &sub](const T& t, const FieldInfo& fi, YamlWriter& w, int depth) {
      if ((t.*member).empty()) {
        w.line(depth, fi.key + ": []", fi.doc);
        return;
      }
      w.line(depth, fi.key + ":", fi.doc);
      for (const S& item : t.*member) {
        YamlWriter iw;
        sub.dump_into(item, iw, 0);
        w.item(depth + 2, iw);  // "  - key: v" under the list's key, fields aligned after the dash
      }
    };
    o.equal = [member, &sub](const T& a, const T& b) {
      const auto &x = a.*member, &y = b.*member;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!sub.equal(x[i], y[i])) return false;
      return true;
    };
    o.json = [member, &sub](const T& t) {
      nlohmann::json j = nlohmann::json::array();
      for (const S& item : t.*member) j.push_back(sub.to_json(item));
      return j;
    };
  }
  // A cross-field rule, run after the section's own fields parsed.
  void check(std::function<void(const T&, const CheckContext&)> fn) { checks_.push_back(std::move(fn)); }

  // Parses and validates the document `root` (a mapping) into a T. Throws ConfigError.
  T parse(const Node& root) const {
    T out{};
    parse_into(out, root, "");
    return out;
  }
  void parse_into(T& out, const Node& n, const std::string& path) const {
    check_section(n, path);
    for (size_t i = 0; i < fields_.size(); ++i) {
      const FieldInfo& f = fields_[i];
      const std::string p = path.empty() ? f.key : path + "." + f.key;
      if (const Node* v = n.find(f.key)) {
        ops_[i].parse(out, *v, f, p);
      } else if (ops_[i].set_default) {
        ops_[i].set_default(out);
      } else if (f.kind == FieldKind::Section && !f.required) {
        Node empty;  // an omitted all-defaults section
        empty.kind = Node::Kind::Map;
        empty.file = n.file;
        empty.line = n.line;
        ops_[i].parse(out, empty, f, p);
      } else {
        missing(n, p, f);
      }
    }
    const CheckContext ctx(n, path);
    for (const auto& c : checks_) c(out, ctx);
  }

  std::string dump(const T& v) const {
    YamlWriter w;
    dump_into(v, w, 0);
    return w.str();
  }
  void dump_into(const T& v, YamlWriter& w, int depth) const {
    for (size_t i = 0; i < fields_.size(); ++i) ops_[i].dump(v, fields_[i], w, depth);
  }
  bool equal(const T& a, const T& b) const {
    for (const auto& o : ops_)
      if (!o.equal(a, b)) return false;
    return true;
  }
  nlohmann::json to_json(const T& v) const {
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < fields_.size(); ++i) j[fields_[i].key] = ops_[i].json(v);
    return j;
  }

 private:
  // `get` is a generic lambda returning a reference to the field, usable on T& and const T&.
  template <class V, class G>
  FieldBuilder<V> add(std::string key, G get) {
    FieldInfo& f = fields_.emplace_back();
    f.key = std::move(key);
    f.kind = kind_of<V>();
    if constexpr (NamedEnum<V>) f.one_of = names_of(enum_names(V{}));
    Ops& o = ops_.emplace_back();
    o.parse = [get](T& t, const Node& n, const FieldInfo& fi, const std::string& p) { parse_field(n, fi, p, get(t)); };
    o.dump = [get](const T& t, const FieldInfo& fi, YamlWriter& w, int depth) {
      w.line(depth, fi.key + ": " + yaml_of(get(t)), fi.comment());
    };
    o.equal = [get](const T& a, const T& b) { return get(a) == get(b); };
    o.json = [get](const T& t) {
      if constexpr (TypedString<V>) return nlohmann::json(string_of(get(t)));
      else return nlohmann::json(get(t));
    };
    return FieldBuilder<V>(f, o, std::function<V&(T&)>(get));
  }
  // A section reached by `get` (as add's).
  template <class S, class G>
  void add_section(std::string key, const Schema<S>& sub, G get) {
    FieldInfo& f = fields_.emplace_back();
    f.key = std::move(key);
    f.kind = FieldKind::Section;
    f.section = &sub;
    f.doc = sub.title();
    f.required = sub.has_required();
    Ops& o = ops_.emplace_back();
    o.parse = [get, &sub](T& t, const Node& n, const FieldInfo&, const std::string& p) { sub.parse_into(get(t), n, p); };
    o.dump = [get, &sub](const T& t, const FieldInfo& fi, YamlWriter& w, int depth) {
      w.line(depth, fi.key + ":", fi.doc);
      sub.dump_into(get(t), w, depth + 1);
    };
    o.equal = [get, &sub](const T& a, const T& b) { return sub.equal(get(a), get(b)); };
    o.json = [get, &sub](const T& t) { return sub.to_json(get(t)); };
  }
  // Parses one value: a typed string as the string (checked against the allowed names) then its type.
  template <class V>
  static void parse_field(const Node& n, const FieldInfo& fi, const std::string& p, V& out) {
    if constexpr (TypedString<V>) {
      std::string text;
      parse_value(n, fi, p, text);
      if constexpr (NamedEnum<V>) out = *find_value(enum_names(V{}), text);  // parse_value checked the name
      else parse_config_text(text, out, ConfigErrorInfo{n.file, p, n.line, text, "", ""});
    } else {
      parse_value(n, fi, p, out);
    }
  }

  std::deque<Ops> ops_;
  std::vector<std::function<void(const T&, const CheckContext&)>> checks_;
};

// Applies `--set` overrides to a document before validation. Each path must exist in `schema`
// (did-you-mean otherwise); the value is YAML (`[4, 4]` for a list). A section set to a mapping
// merges into it; anything else replaces the key.
void apply_overrides(Node& root, const SchemaBase& schema, const std::vector<Override>& overrides);

}  // namespace tpusim::config
