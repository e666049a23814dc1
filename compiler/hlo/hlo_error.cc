#include "compiler/hlo/hlo_error.h"

namespace tpusim::hlo {

void throw_hlo_error(const SourcePos& pos, std::string value, std::string rule, std::string suggestion) {
  // The offending text as written, shortened: an error line stays readable whatever the input.
  constexpr size_t kMaxValue = 60;
  if (value.size() > kMaxValue) value.resize(kMaxValue), value.append("...");
  for (char& c : value)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  // Rules quote names from the input; keep the head and the "expected ..." tail of a long one.
  constexpr size_t kMaxRule = 240;
  if (rule.size() > kMaxRule) rule = rule.substr(0, kMaxRule / 2).append(" ... ").append(rule.substr(rule.size() - kMaxRule / 2));
  ConfigErrorInfo info;
  info.file = pos.file ? *pos.file : std::string("<hlo>");
  info.line = pos.line;
  info.yaml_path = "column " + std::to_string(pos.column);
  if (!pos.instruction.empty()) info.yaml_path += ", instruction '" + pos.instruction + "'";
  info.value = std::move(value);
  info.rule = std::move(rule);
  info.suggestion = std::move(suggestion);
  throw HloError(std::move(info), pos.column, pos.instruction);
}

}  // namespace tpusim::hlo
