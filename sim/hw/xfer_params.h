// Parameters of a TensorCore's transfer unit (sim/xfer/xfer.h): core-to-core (ICI, NoC) and host
// (PCIe) transfers.
#pragma once
#include <cstdint>

namespace tpusim {

struct XferParams {
  uint32_t channels = 1;  // sends in flight at once per core (DMA streams of the transfer queue; the host queue has its own)
};

}  // namespace tpusim
