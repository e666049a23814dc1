// Stats of a host's side of host transfers, shared by the SystemC Host and the analytical engine.
#pragma once
#include <cstdint>

#include "sim/base/stats.h"

namespace tpusim {

struct HostStats {
  uint64_t loads = 0, stores = 0;             // kHostLoad / kHostStore served
  uint64_t load_bytes = 0, store_bytes = 0;   // read from / written to host RAM
  uint64_t dcn_sends = 0, dcn_bytes = 0;      // data-center-network stores sent on to another slice

  void reset() { *this = HostStats{}; }
  bool used() const { return loads + stores + dcn_sends > 0; }
  void declare(StatGroup& g) const {
    g.counter("loads", &loads, "transfers", "host loads served (host RAM -> a core's HBM)");
    g.counter("stores", &stores, "transfers", "host stores served (a core's HBM -> host RAM)");
    g.counter("load_bytes", &load_bytes, "bytes", "bytes read from host RAM");
    g.counter("store_bytes", &store_bytes, "bytes", "bytes written to host RAM");
    g.counter("dcn_sends", &dcn_sends, "transfers", "data-center-network stores sent on to the next slice's host");
    g.counter("dcn_bytes", &dcn_bytes, "bytes", "bytes sent over the data-center network (multislice)");
  }
};

}  // namespace tpusim
