#include "compiler/hlo/hlo_scanner.h"

#include <limits>
#include <vector>

#include "compiler/hlo/hlo_limits.h"

namespace tpusim::hlo {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

void Scanner::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++pos_;
}

void Scanner::skip_space(bool newlines) {
  while (!eof()) {
    const char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || (c == '\n' && newlines)) {
      advance();
    } else if (c == '/' && peek(1) == '*') {  // /*index=5*/ in long tuples
      const SourcePos start = here();
      advance();
      advance();
      while (!eof() && !(peek() == '*' && peek(1) == '/')) advance();
      if (eof()) throw_hlo_error(start, "/*", "comment is not closed; expected '*/'");
      advance();
      advance();
    } else if (c == '/' && peek(1) == '/') {
      while (!eof() && peek() != '\n') advance();
    } else {
      return;
    }
  }
}

bool Scanner::accept(char c, bool newlines) {
  skip_space(newlines);
  if (peek() != c || eof()) return false;
  advance();
  return true;
}

void Scanner::expect(char c, std::string_view expected) {
  if (!accept(c)) fail("is not what comes here; expected " + std::string(expected));
}

std::string_view Scanner::peek_name() const {
  size_t p = pos_;
  if (p < text_.size() && text_[p] == '%') ++p;
  const size_t start = p;
  while (p < text_.size() && is_name_char(text_[p])) ++p;
  return text_.substr(start, p - start);
}

bool Scanner::accept_word(std::string_view word) {
  skip_space();
  size_t p = pos_;
  if (text_.substr(p, word.size()) != word) return false;
  p += word.size();
  if (p < text_.size() && is_name_char(text_[p])) return false;
  while (pos_ < p) advance();
  return true;
}

std::string Scanner::name(std::string_view expected) {
  skip_space();
  if (peek() == '%') advance();
  const size_t start = pos_;
  while (!eof() && is_name_char(peek())) advance();
  if (pos_ == start) fail("is not a name; expected " + std::string(expected));
  return std::string(text_.substr(start, pos_ - start));
}

bool Scanner::at_integer() const {
  const char c = peek();
  return (c >= '0' && c <= '9') || (c == '-' && peek(1) >= '0' && peek(1) <= '9');
}

int64_t Scanner::integer(std::string_view expected) {
  skip_space();
  if (!at_integer()) fail("is not an integer; expected " + std::string(expected));
  const SourcePos start = here();
  const bool neg = peek() == '-';
  if (neg) advance();
  uint64_t v = 0;
  const uint64_t limit = uint64_t(std::numeric_limits<int64_t>::max()) + (neg ? 1 : 0);
  const size_t first = pos_;
  while (!eof() && peek() >= '0' && peek() <= '9') {
    const uint64_t d = uint64_t(peek() - '0');
    if (v > (limit - d) / 10)
      throw_hlo_error(start, std::string(text_.substr(first, pos_ - first + 1)), "is out of the int64 range");
    v = v * 10 + d;
    advance();
  }
  return neg ? int64_t(0 - v) : int64_t(v);
}

std::string Scanner::quoted(std::string_view expected) {
  skip_space();
  if (peek() != '"') fail("is not a quoted string; expected " + std::string(expected));
  const SourcePos start = here();
  advance();
  std::string s;
  while (true) {
    if (eof() || peek() == '\n') throw_hlo_error(start, "\"", "string is not closed; expected '\"' on the same line");
    char c = peek();
    advance();
    if (c == '"') return s;
    if (c == '\\') {
      if (eof()) continue;
      const char e = peek();
      advance();
      switch (e) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case '0': c = '\0'; break;
        default: c = e;  // \" \\ \' and anything else: the character itself
      }
    }
    s += c;
  }
}

std::string Scanner::scan_balanced(std::string_view expected, bool stop_at_top) {
  // The closing bracket awaited and where its opening one is (line, column: no per-bracket copies).
  struct Open {
    char close;
    int line, column;
  };
  std::vector<Open> open;
  const size_t start = pos_;
  while (!eof()) {
    const char c = peek();
    if (open.empty() && stop_at_top && (c == ',' || c == '\n')) break;
    if (c == '"') {
      quoted(expected);
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      if (open.size() >= size_t(kMaxNesting))
        fail_value(std::string(1, c), "nests deeper than " + std::to_string(kMaxNesting) +
                                          " brackets (the parser's limit, docs/hlo.md); expected a flatter value");
      open.push_back({c == '(' ? ')' : c == '[' ? ']' : '}', line_, column_});
    } else if (c == ')' || c == ']' || c == '}') {
      if (open.empty()) {
        if (stop_at_top) break;
        fail("has no opening bracket; expected " + std::string(expected));
      }
      if (c != open.back().close)
        fail("does not match the bracket opened at line " + std::to_string(open.back().line) + " column " +
             std::to_string(open.back().column) + "; expected '" + open.back().close + "'");
      open.pop_back();
      if (open.empty() && !stop_at_top) {
        advance();
        return std::string(text_.substr(start, pos_ - start));
      }
    }
    advance();
  }
  if (!open.empty())
    throw_hlo_error({file_, open.back().line, open.back().column, instruction}, std::string(1, text_[start]),
                    std::string("is not closed before the end of the file; expected '") + open.back().close + "'");
  return std::string(text_.substr(start, pos_ - start));
}

std::string Scanner::raw_value(std::string_view expected) {
  skip_space(false);
  std::string v = scan_balanced(expected, true);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.pop_back();
  if (v.empty()) fail("is not a value; expected " + std::string(expected));
  return v;
}

std::string Scanner::balanced(std::string_view expected) {
  skip_space();
  const char c = peek();
  if (c != '(' && c != '[' && c != '{') fail("is not an opening bracket; expected " + std::string(expected));
  std::string v = scan_balanced(expected, false);
  return v.substr(1, v.size() - 2);
}

std::string Scanner::token_here() const {
  if (eof()) return "";
  std::string_view n = peek_name();
  if (!n.empty()) return std::string(peek() == '%' ? "%" : "").append(n);  // append: GCC 12 warns falsely on operator+
  return std::string(1, peek());
}

void Scanner::fail(std::string rule, std::string suggestion) const {
  if (eof()) {
    const size_t e = rule.find("expected");
    rule = "the text ends here; " + (e == std::string::npos ? rule : rule.substr(e));
  }
  fail_value(token_here(), std::move(rule), std::move(suggestion));
}

void Scanner::fail_value(std::string value, std::string rule, std::string suggestion) const {
  throw_hlo_error(here(), std::move(value), std::move(rule), std::move(suggestion));
}

}  // namespace tpusim::hlo
