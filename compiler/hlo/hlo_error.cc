#include "compiler/hlo/hlo_error.h"

namespace tpusim::hlo {

namespace {

// Text from the input as it goes into a message: at most 60 characters, control bytes as \xNN.
std::string printable(std::string_view text) {
  constexpr size_t kMax = 60;
  std::string r;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      r.append("\\x").push_back(kHex[c >> 4]);
      r.push_back(kHex[c & 15]);
    } else {
      r.push_back(char(c));
    }
  }
  if (text.size() > kMax) r.append("...");
  return r;
}

}  // namespace

void throw_hlo_error(const SourcePos& pos, std::string value, std::string rule, std::string suggestion) {
  // Rules quote names from the input; keep the head and the "expected ..." tail of a long one.
  constexpr size_t kMaxRule = 240;
  if (rule.size() > kMaxRule) rule = rule.substr(0, kMaxRule / 2).append(" ... ").append(rule.substr(rule.size() - kMaxRule / 2));
  ConfigErrorInfo info;
  info.file = pos.file ? *pos.file : std::string("<hlo>");
  info.line = pos.line;
  info.yaml_path = "column " + std::to_string(pos.column);
  if (!pos.instruction.empty()) info.yaml_path.append(", instruction '").append(printable(pos.instruction)).append("'");
  info.value = printable(value);
  for (char& c : rule)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  info.rule = std::move(rule);
  info.suggestion = std::move(suggestion);
  throw HloError(std::move(info), pos.column, pos.instruction);
}

}  // namespace tpusim::hlo
