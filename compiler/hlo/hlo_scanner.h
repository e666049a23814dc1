// The character-level reader under the HLO parser and the attribute readers: position (line, column),
// blanks and /* */ or // comments, names, integers, balanced raw text. HLO's tokens depend on where
// they appear (`0_0x1_1`, `b01f_01io->b01f`, `[2,4]<=[8]`), so each caller reads the form it expects.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/hlo/hlo_error.h"

namespace tpusim::hlo {

class Scanner {
 public:
  // `text` starts at `line`:`column` of `file` (an attribute's value is read with its own position).
  Scanner(std::string_view text, const std::string* file, int line = 1, int column = 1)
      : text_(text), file_(file), line_(line), column_(column) {}

  bool eof() const { return pos_ >= text_.size(); }
  char peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  size_t offset() const { return pos_; }
  std::string_view rest() const { return text_.substr(pos_); }
  SourcePos here() const { return {file_, line_, column_, instruction}; }

  // Skips blanks and comments; with `newlines` false stops at a line break (HLO ends an instruction
  // or a header at the end of its line).
  void skip_space(bool newlines = true);
  // Skips blanks and comments, then consumes `c` if it comes next.
  bool accept(char c, bool newlines = true);
  void expect(char c, std::string_view expected);
  // Consumes `word` if the next name is exactly `word`.
  bool accept_word(std::string_view word);
  // A name: an optional '%' then [A-Za-z0-9_.-]+ (instructions, computations, attributes, opcodes).
  // Returned without '%'.
  std::string name(std::string_view expected);
  // The next name without consuming it ("" if none).
  std::string_view peek_name() const;
  // A decimal integer with an optional '-' (checked against int64 overflow).
  int64_t integer(std::string_view expected);
  bool at_integer() const;
  // A double-quoted string with C escapes, returned unescaped.
  std::string quoted(std::string_view expected);
  // Raw text up to (not including) a ',' or a line break at nesting level 0, or a closing bracket
  // that has no opening one; brackets must balance and quoted strings may contain anything.
  std::string raw_value(std::string_view expected);
  // The raw text between an opening bracket (current character) and its match, both consumed.
  std::string balanced(std::string_view expected);

  // Throws HloError at the current position; `value` defaults to the text at that position.
  [[noreturn]] void fail(std::string rule, std::string suggestion = "") const;
  [[noreturn]] void fail_value(std::string value, std::string rule, std::string suggestion = "") const;
  // The next token as written (for messages): a name, a number or one character.
  std::string token_here() const;

  std::string instruction;  // named in errors

 private:
  void advance();
  // Reads raw text with bracket balancing; stops as raw_value() describes when `stop_at_comma`.
  std::string scan_balanced(std::string_view expected, bool stop_at_top);

  std::string_view text_;
  const std::string* file_;
  size_t pos_ = 0;
  int line_;
  int column_;
};

bool is_name_char(char c);

}  // namespace tpusim::hlo
