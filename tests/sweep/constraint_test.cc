// The constraint language: precedence, types, and errors with columns.
#include <gtest/gtest.h>

#include "sweep/constraint.h"

namespace tpusim::sweep {
namespace {

const std::vector<std::string> kNames = {"rows", "count", "padding", "wrap"};

bool holds(const std::string& expr, const std::vector<std::string>& values) {
  std::vector<ExprValue> v;
  for (const auto& s : values) v.push_back(expr_value(s));
  return Constraint::parse(expr, kNames).holds(v);
}

const std::vector<std::string> kPoint = {"128", "2", "multiple_of:32", "true"};

TEST(Constraint, ArithmeticAndComparisons) {
  EXPECT_TRUE(holds("rows * count == 256", kPoint));
  EXPECT_TRUE(holds("rows + count * 2 == 132", kPoint));  // * binds tighter than +
  EXPECT_TRUE(holds("(rows + count) * 2 == 260", kPoint));
  EXPECT_TRUE(holds("rows / count == 64 and rows % 3 == 2", kPoint));
  EXPECT_TRUE(holds("-count < 0", kPoint));
  EXPECT_TRUE(holds("rows >= 128 and rows <= 128 and rows != 64", kPoint));
  EXPECT_FALSE(holds("rows > 128", kPoint));
  EXPECT_TRUE(holds("1.5e2 > rows", kPoint));
}

TEST(Constraint, BooleanOperatorsAndPrecedence) {
  EXPECT_TRUE(holds("rows == 64 or count == 2", kPoint));
  EXPECT_FALSE(holds("rows == 64 and count == 2", kPoint));
  EXPECT_TRUE(holds("not rows == 64", kPoint));                     // not binds looser than ==
  EXPECT_TRUE(holds("rows == 64 and count == 1 or count == 2", kPoint));  // and before or
  EXPECT_FALSE(holds("rows == 64 and (count == 1 or count == 2)", kPoint));
  EXPECT_TRUE(holds("wrap", kPoint));  // true reads as 1
  EXPECT_TRUE(holds("wrap == true and not false", kPoint));
}

TEST(Constraint, Strings) {
  EXPECT_TRUE(holds("padding == 'multiple_of:32'", kPoint));
  EXPECT_TRUE(holds("padding != \"longest\"", kPoint));
  EXPECT_FALSE(holds("padding == 32", kPoint));  // a string is never equal to a number
  EXPECT_TRUE(holds("padding > 'longest'", kPoint));  // strings order lexicographically
}

std::string parse_error(const std::string& expr, size_t* column = nullptr) {
  try {
    Constraint::parse(expr, kNames);
  } catch (const ExprError& e) {
    if (column) *column = e.column();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << expr;
  return "";
}

// Issue 15: 10,000 nested parentheses overflowed the stack of the recursive-descent parser.
TEST(Constraint, NestingAndLengthAreBounded) {
  const std::string deep = std::string(4000, '(') + "rows" + std::string(4000, ')') + " > 1";
  size_t column = 0;
  EXPECT_EQ(parse_error(deep, &column), "nests deeper than 64 levels of parentheses, not or unary minus");
  EXPECT_EQ(column, 64u);
  std::string nots;
  for (int i = 0; i < 100; ++i) nots += "not ";
  EXPECT_EQ(parse_error(nots + "wrap"), "nests deeper than 64 levels of parentheses, not or unary minus");
  EXPECT_EQ(parse_error(std::string(100, '-') + "rows > 1"), "nests deeper than 64 levels of parentheses, not or unary minus");
  EXPECT_TRUE(holds(std::string(60, '(') + "rows" + std::string(60, ')') + " == 128", kPoint));
  std::string chain = "rows";
  while (chain.size() < 10001) chain += " + 1";
  EXPECT_EQ(parse_error(chain), "is longer than 10000 characters");
}

std::string eval_error(const std::string& expr) {
  try {
    holds(expr, kPoint);
  } catch (const ExprError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << expr;
  return "";
}

TEST(Constraint, ParseErrorsSayWhereAndSuggest) {
  size_t col = 0;
  EXPECT_NE(parse_error("rowz > 1", &col).find("did you mean 'rows'"), std::string::npos);
  EXPECT_EQ(col, 0u);
  EXPECT_NE(parse_error("rows > ", &col).find("ends too early"), std::string::npos);
  EXPECT_EQ(col, 7u);
  EXPECT_NE(parse_error("rows > 1 )", &col).find("unexpected ')'"), std::string::npos);
  EXPECT_EQ(col, 9u);
  EXPECT_NE(parse_error("(rows > 1", &col).find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("rows = 1", &col).find("unexpected character '='"), std::string::npos);
  EXPECT_EQ(col, 5u);
  EXPECT_NE(parse_error("padding == 'x").find("unterminated string"), std::string::npos);
  EXPECT_NE(parse_error("rows && count").find("unexpected character '&'"), std::string::npos);
}

TEST(Constraint, TypeErrorsAtEvaluation) {
  EXPECT_NE(eval_error("padding + 1 > 2").find("needs numbers"), std::string::npos);
  EXPECT_NE(eval_error("padding < 3").find("cannot order"), std::string::npos);
  EXPECT_NE(eval_error("rows / (count - 2) > 1").find("division by zero"), std::string::npos);
  EXPECT_NE(eval_error("padding").find("not a truth value"), std::string::npos);
}

TEST(Constraint, ValuesReadAsNumbersWhenTheyAre) {
  EXPECT_TRUE(expr_value("128").is_number);
  EXPECT_TRUE(expr_value("0.5").is_number);
  EXPECT_TRUE(expr_value("-3").is_number);
  EXPECT_TRUE(expr_value("false").is_number);
  EXPECT_FALSE(expr_value("multiple_of:32").is_number);
  EXPECT_FALSE(expr_value("[true, true]").is_number);
  EXPECT_FALSE(expr_value("12abc").is_number);
}

}  // namespace
}  // namespace tpusim::sweep
