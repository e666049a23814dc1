// Graphs of the single kernels (see kernel_specs.h), built exactly as PyTorch expresses them.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "models/graph.h"

namespace tpusim::models {

struct KernelArgs {
  std::string kernel;
  std::map<std::string, uint64_t> shape;
  DType dtype = DType::kF32;
  DotPrecision precision = DotPrecision::kDefault;
};

// Throws ConfigError (base/config_error.h) for an unknown kernel or missing/zero/extra shape keys.
Graph build_kernel(const KernelArgs& args);

// Building blocks shared with the BERT builders.
int linear(Graph& g, int x, int64_t in, int64_t out, const std::string& name, DotPrecision precision);
int layer_norm(Graph& g, int x, const std::string& name);  // over the last dim of a 2-D [rows, cols] x
int softmax(Graph& g, int x, int dim);

}  // namespace tpusim::models
