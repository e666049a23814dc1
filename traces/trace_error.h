// Bad input to the trace tools (a trace file, a window, a lane pattern), described the way the
// CLI reports bad input: where (file or flag), the value, the rule it breaks and a suggestion.
// traces/ depends on no config code, so the app turns this into its ConfigError (exit 2).
#pragma once
#include <stdexcept>
#include <string>

namespace tpusim {

class TraceError : public std::runtime_error {
 public:
  TraceError(std::string where, std::string rule, std::string value = "", std::string suggestion = "")
      : std::runtime_error(format(where, rule, value, suggestion)),
        where_(std::move(where)),
        rule_(std::move(rule)),
        value_(std::move(value)),
        suggestion_(std::move(suggestion)) {}

  // "where: value 'v' rule; suggestion", as ConfigError formats it. Built with append(): GCC 12
  // warns falsely (-Wrestrict) on chained operator+ of temporaries.
  static std::string format(const std::string& where, const std::string& rule, const std::string& value,
                            const std::string& suggestion) {
    std::string s;
    if (!where.empty()) s.append(where).append(": ");
    if (!value.empty()) s.append("value '").append(value).append("' ");
    s.append(rule);
    if (!suggestion.empty()) s.append("; ").append(suggestion);
    return s;
  }

  const std::string& where() const { return where_; }
  const std::string& rule() const { return rule_; }
  const std::string& value() const { return value_; }
  const std::string& suggestion() const { return suggestion_; }

 private:
  std::string where_, rule_, value_, suggestion_;
};

}  // namespace tpusim
