// A config field of type DType (the kernel workload's `dtype:`) reads and writes the dtype's name
// (config/schema.h, TextValue). The field's schema lists the names it allows (a kernel: f32, bf16).
#pragma once
#include <string>
#include <string_view>

#include "base/config_error.h"
#include "models/graph.h"

namespace tpusim::models {

inline void parse_config_text(std::string_view text, DType& out, const ConfigErrorInfo& at) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kS32})
    if (text == dtype_name(t)) {
      out = t;
      return;
    }
  ConfigErrorInfo e = at;
  e.rule = "is not a dtype (f32, bf16, s32)";
  throw ConfigError(e);
}
inline std::string config_text(const DType& t) { return dtype_name(t); }

}  // namespace tpusim::models
