#include "sim/host/host.h"

#include <algorithm>

namespace tpusim {

Host::Host(sc_core::sc_module_name name) : sc_module(name), in("in"), group_(this->name()) {
  in.bind(*this);
  stats_.declare(group_);
}

void Host::transmit(Train& t) {
  if (t.kind == TrainKind::kHostLoad) {
    stats_.load_bytes += t.bytes;
    stats_.loads += t.last;
    return;
  }
  stats_.store_bytes += t.bytes;
  stats_.stores += t.last;
  if (t.packets) t.delivered = std::max(t.delivered, t.tail[t.packets - 1]);
}

}  // namespace tpusim
