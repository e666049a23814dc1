// Bad HLO text: a ConfigError (exit 2 from the CLI) that also carries the column and the instruction.
// Its message: "m.hlo:12: column 7, instruction 'add.3': value 'x' is not defined ...; expected ...".
#pragma once
#include <string>

#include "base/config_error.h"

namespace tpusim::hlo {

class HloError : public ConfigError {
 public:
  HloError(ConfigErrorInfo info, int column, std::string instruction)
      : ConfigError(std::move(info)), column_(column), instruction_(std::move(instruction)) {}
  int line() const { return info().line; }
  int column() const { return column_; }
  const std::string& instruction() const { return instruction_; }  // "" outside an instruction

 private:
  int column_;
  std::string instruction_;
};

// Where an error is: the file, the 1-based line and column, the instruction being read ("" if none).
struct SourcePos {
  const std::string* file = nullptr;
  int line = 1;
  int column = 1;
  std::string instruction;
};

// Throws HloError at `pos`: `value` is the offending text as written (shortened), `rule` what is wrong
// and what was expected.
[[noreturn]] void throw_hlo_error(const SourcePos& pos, std::string value, std::string rule, std::string suggestion = "");

}  // namespace tpusim::hlo
