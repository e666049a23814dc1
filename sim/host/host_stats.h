// Stats of a host's side of host transfers, shared by the SystemC Host and the analytical engine.
#pragma once
#include <cstdint>

#include "sim/base/stats.h"

namespace tpusim {

struct HostStats {
  uint64_t loads = 0, stores = 0;             // kHostLoad / kHostStore served
  uint64_t load_bytes = 0, store_bytes = 0;   // read from / written to host RAM

  void reset() { *this = HostStats{}; }
  bool used() const { return loads + stores > 0; }
  void declare(StatGroup& g) const {
    g.counter("loads", &loads, "transfers", "host loads served (host RAM -> a core's HBM)");
    g.counter("stores", &stores, "transfers", "host stores served (a core's HBM -> host RAM)");
    g.counter("load_bytes", &load_bytes, "bytes", "bytes read from host RAM");
    g.counter("store_bytes", &store_bytes, "bytes", "bytes written to host RAM");
  }
};

}  // namespace tpusim
