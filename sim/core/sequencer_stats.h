// Stats of a core's sequencer (instruction issue), shared by both engines.
#pragma once
#include <cstdint>

#include "sim/base/stats.h"

namespace tpusim {

struct SequencerStats {
  uint64_t instructions = 0;   // issued to units (barriers included)
  uint64_t barriers = 0;
  uint64_t launch_cycles = 0;  // launch + completion signalling, before the first issue
  uint64_t total_cycles = 0;   // program start to the core's last completion

  void reset(uint64_t launch) {
    *this = SequencerStats{};
    launch_cycles = launch;
  }
  void declare(StatGroup& g) const {
    g.counter("instructions", &instructions, "instructions", "instructions issued");
    g.counter("barriers", &barriers, "instructions", "barriers reached");
    g.counter("launch_cycles", &launch_cycles, "cycles", "program launch and completion signalling");
    g.counter("total_cycles", &total_cycles, "cycles", "program start to the core's last completion");
  }
};

}  // namespace tpusim
