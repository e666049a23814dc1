// Parameters of VMEM, the TensorCore's software-managed vector memory (scratchpad).
#pragma once
#include <cstdint>

namespace tpusim {

struct VmemParams {
  uint32_t size_mib = 0;  // capacity per TensorCore (16 MiB on v2/v3/v4)
  uint64_t size_bytes() const { return uint64_t(size_mib) << 20; }
};

}  // namespace tpusim
