// Every error class of the HLO parser: an HloError (a ConfigError, exit 2 from the CLI) with the file,
// line, column, instruction and what was expected; never a crash, also for deep nesting.
#include <gtest/gtest.h>

#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using testing::error_of;

struct Case {
  const char* what;
  std::string text;
  int line, column;
  std::string instruction;
  std::string message;  // a part of the message
};

const std::string kAdd = "HloModule m\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n";

TEST(HloErrors, EachClassWithLineAndColumn) {
  const std::vector<Case> cases{
      {"no header", "ENTRY e {\n  ROOT a = f32[] parameter(0)\n}\n", 1, 1, "", "expected 'HloModule NAME'"},
      {"no computation", "HloModule m\n", 2, 1, "", "expected at least the ENTRY computation"},
      {"unknown token after an instruction", "HloModule m\nENTRY e {\n  a = f32[2] parameter(0) @\n}\n", 3, 27, "a",
       "value '@' is not what comes here; expected ',' and an attribute"},
      {"missing '='", "HloModule m\nENTRY e {\n  a f32[2] parameter(0)\n}\n", 3, 5, "a", "expected '=' after the instruction name"},
      {"unknown element type", "HloModule m\nENTRY e {\n  a = q32[2] parameter(0)\n}\n", 3, 7, "a", "value 'q32' is not a shape"},
      {"undefined operand", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] add(a, c)\n}\n", 4, 25, "b",
       "value 'c' is not defined in computation 'e'; expected the operand to name an instruction defined above"},
      {"operand defined after use", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] negate(c)\n  c = f32[] negate(a)\n  ROOT d = f32[] add(b, c)\n}\n",
       4, 20, "b", "is defined at line 5, after its use"},
      {"operand is itself", "HloModule m\nENTRY e {\n  ROOT a = f32[] negate(a)\n}\n", 3, 25, "a", "by this instruction itself"},
      {"undefined computation", kAdd + "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=mul\n}\n",
       10, 57, "r", "value 'mul' is not a computation of the module"},
      {"computation defined after use", "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\nf {\n  ROOT q = f32[] parameter(0)\n}\n",
       4, 36, "c", "value 'f' is defined after its use"},
      {"two ROOTs", "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}\n", 4, 3, "b", "is the second ROOT of computation 'e'"},
      {"parameter gap", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(2)\n  ROOT c = f32[] add(a, b)\n}\n", 4, 3, "b", "leaves parameter number 1 undefined"},
      {"parameter twice", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(0)\n}\n", 4, 3, "b", "repeats the number of parameter 'a'"},
      {"parameter shape vs signature", "HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[3] parameter(0)\n  ROOT %n = f32[2] negate(%p)\n}\n",
       3, 3, "p", "value 'f32[3]' differs from the signature's parameter 0 'p', f32[2]"},
      {"root shape vs signature", "HloModule m\nENTRY %e (p: f32[2]) -> s32[2] {\n  %p = f32[2] parameter(0)\n  ROOT %n = f32[2] negate(%p)\n}\n",
       4, 3, "n", "expected the ROOT to have the signature's result shape"},
      {"no ENTRY", kAdd, 2, 1, "", "none is marked ENTRY"},
      {"two ENTRYs", "HloModule m\nENTRY a {\n  ROOT x = f32[] parameter(0)\n}\nENTRY b {\n  ROOT y = f32[] parameter(0)\n}\n", 5, 1, "", "marks a second entry computation"},
      {"duplicate instruction", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  a = f32[] negate(a)\n}\n", 4, 3, "a", "is defined twice"},
      {"duplicate computation", "HloModule m\nc {\n  ROOT x = f32[] parameter(0)\n}\nc {\n  ROOT y = f32[] parameter(0)\n}\n", 5, 1, "", "names a second computation"},
      {"unclosed computation", "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n", 2, 1, "", "is not closed before the end of the file"},
      {"bad literal", "HloModule m\nENTRY e {\n  ROOT a = f32[] constant(abc)\n}\n", 3, 26, "a", "value 'abc' is not a literal"},
      {"unclosed literal brace", "HloModule m\nENTRY e {\n  ROOT a = f32[2] constant({1, 2)\n}\n", 3, 33, "a", "does not match the bracket opened at line 3 column 28"},
      {"unterminated string", "HloModule m\nENTRY e {\n  ROOT a = f32[] custom-call(), custom_call_target=\"x\n}\n", 3, 52, "a", "string is not closed"},
      {"dimension overflow", "HloModule m\nENTRY e {\n  ROOT a = f32[99999999999999999999] parameter(0)\n}\n", 3, 16, "a", "is out of the int64 range"},
      {"element count limit", "HloModule m\nENTRY e {\n  ROOT a = f32[65536,65536,65537] parameter(0)\n}\n", 3, 28, "a", "exceed 2^48"},
      {"layout not a permutation", "HloModule m\nENTRY e {\n  ROOT a = f32[2,2]{0,2} parameter(0)\n}\n", 3, 20, "a", "names dimension 2 of a rank-2 shape"},
      {"bad alias kind", "HloModule m, input_output_alias={ {0}: (0, {}, maybe) }\n", 1, 48, "", "value 'maybe' is not an alias kind"},
      {"bad replica_count", "HloModule m, replica_count=0\n", 1, 28, "", "must be an integer in [1, 1048576]"},
      {"attribute without value", "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), sharding=\n}\n", 3, 41, "a", "expected the value of attribute 'sharding'"},
      {"unclosed comment", "HloModule m\nENTRY e {\n  ROOT a = /* f32[] parameter(0)\n}\n", 3, 12, "a", "comment is not closed"},
  };
  for (const Case& c : cases) {
    const testing::ErrorAt e = error_of(c.text);
    EXPECT_EQ(e.line, c.line) << c.what << ": " << e.message;
    EXPECT_EQ(e.column, c.column) << c.what << ": " << e.message;
    EXPECT_EQ(e.instruction, c.instruction) << c.what << ": " << e.message;
    EXPECT_NE(e.message.find(c.message), std::string::npos) << c.what << ": " << e.message;
    EXPECT_TRUE(e.message.starts_with("t.hlo:" + std::to_string(c.line) + ": column " + std::to_string(c.column))) << e.message;
  }
}

// Nesting past kMaxNesting (64) in a tuple shape, a literal and an attribute is an error, not a deep
// recursion; 100k levels are as quick as 65.
TEST(HloErrors, DeepNestingIsBounded) {
  for (int depth : {65, 100000}) {
    const std::string tuple = "HloModule m\nENTRY e {\n  ROOT a = " + std::string(size_t(depth), '(') + "f32[] parameter(0)\n}\n";
    EXPECT_NE(error_of(tuple).message.find("nests tuple shapes deeper than 64"), std::string::npos) << depth;
    const std::string lit = "HloModule m\nENTRY e {\n  ROOT a = f32[] constant(" + std::string(size_t(depth), '{') + ")\n}\n";
    EXPECT_NE(error_of(lit).message.find("nests deeper than 64 brackets"), std::string::npos) << depth;
    const std::string attr = "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), x=" + std::string(size_t(depth), '[') + "\n}\n";
    EXPECT_NE(error_of(attr).message.find("nests deeper than 64 brackets"), std::string::npos) << depth;
  }
  // 64 levels of tuple shapes are accepted.
  const std::string ok = "HloModule m\nENTRY e {\n  ROOT a = " + std::string(64, '(') + "f32[]" + std::string(64, ')') + " parameter(0)\n}\n";
  EXPECT_EQ(parse_hlo_module(ok, "t.hlo").entry_computation().root_instruction().shape.tuple.size(), 1u);
}

TEST(HloErrors, FileErrorsAreConfigErrors) {
  EXPECT_THROW(parse_hlo_file(std::string(TPUSIM_HLO_DATA) + "/no_such.hlo"), ConfigError);
  EXPECT_THROW(parse_hlo_file(TPUSIM_HLO_DATA), ConfigError);  // a directory
}

// Long garbage values are shortened in the message.
TEST(HloErrors, LongValuesShortened) {
  const testing::ErrorAt e = error_of("HloModule m\nENTRY e {\n  ROOT a = f32[] " + std::string(10000, 'z') + "\n}\n");
  EXPECT_LT(e.message.size(), 300u) << e.message;
  const testing::ErrorAt n = error_of("HloModule m\nENTRY e {\n  " + std::string(5000, 'n') + " = f32[] parameter(0) @\n}\n");
  EXPECT_LT(n.message.size(), 300u) << n.message;
  EXPECT_EQ(n.instruction.size(), 5000u);  // the whole name stays available to callers
  // Control bytes are shown escaped.
  EXPECT_NE(error_of(std::string("\x01HloModule m\n", 13)).message.find("value '\\x01'"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::hlo
