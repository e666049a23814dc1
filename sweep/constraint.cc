// A recursive-descent parser and a tree-walking evaluator for the grammar in constraint.h.
#include "sweep/constraint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "config/suggest.h"

namespace tpusim::sweep {

struct Constraint::Node {
  enum class Op { Number, String, Name, Neg, Not, And, Or, Add, Sub, Mul, Div, Mod, Eq, Ne, Lt, Le, Gt, Ge };
  Op op = Op::Number;
  ExprValue literal;      // Number, String
  size_t index = 0;       // Name: index into the values
  std::string name;       // Name, for messages
  std::unique_ptr<Node> a, b;
};

namespace {

using Node = Constraint::Node;
using Op = Node::Op;

struct Token {
  enum class Kind { Number, String, Name, Symbol, End } kind = Kind::End;
  std::string text;
  double number = 0;
  size_t column = 0;
};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.column = i;
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      const char* first = s.data() + i;
      auto [p, ec] = std::from_chars(first, s.data() + s.size(), t.number);
      if (ec != std::errc()) throw ExprError("bad number", i);
      t.kind = Token::Kind::Number;
      t.text = std::string(first, p);
      i += t.text.size();
    } else if (c == '\'' || c == '"') {
      const size_t close = s.find(c, i + 1);
      if (close == std::string::npos) throw ExprError("unterminated string", i);
      t.kind = Token::Kind::String;
      t.text = s.substr(i + 1, close - i - 1);
      i = close + 1;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.kind = Token::Kind::Name;
      t.text = s.substr(i, j - i);
      i = j;
    } else {
      static const char* kTwo[] = {"==", "!=", "<=", ">="};
      t.kind = Token::Kind::Symbol;
      for (const char* two : kTwo)
        if (s.compare(i, 2, two) == 0) t.text = two;
      if (t.text.empty()) {
        if (std::string("+-*/%<>()").find(c) == std::string::npos)
          throw ExprError(fmt::format("unexpected character '{}'", c), i);
        t.text = std::string(1, c);
      }
      i += t.text.size();
    }
    out.push_back(std::move(t));
  }
  Token end;
  end.column = s.size();
  out.push_back(end);
  return out;
}

// Bounds on an expression (docs/config-sweep.md): the parser and the evaluator recurse once per level
// of parentheses, `not` and unary minus and once per operator of a chain, so a hostile constraint
// (10,000 nested parentheses overflowed the stack) is refused instead.
constexpr size_t kMaxExprChars = 10000;
constexpr int kMaxExprDepth = 64;

class Parser {
 public:
  Parser(const std::string& text, const std::vector<std::string>& names) : toks_(checked_tokens(text)), names_(names) {}

  std::unique_ptr<Node> parse() {
    auto e = parse_or();
    if (peek().kind != Token::Kind::End) throw ExprError("unexpected '" + peek().text + "'", peek().column);
    return e;
  }

 private:
  const Token& peek() const { return toks_[pos_]; }
  bool accept(const char* text) {
    const Token& t = peek();
    if ((t.kind == Token::Kind::Symbol || t.kind == Token::Kind::Name) && t.text == text) {
      ++pos_;
      return true;
    }
    return false;
  }
  static std::unique_ptr<Node> binary(Op op, std::unique_ptr<Node> a, std::unique_ptr<Node> b) {
    auto n = std::make_unique<Node>();
    n->op = op;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  std::unique_ptr<Node> parse_or() {
    auto e = parse_and();
    while (accept("or")) e = binary(Op::Or, std::move(e), parse_and());
    return e;
  }
  std::unique_ptr<Node> parse_and() {
    auto e = parse_not();
    while (accept("and")) e = binary(Op::And, std::move(e), parse_not());
    return e;
  }
  // Counts one level of recursion for its lifetime; past kMaxExprDepth the expression is refused.
  struct Level {
    explicit Level(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxExprDepth)
        throw ExprError("nests deeper than " + std::to_string(kMaxExprDepth) + " levels of parentheses, not or unary minus",
                        p_.peek().column);
    }
    ~Level() { --p_.depth_; }
    Parser& p_;
  };
  static std::vector<Token> checked_tokens(const std::string& text) {
    if (text.size() > kMaxExprChars)
      throw ExprError("is longer than " + std::to_string(kMaxExprChars) + " characters", kMaxExprChars);
    return tokenize(text);
  }

  std::unique_ptr<Node> parse_not() {
    if (accept("not")) {
      Level level(*this);
      return binary(Op::Not, parse_not(), nullptr);
    }
    return parse_cmp();
  }
  std::unique_ptr<Node> parse_cmp() {
    auto e = parse_sum();
    static const std::pair<const char*, Op> kOps[] = {{"==", Op::Eq}, {"!=", Op::Ne}, {"<=", Op::Le},
                                                      {">=", Op::Ge}, {"<", Op::Lt},   {">", Op::Gt}};
    for (const auto& [text, op] : kOps)
      if (accept(text)) return binary(op, std::move(e), parse_sum());
    return e;
  }
  std::unique_ptr<Node> parse_sum() {
    auto e = parse_prod();
    while (true) {
      if (accept("+")) e = binary(Op::Add, std::move(e), parse_prod());
      else if (accept("-")) e = binary(Op::Sub, std::move(e), parse_prod());
      else return e;
    }
  }
  std::unique_ptr<Node> parse_prod() {
    auto e = parse_unary();
    while (true) {
      if (accept("*")) e = binary(Op::Mul, std::move(e), parse_unary());
      else if (accept("/")) e = binary(Op::Div, std::move(e), parse_unary());
      else if (accept("%")) e = binary(Op::Mod, std::move(e), parse_unary());
      else return e;
    }
  }
  std::unique_ptr<Node> parse_unary() {
    if (accept("-")) {
      Level level(*this);
      return binary(Op::Neg, parse_unary(), nullptr);
    }
    return parse_atom();
  }
  std::unique_ptr<Node> parse_atom() {
    const Token t = peek();
    auto n = std::make_unique<Node>();
    switch (t.kind) {
      case Token::Kind::Number:
        ++pos_;
        n->op = Op::Number;
        n->literal.number = t.number;
        return n;
      case Token::Kind::String:
        ++pos_;
        n->op = Op::String;
        n->literal = ExprValue{false, 0, t.text};
        return n;
      case Token::Kind::Name: {
        if (t.text == "true" || t.text == "false") {
          ++pos_;
          n->literal.number = t.text == "true" ? 1 : 0;
          return n;
        }
        if (t.text == "and" || t.text == "or" || t.text == "not") break;
        ++pos_;
        const auto it = std::find(names_.begin(), names_.end(), t.text);
        if (it == names_.end()) {
          const auto near = config::closest(t.text, names_);
          throw ExprError("unknown name '" + t.text + "' (axis names: " + config::join(names_) + ")" +
                              (near ? "; did you mean '" + *near + "'?" : ""),
                          t.column);
        }
        n->op = Op::Name;
        n->index = size_t(it - names_.begin());
        n->name = t.text;
        return n;
      }
      case Token::Kind::Symbol:
        if (t.text == "(") {
          Level level(*this);  // an error points at this parenthesis
          ++pos_;
          auto e = parse_or();
          if (!accept(")")) throw ExprError("expected ')'", peek().column);
          return e;
        }
        break;
      case Token::Kind::End: throw ExprError("the expression ends too early", t.column);
    }
    throw ExprError("unexpected '" + t.text + "'", t.column);
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  const std::vector<std::string>& names_;
};

std::string describe(const ExprValue& v) { return v.is_number ? fmt::format("{}", v.number) : "'" + v.text + "'"; }

ExprValue num(double x) { return ExprValue{true, x, {}}; }

ExprValue eval(const Node& n, const std::vector<ExprValue>& values) {
  auto number = [&](const Node& sub, const char* what) {
    const ExprValue v = eval(sub, values);
    if (!v.is_number) throw ExprError(fmt::format("{} needs numbers, got the string {}", what, describe(v)), 0);
    return v.number;
  };
  switch (n.op) {
    case Op::Number:
    case Op::String: return n.literal;
    case Op::Name: return values.at(n.index);
    case Op::Neg: return num(-number(*n.a, "'-'"));
    case Op::Not: return num(number(*n.a, "'not'") == 0);
    case Op::And: return num(number(*n.a, "'and'") != 0 && number(*n.b, "'and'") != 0);
    case Op::Or: return num(number(*n.a, "'or'") != 0 || number(*n.b, "'or'") != 0);
    case Op::Add: return num(number(*n.a, "'+'") + number(*n.b, "'+'"));
    case Op::Sub: return num(number(*n.a, "'-'") - number(*n.b, "'-'"));
    case Op::Mul: return num(number(*n.a, "'*'") * number(*n.b, "'*'"));
    case Op::Div:
    case Op::Mod: {
      const double x = number(*n.a, "'/' and '%'"), y = number(*n.b, "'/' and '%'");
      if (y == 0) throw ExprError("division by zero", 0);
      return num(n.op == Op::Div ? x / y : std::fmod(x, y));
    }
    case Op::Eq:
    case Op::Ne: {
      const ExprValue x = eval(*n.a, values), y = eval(*n.b, values);
      const bool eq = x.is_number == y.is_number && (x.is_number ? x.number == y.number : x.text == y.text);
      return num(n.op == Op::Eq ? eq : !eq);
    }
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge: {
      const ExprValue x = eval(*n.a, values), y = eval(*n.b, values);
      if (x.is_number != y.is_number)
        throw ExprError(fmt::format("cannot order {} and {} (a string and a number)", describe(x), describe(y)), 0);
      const int c = x.is_number ? (x.number < y.number ? -1 : x.number > y.number ? 1 : 0) : x.text.compare(y.text);
      const bool r = n.op == Op::Lt ? c < 0 : n.op == Op::Le ? c <= 0 : n.op == Op::Gt ? c > 0 : c >= 0;
      return num(r);
    }
  }
  return num(0);
}

}  // namespace

Constraint::Constraint(Constraint&&) noexcept = default;
Constraint& Constraint::operator=(Constraint&&) noexcept = default;
Constraint::~Constraint() = default;

Constraint Constraint::parse(const std::string& text, const std::vector<std::string>& names) {
  Constraint c;
  c.root_ = Parser(text, names).parse();
  return c;
}

bool Constraint::holds(const std::vector<ExprValue>& values) const {
  const ExprValue v = eval(*root_, values);
  if (!v.is_number) throw ExprError("the expression is the string " + describe(v) + ", not a truth value", 0);
  return v.number != 0;
}

ExprValue expr_value(const std::string& text) {
  double x = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+') ++first;
  auto [p, ec] = std::from_chars(first, last, x);
  if (first != last && ec == std::errc() && p == last && std::isfinite(x)) return num(x);
  if (text == "true" || text == "false") return num(text == "true");
  return ExprValue{false, 0, text};
}

}  // namespace tpusim::sweep
