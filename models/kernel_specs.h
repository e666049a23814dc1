// The single kernels the simulator can build, with the shape keys each needs.
// Their meaning follows data/README.md (PyTorch definitions of the measured programs).
#pragma once
#include <string>
#include <vector>

namespace tpusim::models {

struct KernelSpec {
  std::string name;
  std::vector<std::string> shape_keys;
  std::string doc;
};

inline const std::vector<KernelSpec>& kernel_specs() {
  static const std::vector<KernelSpec> specs = {
      {"matmul", {"m", "k", "n"}, "a @ b with a: [m,k], b: [k,n]"},
      {"layernorm", {"rows", "cols"}, "LayerNorm(cols)(x), x: [rows, cols]"},
      {"softmax", {"rows", "cols"}, "Softmax(dim=1)(x), x: [rows, cols]"},
      {"attention", {"heads", "seq", "head_dim"},
       "q,k,v: [heads, seq, head_dim]; s = k @ q^T / sqrt(head_dim); p = softmax(s, dim=-2); out = v^T @ p"},
      {"encoder_block", {"seq", "hidden", "heads", "ffn"},
       "batch 1; multi-head attention (q,k,v,out Linear), LayerNorm(x+attn), Linear(hidden,ffn), ReLU, "
       "Linear(ffn,hidden), LayerNorm(ffn_out+prev)"},
  };
  return specs;
}

}  // namespace tpusim::models
