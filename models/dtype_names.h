// DType's names as a table (base/enum_names.h), so that a config field of type DType (the kernel
// workload's `dtype:`) parses straight into it; the field's schema lists the names it allows
// (a kernel: f32, bf16). The names are dtype_name's.
#pragma once
#include "base/enum_names.h"
#include "models/graph.h"

namespace tpusim::models {

inline const NameTable<DType>& enum_names(DType) {
  static const NameTable<DType> t = {{DType::kF32, dtype_name(DType::kF32)},
                                     {DType::kBF16, dtype_name(DType::kBF16)},
                                     {DType::kS32, dtype_name(DType::kS32)}};
  return t;
}

}  // namespace tpusim::models
