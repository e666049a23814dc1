// The "systemc" engine: the Program executed on the SystemC slice model (sim/slice/slice.h).
//
// SystemC allows one elaboration per process, so the slice is elaborated once (by the first
// engine) and shared: every later engine must have the same structure (chips, cores per chip,
// MXUs per core, HBM variant), otherwise a ConfigError explains it; numeric parameters (clock,
// bandwidths, latencies, sizes, channel and DMA-engine counts) are re-applied when an engine with
// a different config runs. Runs execute back to back on the one kernel: each starts at the current
// kernel time and reports cycles relative to its own start. Not thread-safe (neither is SystemC).
#pragma once
#include <memory>

#include "sim/engine/engine.h"

namespace tpusim {

std::unique_ptr<Engine> make_systemc_engine(const HwConfig& hw);

}  // namespace tpusim
