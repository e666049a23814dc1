// The constraint language of sweep files: one boolean expression over axis values per line of
// `constraints:`; a point runs only when every constraint is true. Deliberately tiny:
//
//   expr   := or                 or   := and ('or' and)*        and := not ('and' not)*
//   not    := 'not' not | cmp    cmp  := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
//   sum    := prod (('+'|'-') prod)*                            prod := unary (('*'|'/'|'%') unary)*
//   unary  := '-' unary | atom   atom := NUMBER | 'string' | "string" | true | false | NAME | '(' expr ')'
//
// NAME is an axis name; its value is a number when the axis value reads as one, else a string
// (lists such as [true, true] compare as their YAML text); `true`/`false`, literals or axis values,
// are 1/0. Comparisons give 1 or 0; `and`/`or`/`not` take numbers (non-zero is true). Mixing a
// string with arithmetic or with an ordering comparison is an error; == and != between a string and
// a number are simply false/true.
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::sweep {

// A value in an expression.
struct ExprValue {
  bool is_number = true;
  double number = 0;
  std::string text;  // when !is_number
};

// A parse or evaluation error; `column` is 0-based in the expression text (parse errors only).
class ExprError : public std::runtime_error {
 public:
  ExprError(const std::string& what, size_t column) : std::runtime_error(what), column_(column) {}
  size_t column() const { return column_; }

 private:
  size_t column_;
};

class Constraint {
 public:
  // Parses `text`; every name must be one of `names` (ExprError with "did you mean" otherwise).
  static Constraint parse(const std::string& text, const std::vector<std::string>& names);
  // True when the expression is true for these values (indexed like `names` at parse time).
  // Throws ExprError on a type error.
  bool holds(const std::vector<ExprValue>& values) const;

  struct Node;  // the syntax tree (constraint.cc)
  Constraint(Constraint&&) noexcept;
  Constraint& operator=(Constraint&&) noexcept;
  ~Constraint();

 private:
  Constraint() = default;
  std::unique_ptr<Node> root_;
};

// The value of an axis in expressions: a number when `text` reads as one.
ExprValue expr_value(const std::string& text);

}  // namespace tpusim::sweep
