#include "workloads/data/dataset_file.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/suggest.h"

namespace tpusim::data {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLengthRule = "must be a token count: an integer >= 1";

bool has_length_extension(std::string_view path) {
  for (const char* ext : kLengthFileExtensions)
    if (path.ends_with(ext)) return true;
  return false;
}

std::string extension_of(const std::string& path) { return fs::path(path).extension().string(); }

std::string names_list() {
  std::vector<std::string> names(std::begin(kLengthFieldNames), std::end(kLengthFieldNames));
  return config::join(names);
}

[[noreturn]] void fail_at(const std::string& origin, int line, const std::string& field, std::string value, std::string rule,
                          std::string suggestion = {}) {
  throw ConfigError({origin, field, line, std::move(value), std::move(rule), std::move(suggestion)});
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A length as written in a text cell or a JSON number: digits only, 1..2^32-1.
std::optional<uint32_t> as_length(std::string_view s) {
  uint64_t v = 0;
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v == 0 || v > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(v);
}

bool is_integer_text(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

uint32_t checked_length(std::string_view cell, const std::string& origin, int line, const std::string& field) {
  if (auto v = as_length(cell)) return *v;
  std::string why = kLengthRule;
  if (cell.empty()) why = "is empty; each example needs a token count (an integer >= 1)";
  else if (cell.front() == '-') why = "is negative; " + why;
  else if (is_integer_text(cell) && !std::all_of(cell.begin(), cell.end(), [](char c) { return c == '0'; }))
    why = "is larger than 4294967295; " + why;
  else if (is_integer_text(cell)) why = "is zero; " + why;
  fail_at(origin, line, field, std::string(cell), why);
}

// Calls f(line_text, line_number) for every line (without its '\n'); memchr keeps 1M lines fast.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    const size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    f(text.substr(pos, end - pos), ++line);
    pos = end + 1;
  }
}

// ---- JSON list: [12, 87, ...] ----
// Scanned by hand rather than with a JSON library so that a bad element is reported with its line
// and column, and a million lengths load in milliseconds.
std::vector<uint32_t> parse_json_list(std::string_view text, const std::string& origin) {
  std::vector<uint32_t> out;
  size_t i = 0;
  int line = 1;
  size_t line_start = 0;
  auto column = [&](size_t at) { return "column " + std::to_string(at - line_start + 1); };
  auto skip_ws = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) {
      if (text[i] == '\n') ++line, line_start = i + 1;
      ++i;
    }
  };
  skip_ws();
  if (i >= text.size() || text[i] != '[')
    fail_at(origin, line, i < text.size() ? column(i) : "", "", "a .json dataset must be a JSON list of token lengths, e.g. [12, 87, 40]",
            "for JSON Lines (one example object per line) name the file .jsonl");
  ++i;
  skip_ws();
  if (i < text.size() && text[i] == ']') {
    ++i;
  } else {
    for (;;) {
      skip_ws();
      const size_t start = i;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == '+' ||
                                 text[i] == '.' || text[i] == '"'))
        ++i;
      std::string_view cell = text.substr(start, i - start);
      if (cell.empty()) fail_at(origin, line, column(start), "", "expected a token length (an integer >= 1) in the list");
      out.push_back(checked_length(cell, origin, line, column(start)));
      skip_ws();
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < text.size() && text[i] == ']') {
        ++i;
        break;
      }
      fail_at(origin, line, i < text.size() ? column(i) : "", "", "expected ',' or ']' after a length (the file ends or has other text here)");
    }
  }
  skip_ws();
  if (i != text.size()) fail_at(origin, line, column(i), "", "unexpected text after the closing ']'");
  return out;
}

// ---- JSON Lines: {"length": 87, ...} per line ----

// The fast path: a SAX pass that builds no document and notes only the candidate fields of the
// top-level object (an integer, or the element count of a list). A DOM parse per line took 0.8 s for
// a million lines; this takes a third of that. Anything unusual returns false and the line is parsed
// again with a DOM, which words the error.
class LengthFieldSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit LengthFieldSax(const std::string& field) : field_(field) {}
  void reset() { depth_ = 0, best_ = kNone, value_ = 0, counting_ = false, ok_ = true, is_object_ = false; }
  // The chosen field's length, when the line is an object with a usable candidate field.
  std::optional<uint32_t> result() const {
    if (!ok_ || !is_object_ || best_ == kNone || value_ == 0 || value_ > std::numeric_limits<uint32_t>::max()) return std::nullopt;
    return static_cast<uint32_t>(value_);
  }

  bool null() override { return scalar(false, 0); }
  bool boolean(bool) override { return scalar(false, 0); }
  bool number_integer(number_integer_t v) override { return scalar(v > 0, v > 0 ? uint64_t(v) : 0); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(true, v); }
  bool number_float(number_float_t, const string_t&) override { return scalar(false, 0); }
  bool string(string_t&) override { return scalar(false, 0); }
  bool binary(binary_t&) override { return scalar(false, 0); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) is_object_ = true;
    if (depth_ == 1 && current_ != kNone) ok_ = false;  // a candidate field holding an object: an error
    return open();
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && current_ != kNone) {
      counting_ = true;
      count_ = 0;
    }
    return open();
  }
  bool end_array() override {
    if (depth_ == 2 && counting_) {
      counting_ = false;
      take(current_, count_);
    }
    return close();
  }
  bool key(string_t& k) override {
    if (depth_ == 1) current_ = rank(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return ok_ = false; }

 private:
  static constexpr int kNone = 1 << 20;
  int rank(const std::string& k) const {
    if (!field_.empty()) return k == field_ ? 0 : kNone;
    for (int i = 0; i < int(std::size(kLengthFieldNames)); ++i)
      if (k == kLengthFieldNames[i]) return i;
    return kNone;
  }
  void take(int rank, uint64_t v) {
    if (rank < best_) best_ = rank, value_ = v;
  }
  bool open() {
    if (depth_ == 2 && counting_) ++count_;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  bool scalar(bool positive_integer, uint64_t v) {
    if (depth_ == 2 && counting_) ++count_;
    if (depth_ == 1 && current_ != kNone) {
      if (!positive_integer) return ok_ = false;  // the DOM pass words the error
      take(current_, v);
    }
    return true;
  }

  const std::string& field_;
  int depth_ = 0, current_ = kNone, best_ = kNone;
  uint64_t value_ = 0, count_ = 0;
  bool counting_ = false, ok_ = true, is_object_ = false;
};

std::vector<uint32_t> parse_json_lines(std::string_view text, const std::string& origin, const std::string& field) {
  std::vector<uint32_t> out;
  LengthFieldSax sax(field);
  for_each_line(text, [&](std::string_view raw, int line) {
    const std::string_view s = trim(raw);
    if (s.empty()) return;
    sax.reset();
    if (nlohmann::json::sax_parse(s.begin(), s.end(), &sax) && sax.result()) {
      out.push_back(*sax.result());
      return;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(s);
    } catch (const nlohmann::json::parse_error& e) {
      fail_at(origin, line, "", "", std::string("is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) fail_at(origin, line, "", "", "each line of a JSON Lines dataset must be an object, e.g. {\"length\": 87}");
    const nlohmann::json* v = nullptr;
    std::string name = field;
    if (!field.empty()) {
      if (auto it = j.find(field); it != j.end()) v = &*it;
      if (!v) {
        std::vector<std::string> keys;
        for (const auto& [k, x] : j.items()) keys.push_back(k);
        fail_at(origin, line, field, "", "missing field (named by #" + field + " in the dataset reference)",
                config::suggest(field, keys, "fields of this line"));
      }
    } else {
      for (const char* n : kLengthFieldNames)
        if (auto it = j.find(n); it != j.end()) {
          v = &*it;
          name = n;
          break;
        }
      if (!v)
        fail_at(origin, line, "", "", "has none of the token-count fields " + names_list(),
                "name the field in the reference: " + origin + "#FIELD");
    }
    if (v->is_array()) {
      if (v->empty()) fail_at(origin, line, name, "[]", "is an empty list; every example needs >= 1 token");
      out.push_back(static_cast<uint32_t>(std::min<size_t>(v->size(), std::numeric_limits<uint32_t>::max())));
    } else if (v->is_number_integer()) {
      out.push_back(checked_length(v->dump(), origin, line, name));
    } else {
      fail_at(origin, line, name, v->dump(), std::string(kLengthRule) + " (or a list such as input_ids, whose length counts)");
    }
  });
  return out;
}

// ---- Text / CSV / TSV: one length per line, or a column ----

// Cells of a line; double-quoted cells may hold the separator ("" is a quote). Quoted newlines are not
// supported (one example per line).
std::vector<std::string_view> split_cells(std::string_view line, char sep) {
  std::vector<std::string_view> cells;
  size_t i = 0;
  for (;;) {
    size_t start = i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (i < line.size() && !(line[i] == '"' && (i + 1 >= line.size() || line[i + 1] != '"'))) i += (line[i] == '"') ? 2 : 1;
      std::string_view inner = line.substr(start + 1, std::min(i, line.size()) - start - 1);
      if (i < line.size()) ++i;  // closing quote
      while (i < line.size() && line[i] != sep) ++i;
      cells.push_back(trim(inner));
    } else {
      while (i < line.size() && line[i] != sep) ++i;
      cells.push_back(trim(line.substr(start, i - start)));
    }
    if (i >= line.size()) break;
    ++i;  // separator
  }
  return cells;
}

std::vector<uint32_t> parse_columns(std::string_view text, const std::string& origin, const std::string& field, char sep) {
  std::vector<uint32_t> out;
  std::optional<size_t> col;
  std::string col_name;
  std::vector<std::string> header;
  int header_line = 0;
  bool first = true;
  for_each_line(text, [&](std::string_view raw, int line) {
    if (trim(raw).empty()) return;
    const std::vector<std::string_view> cells = split_cells(raw, sep);
    if (first) {
      first = false;
      // The first line is a header when any of its cells is not an integer.
      const bool is_header = std::any_of(cells.begin(), cells.end(), [](std::string_view c) { return !is_integer_text(c); });
      if (is_header) {
        header_line = line;
        for (auto c : cells) header.emplace_back(c);
        auto find = [&](const std::string& n) -> std::optional<size_t> {
          for (size_t k = 0; k < header.size(); ++k)
            if (header[k] == n) return k;
          return std::nullopt;
        };
        if (!field.empty()) {
          col = find(field);
          if (!col) fail_at(origin, line, "", field, "is not a column of the header line", config::suggest(field, header, "columns"));
          col_name = field;
        } else {
          for (const char* n : kLengthFieldNames)
            if ((col = find(n))) {
              col_name = n;
              break;
            }
        }
        return;  // a column without a known name is chosen on the first data line
      }
      if (!field.empty()) fail_at(origin, line, "", field, "names a column, but the file has no header line (its first line is all numbers)");
    }
    if (!col) {
      // No named column: the only numeric one.
      std::vector<size_t> numeric;
      for (size_t k = 0; k < cells.size(); ++k)
        if (is_integer_text(cells[k])) numeric.push_back(k);
      if (numeric.size() != 1) {
        const std::string cols = header.empty() ? std::to_string(cells.size()) + " columns" : "columns " + config::join(header);
        fail_at(origin, header_line ? header_line : line, "", "",
                numeric.empty() ? "has no numeric column (" + cols + ")"
                                : "has several numeric columns and none is named " + names_list() + " (" + cols + ")",
                header.empty() ? "add a header line naming the length column 'length'" : "name the column in the reference: " + origin + "#COLUMN");
      }
      col = numeric[0];
      col_name = header.empty() ? "column " + std::to_string(*col + 1) : header[*col];
    }
    if (*col >= cells.size())
      fail_at(origin, line, col_name, "", "the line has " + std::to_string(cells.size()) + " cells; the length is cell " + std::to_string(*col + 1));
    out.push_back(checked_length(cells[*col], origin, line, col_name));
  });
  return out;
}

// The closest files beside a path that does not exist.
std::string nearby_files_hint(const std::string& path) {
  std::error_code ec;
  fs::path dir = fs::path(path).parent_path();
  const std::string shown_dir = dir.empty() ? "." : dir.string();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) return "the directory '" + shown_dir + "' does not exist either";
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && has_length_extension(e.path().filename().string())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  const auto prefix = [&](const std::string& n) { return fs::path(path).parent_path().empty() ? n : (fs::path(path).parent_path() / n).string(); };
  if (auto c = config::closest(fs::path(path).filename().string(), names)) return "did you mean '" + prefix(*c) + "'?";
  if (names.empty()) return "no dataset files (" + std::string(".json, .jsonl, .txt, .csv") + ") in '" + shown_dir + "'";
  if (names.size() > 10) names.resize(10), names.push_back("...");
  return "dataset files in '" + shown_dir + "': " + config::join(names);
}

}  // namespace

bool is_file_ref(std::string_view ref) {
  if (ref.starts_with("file:")) return true;
  if (ref.find(':') != std::string_view::npos) return false;  // a synthetic spec
  const std::string_view path = ref.substr(0, ref.find('#'));
  return has_length_extension(path) || path.starts_with("/") || path.starts_with("./") || path.starts_with("../");
}

LengthFileRef split_file_ref(std::string_view ref) {
  if (ref.starts_with("file:")) ref.remove_prefix(5);
  LengthFileRef r;
  const size_t hash = ref.rfind('#');
  r.path = std::string(ref.substr(0, hash));
  if (hash != std::string_view::npos) r.field = std::string(ref.substr(hash + 1));
  return r;
}

std::string resolve_file_ref(std::string_view ref, const std::string& base_dir) {
  if (!is_file_ref(ref)) return std::string(ref);
  const LengthFileRef r = split_file_ref(ref);
  if (r.path.empty() || fs::path(r.path).is_absolute() || base_dir.empty()) return std::string(ref);
  std::string out = ref.starts_with("file:") ? "file:" : "";
  out += (fs::path(base_dir) / r.path).lexically_normal().string();
  if (!r.field.empty()) out += "#" + r.field;
  return out;
}

std::vector<uint32_t> parse_length_file(std::string_view text, const std::string& origin, const std::string& field) {
  const std::string ext = extension_of(origin);
  std::vector<uint32_t> out;
  if (ext == ".json") {
    if (!field.empty()) fail_at(origin, 0, "", "#" + field, "a .json dataset is a plain list of lengths and has no fields", "name a .jsonl file for examples with fields");
    out = parse_json_list(text, origin);
  } else if (ext == ".jsonl" || ext == ".ndjson") {
    out = parse_json_lines(text, origin, field);
  } else if (ext == ".tsv") {
    out = parse_columns(text, origin, field, '\t');
  } else {
    out = parse_columns(text, origin, field, ',');  // .csv, .txt (one column) and files named explicitly
  }
  if (out.empty()) fail_at(origin, 0, "", "", "has no examples (an empty dataset)");
  if (out.size() > kMaxExamples)
    fail_at(origin, 0, "", "", "has " + std::to_string(out.size()) + " examples; at most " + std::to_string(kMaxExamples) + " are supported");
  return out;
}

void require_length_file(const LengthFileRef& ref, const ErrorWhere& where) {
  std::error_code ec;
  if (ref.path.empty()) throw where.error(ref.path, "names no file", "write file:PATH or a path ending in .json, .jsonl, .txt or .csv");
  if (!fs::exists(ref.path, ec)) {
    throw where.error(ref.path,
                      "dataset file not found (a relative path is relative to the workload file's directory; for "
                      "--set and the embedded default workload, to the working directory)",
                      nearby_files_hint(ref.path));
  }
}

std::vector<uint32_t> read_length_file(const LengthFileRef& ref, const ErrorWhere& where) {
  std::error_code ec;
  require_length_file(ref, where);
  if (fs::is_directory(ref.path, ec)) throw ConfigError({ref.path, "", 0, "", "is a directory, not a dataset file", ""});
  // One read of the whole file: stdio with a known size is the fastest portable way.
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(ref.path.c_str(), "rb"), &std::fclose);
  if (!f) throw ConfigError({ref.path, "", 0, "", std::string("cannot be read: ") + std::strerror(errno), ""});
  std::string text;
  const auto size = fs::file_size(ref.path, ec);
  if (!ec) text.resize(size);
  const size_t got = ec ? 0 : std::fread(text.data(), 1, text.size(), f.get());
  if (ec || got != text.size() || std::ferror(f.get())) throw ConfigError({ref.path, "", 0, "", "cannot be read", ""});
  return parse_length_file(text, ref.path, ref.field);
}

}  // namespace tpusim::data
