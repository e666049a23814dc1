#include "config/tree.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>

#include "base/config_error.h"
#include "config/suggest.h"

namespace tpusim::config {

namespace fs = std::filesystem;

const Node* Node::find(std::string_view key) const {
  for (const auto& e : entries)
    if (e.key == key) return &e.value;
  return nullptr;
}

Node* Node::find(std::string_view key) {
  for (auto& e : entries)
    if (e.key == key) return &e.value;
  return nullptr;
}

Node& Node::set(const std::string& key, Node value, int key_line) {
  for (auto& e : entries) {
    if (e.key == key) {
      e.value = std::move(value);
      if (key_line > 0) e.line = key_line;
      return e.value;
    }
  }
  entries.push_back(Entry{key, key_line, std::move(value)});
  return entries.back().value;
}

bool Node::erase(std::string_view key) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.key == key; });
  if (it == entries.end()) return false;
  entries.erase(it);
  return true;
}

std::string Node::text() const {
  std::string s;
  switch (kind) {
    case Kind::Null: return "";
    case Kind::Scalar: s = scalar; break;
    case Kind::Sequence:
      s = "[";
      for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i].text();
      s += "]";
      break;
    case Kind::Map:
      s = "{";
      for (size_t i = 0; i < entries.size(); ++i) s += (i ? ", " : "") + entries[i].key + ": " + entries[i].value.text();
      s += "}";
      break;
  }
  constexpr size_t kMax = 80;  // an error message quotes the value, not a whole section
  if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
  return s;
}

namespace {

// Plain scalars that YAML flow syntax would read as something else (a mapping, a list, a comment,
// an anchor...) or not at all, are written double-quoted.
bool needs_quotes(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.front() == '-' || s.front() == '?') return true;
  return s.find_first_of(":#,[]{}&*!|>'\"%@`\n\t") != std::string::npos;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\t') {
      out += "\\t";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string Node::flow() const {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Scalar: return needs_quotes(scalar) ? quoted(scalar) : scalar;
    case Kind::Sequence: {
      std::string s = "[";
      for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i].flow();
      return s + "]";
    }
    case Kind::Map: {
      std::string s = "{";
      for (size_t i = 0; i < entries.size(); ++i)
        s += (i ? ", " : "") + (needs_quotes(entries[i].key) ? quoted(entries[i].key) : entries[i].key) + ": " +
             entries[i].value.flow();
      return s + "}";
    }
  }
  return {};
}

namespace {

// `nodes`: the nodes converted so far (the alias-expansion budget); `depth`: this node's nesting.
// The offset of the first byte of `s` that is not valid UTF-8 (RFC 3629: no overlong forms, no
// surrogates, at most U+10FFFF), or npos. yaml-cpp passes such bytes through from the file, and a
// config's strings end up in JSON (report.json, sweep results), which must be UTF-8.
size_t invalid_utf8_at(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0, n = s.size(); i < n;) {
    const unsigned c = p[i];
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      const unsigned b = p[i + k];
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return i;
    }
    i += len;
  }
  return std::string::npos;
}

void require_utf8(const std::string& text, const std::string& file, const std::string& path, int line, const char* what) {
  const size_t bad = invalid_utf8_at(text);
  if (bad == std::string::npos) return;
  char byte[8];
  std::snprintf(byte, sizeof(byte), "0x%02X", unsigned(static_cast<unsigned char>(text[bad])));
  throw ConfigError({file, path, line, "",
                     std::string(what) + " is not valid UTF-8 text (byte " + byte + " at offset " + std::to_string(bad) + ")",
                     "save the file as UTF-8"});
}

// A path too deep to read (a[0][0]... 64 levels down) as its start and end.
std::string deep_path(const std::string& path) {
  if (path.size() <= 60) return path;
  return path.substr(0, 30) + "..." + path.substr(path.size() - 20);
}

Node convert(const YAML::Node& y, const std::string& file, int line, const std::string& path, size_t& nodes,
             int depth) {
  if (depth > kMaxYamlDepth)
    throw ConfigError({file, deep_path(path), line > 0 ? line : y.Mark().line + 1, "",
                       "nests deeper than " + std::to_string(kMaxYamlDepth) + " levels (a recursive alias such as `a: &a [*a]`?)",
                       "flatten the structure; an alias may not contain itself"});
  if (++nodes > kMaxYamlNodes)
    throw ConfigError({file, path, line > 0 ? line : y.Mark().line + 1, "",
                       "expands to more than " + std::to_string(kMaxYamlNodes) + " values (aliases referring to aliases?)",
                       "write the values out, or use fewer nested aliases"});
  Node n;
  n.file = file;
  n.line = line > 0 ? line : y.Mark().line + 1;
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null: n.kind = Node::Kind::Null; break;
    case YAML::NodeType::Scalar:
      n.kind = Node::Kind::Scalar;
      n.scalar = y.Scalar();
      require_utf8(n.scalar, file, path, n.line, "the value");
      break;
    case YAML::NodeType::Sequence:
      n.kind = Node::Kind::Sequence;
      for (size_t i = 0; i < y.size(); ++i) n.items.push_back(convert(y[i], file, 0, path + "[" + std::to_string(i) + "]", nodes, depth + 1));
      break;
    case YAML::NodeType::Map:
      n.kind = Node::Kind::Map;
      for (auto it = y.begin(); it != y.end(); ++it) {
        const int key_line = it->first.Mark().line + 1;
        if (!it->first.IsScalar())
          throw ConfigError({file, path, key_line, "", "keys must be plain names, not lists or mappings", ""});
        const std::string key = it->first.Scalar();
        require_utf8(key, file, path, key_line, "a key");
        const std::string key_path = path.empty() ? key : path + "." + key;
        if (n.find(key))
          throw ConfigError({file, key_path, key_line, "", "duplicate key (it is already set above in this mapping)", ""});
        n.entries.push_back(Entry{key, key_line, convert(it->second, file, key_line, key_path, nodes, depth + 1)});
      }
      break;
  }
  return n;
}

}  // namespace

namespace {

// Where each document of a stream starts, and where its root node is (nothing else is kept).
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts, roots;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { node(m); }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { node(m); }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (roots.size() < starts.size()) roots.push_back(m);
  }
};

// The documents of `text`: at most two are read (a second one is an error), because yaml-cpp's
// LoadAll never returns on some malformed streams: a stray flow token (`, a`, found by the config
// fuzz target) ends every document without being consumed, so it yields empty documents forever,
// allocating as it goes. A document that starts where the one before it started is that case: a
// syntax error at the token.
struct Documents {
  YAML::Node first;
  int second_line = 0;  // 1-based line where a second document starts; 0: none
};

Documents load_documents(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts marks;
  while (marks.starts.size() < 2 && parser.HandleNextDocument(marks)) {
  }
  if (marks.starts.size() == 2 && marks.starts[1].pos <= marks.starts[0].pos)
    throw ConfigError({file, "", marks.starts[1].line + 1, "", "YAML syntax error: unexpected token outside a flow collection",
                       "a ',', ']' or '}' without its '[' or '{'?"});
  Documents d;
  d.first = YAML::Load(text);  // the first document only
  if (marks.starts.size() == 2) d.second_line = (marks.roots.size() == 2 ? marks.roots[1] : marks.starts[1]).line + 1;
  return d;
}

// `nodes`: set to the tree's values after alias expansion (convert() counts them against kMaxYamlNodes).
Node parse_yaml_uncached(const std::string& text, const std::string& file, size_t& nodes) {
  Documents docs;
  try {
    docs = load_documents(text, file);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own guard (its message is "bad file")
    throw ConfigError({file, "", e.mark.is_null() ? 0 : e.mark.line + 1, "",
                       "nests deeper than " + std::to_string(kMaxYamlDepth) + " levels", "flatten the structure"});
  } catch (const YAML::Exception& e) {
    throw ConfigError({file, "", e.mark.is_null() ? 0 : e.mark.line + 1, "", "YAML syntax error: " + e.msg, ""});
  }
  if (docs.second_line)  // a second document would be silently ignored
    throw ConfigError({file, "", docs.second_line, "---", "a config file holds one YAML document; this is a second one",
                       "remove the `---` and what follows, or put it in its own file"});
  const YAML::Node& y = docs.first;
  nodes = 0;
  Node n = convert(y, file, 0, "", nodes, 0);
  if (n.kind == Node::Kind::Map && n.line <= 0) n.line = 1;
  return n;
}

// The last parses, most recent first. Small: a run reads a handful of files (a workload, a slice,
// its chip file); a sweep or a notebook reads the same ones again.
class ParseCache {
 public:
  std::optional<Node> find(const std::string& text, const std::string& file) {
    const std::lock_guard lock(mu_);
    for (size_t i = 0; i < kept_.size(); ++i)
      if (kept_[i].file == file && kept_[i].text == text) {
        std::rotate(kept_.begin(), kept_.begin() + std::ptrdiff_t(i), kept_.begin() + std::ptrdiff_t(i) + 1);
        return kept_.front().tree;
      }
    return std::nullopt;
  }
  void keep(const std::string& text, const std::string& file, const Node& tree, size_t nodes) {
    // A large file, or a small one whose aliases expand (kMaxYamlNodes): not worth the memory.
    if (text.size() > kMaxTextBytes || nodes > kMaxTreeNodes) return;
    const std::lock_guard lock(mu_);
    if (kept_.size() == kEntries) kept_.pop_back();
    kept_.insert(kept_.begin(), {text, file, tree});
  }

 private:
  static constexpr size_t kEntries = 16;
  static constexpr size_t kMaxTextBytes = 1 << 16;
  static constexpr size_t kMaxTreeNodes = 1 << 14;  // the shipped configs have under 2,000
  struct Kept {
    std::string text, file;
    Node tree;
  };
  std::mutex mu_;
  std::vector<Kept> kept_;
};

}  // namespace

Node parse_yaml(const std::string& text, const std::string& file) {
  static ParseCache cache;
  if (std::optional<Node> hit = cache.find(text, file)) return std::move(*hit);
  size_t nodes = 0;
  Node n = parse_yaml_uncached(text, file, nodes);
  cache.keep(text, file, n, nodes);
  return n;
}

namespace {

std::string read_file_or(const std::string& path, const std::function<std::string()>& not_found_suggestion) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) {
    const std::vector<std::string> yamls = yaml_files_in(path);
    throw ConfigError({path, "", 0, "", "is a directory, not a file",
                       yamls.empty() ? "give the path of a YAML file" : "give a file; in it: " + join(yamls)});
  }
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw ConfigError({path, "", 0, "", "is not a regular file (a device or a pipe)", "give the path of a YAML file"});
  if (!fs::is_regular_file(st)) throw ConfigError({path, "", 0, "", "file not found", not_found_suggestion()});
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError({path, "", 0, "", "cannot be read (permission denied?)", ""});
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string read_file(const std::string& path, const std::string& not_found_suggestion) {
  return read_file_or(path, [&] { return not_found_suggestion; });
}

std::string read_config_file(const std::string& path, const std::string& configs_subdir) {
  return read_file_or(path, [&] { return missing_file_hint(path, configs_subdir); });
}

void merge_into(Node& base, const Node& over) {
  if (base.kind != Node::Kind::Map || over.kind != Node::Kind::Map) {
    base = over;
    return;
  }
  for (const auto& e : over.entries) {
    if (Node* b = base.find(e.key); b && b->is_map() && e.value.is_map())
      merge_into(*b, e.value);
    else
      base.set(e.key, e.value, e.line);
  }
  base.file = over.file;  // the merged node lives where the overriding mapping was written
  base.line = over.line;
}

Node& parent_of(Node& root, std::string_view path, const std::string& file, int line) {
  if (root.kind != Node::Kind::Map) root.kind = Node::Kind::Map;
  Node* cur = &root;
  for (size_t start = 0, dot; (dot = path.find('.', start)) != std::string_view::npos; start = dot + 1) {
    const std::string part(path.substr(start, dot - start));
    Node* next = cur->find(part);
    if (!next || !next->is_map()) {
      Node m;  // a section the file omitted: the write creates it
      m.kind = Node::Kind::Map;
      m.file = file;
      m.line = line;
      next = &cur->set(part, std::move(m), line);
    }
    cur = next;
  }
  return *cur;
}

void set_origin(Node& n, const std::string& file, int line) {
  n.file = file;
  n.line = line;
  for (auto& i : n.items) set_origin(i, file, line);
  for (auto& e : n.entries) {
    e.line = line;
    set_origin(e.value, file, line);
  }
}

std::vector<std::string> yaml_files_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    if (de.is_regular_file() && (de.path().extension() == ".yaml" || de.path().extension() == ".yml"))
      out.push_back((fs::path(dir) / de.path().filename()).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string file_stem(const std::string& path) { return fs::path(path).stem().string(); }

std::string missing_file_hint(const std::string& path, const std::string& configs_subdir) {
  std::vector<std::string> dirs = {fs::path(path).parent_path().string(), "configs/" + configs_subdir};
#ifdef TPUSIM_SOURCE_DIR
  dirs.push_back(std::string(TPUSIM_SOURCE_DIR) + "/configs/" + configs_subdir);
#endif
  for (const auto& dir : dirs) {
    if (dir.empty()) continue;
    const std::vector<std::string> files = yaml_files_in(dir);
    if (files.empty()) continue;
    std::vector<std::string> stems;
    for (const auto& f : files) stems.push_back(file_stem(f));
    if (auto c = closest(file_stem(path), stems))
      return "did you mean '" + files[std::find(stems.begin(), stems.end(), *c) - stems.begin()] + "'?";
    return "available: " + join(files);
  }
  return {};
}

namespace {

constexpr int kMaxIncludeDepth = 16;
// Every inclusion counts, the same file's too: eight files each including the next eight times are
// 8^8 loads (an include bomb, like a YAML alias bomb; it ran for hours). The shipped configs make
// at most 3.
constexpr size_t kMaxIncludes = 256;

struct IncludeCtx {
  const std::map<std::string, std::string>* embedded;
  std::vector<std::string> stack;  // files being included, to report cycles
  size_t loads = 0;                // inclusions so far (kMaxIncludes)
};

void resolve(Node& n, const std::string& dir, const std::string& path, IncludeCtx& ctx);

// Loads one included file (relative to `dir`), itself resolved, as a mapping.
Node load_include(const Node& inc, const Node& owner, const std::string& dir, const std::string& path, IncludeCtx& ctx) {
  const std::string where = path.empty() ? "include" : path + ".include";
  if (inc.kind != Node::Kind::Scalar || inc.scalar.empty())
    throw ConfigError({inc.file, where, inc.line, inc.text(), "must be a file path (or a list of file paths)", ""});
  const std::string& written = inc.scalar;
  if (++ctx.loads > kMaxIncludes)
    throw ConfigError({inc.file, where, inc.line, written,
                       "is one inclusion too many: a config includes at most " + std::to_string(kMaxIncludes) +
                           " files in all, every inclusion of the same file counted (files including each other "
                           "several times over?)",
                       "include each file once"});
  const std::string resolved = (fs::path(dir) / written).lexically_normal().string();
  std::string text;
  std::string file = resolved;
  bool found = false;
  if (ctx.embedded) {
    for (const std::string& key : {written, resolved}) {
      if (auto it = ctx.embedded->find(key); it != ctx.embedded->end()) {
        text = it->second;
        found = true;
        break;
      }
    }
  }
  if (!found) {
    std::error_code ec;
    if (fs::is_directory(resolved, ec)) {
      const std::vector<std::string> in = yaml_files_in(resolved);
      throw ConfigError({inc.file, where, inc.line, written, "is a directory ('" + resolved + "'), not a file",
                         in.empty() ? "include a YAML file" : "include a file; in it: " + join(in)});
    }
    if (!fs::is_regular_file(resolved, ec)) {
      std::vector<std::string> near;
      for (const auto& f : yaml_files_in(fs::path(resolved).parent_path().string())) near.push_back(f);
      std::string hint = near.empty() ? "paths are relative to the including file's directory"
                                      : suggest(resolved, near, "files there");
      throw ConfigError({inc.file, where, inc.line, written, "included file not found (looked for '" + resolved + "')", hint});
    }
    text = read_file(resolved);
  }
  if (std::find(ctx.stack.begin(), ctx.stack.end(), file) != ctx.stack.end() || ctx.stack.size() >= kMaxIncludeDepth)
    throw ConfigError({inc.file, where, inc.line, written, "include cycle: " + join(ctx.stack, " -> ") + " -> " + file, ""});
  Node sub = parse_yaml(text, file);
  if (sub.kind == Node::Kind::Null) sub.kind = Node::Kind::Map;  // an empty file includes nothing
  if (!sub.is_map())
    throw ConfigError({file, "", sub.line, "", "an included file must contain a mapping (key: value lines)",
                       "it is included by " + owner.file + ":" + std::to_string(inc.line)});
  ctx.stack.push_back(file);
  resolve(sub, fs::path(file).parent_path().string(), path, ctx);
  ctx.stack.pop_back();
  return sub;
}

void resolve(Node& n, const std::string& dir, const std::string& path, IncludeCtx& ctx) {
  if (n.kind == Node::Kind::Sequence) {
    for (size_t i = 0; i < n.items.size(); ++i) resolve(n.items[i], dir, path + "[" + std::to_string(i) + "]", ctx);
    return;
  }
  if (!n.is_map()) return;
  for (auto& e : n.entries)
    if (e.key != "include") resolve(e.value, dir, path.empty() ? e.key : path + "." + e.key, ctx);
  const Node* inc = n.find("include");
  if (!inc) return;
  std::vector<const Node*> paths;
  if (inc->kind == Node::Kind::Sequence)
    for (const auto& i : inc->items) paths.push_back(&i);
  else
    paths.push_back(inc);
  Node merged;
  merged.kind = Node::Kind::Map;
  for (const Node* p : paths) merge_into(merged, load_include(*p, n, dir, path, ctx));
  Node local = n;
  local.erase("include");
  merge_into(merged, local);  // the including mapping's own keys win
  n = std::move(merged);
}

}  // namespace

void resolve_includes(Node& root, const std::string& base_dir, const std::map<std::string, std::string>* embedded) {
  IncludeCtx ctx{embedded, {}};
  if (!root.file.empty()) ctx.stack.push_back(root.file);
  resolve(root, base_dir, "", ctx);
}

}  // namespace tpusim::config
