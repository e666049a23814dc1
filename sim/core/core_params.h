// Parameters of one TensorCore: its clock, sequencer and blocks.
#pragma once
#include <cstdint>

#include "sim/dma/dma_params.h"
#include "sim/mxu/mxu_params.h"
#include "sim/vmem/vmem_params.h"
#include "sim/vpu/vpu_params.h"
#include "sim/xfer/xfer_params.h"

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
