// The whole hardware config: a slice of identical chips and its hosts. Every struct in it holds
// parameters as the hardware YAML writes them (the hardware schema declares and checks them); the
// values derived from them (peaks, a core's HBM share, rates and latencies in core cycles) are
// resolved once, by sim/hw/resolved_hw.h.
#pragma once
#include <string>

#include "sim/hw/chip_params.h"
#include "sim/hw/slice_params.h"

namespace tpusim {

// The whole hardware config, as resolved from a hardware YAML file.
struct HwConfig {
  std::string name;  // e.g. "v3-8"
  ChipParams chip;
  SliceParams slice;
  HostParams host;
  MultisliceParams multislice;  // slices joined by the data-center network (1: one slice)

  // Every chip of the run, across its slices (what per-chip figures and the cost divide by).
  uint32_t run_chips() const { return slice.chips() * multislice.slices; }
};

}  // namespace tpusim
