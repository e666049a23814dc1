// Parameters of one TensorCore: its clock, sequencer and blocks.
#pragma once
#include <cstdint>

#include "sim/hw/dma_params.h"
#include "sim/hw/mxu_params.h"
#include "sim/hw/vmem_params.h"
#include "sim/hw/vpu_params.h"
#include "sim/hw/xfer_params.h"

namespace tpusim {

struct SequencerParams {
  uint32_t launch_cycles = 0;  // program launch: host doorbell to first instruction issued, plus
                               // end-of-program completion signal (core cycles)
};

struct CoreParams {
  double clock_mhz = 0;
  SequencerParams sequencer;
  MxuParams mxu;
  VpuParams vpu;
  VmemParams vmem;
  DmaParams dma;
  XferParams xfer;
};

}  // namespace tpusim
