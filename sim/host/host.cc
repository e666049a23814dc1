#include "sim/host/host.h"

#include <algorithm>
#include <string>

namespace tpusim {

Host::Host(sc_core::sc_module_name name)
    : sc_module(name), in("in"), group_(this->name()), dcn_(std::string(this->name()) + ".dcn") {
  in.bind(*this);
  stats_.declare(group_);
}

void Host::transmit(Train& t) {
  if (t.kind == TrainKind::kHostLoad) {
    stats_.load_bytes += t.bytes;
    stats_.loads += t.last;
    return;
  }
  if (t.dcn) {
    dcn_.pass(t);
    stats_.dcn_bytes += t.bytes;
    stats_.dcn_sends += t.last;
  } else {
    stats_.store_bytes += t.bytes;
    stats_.stores += t.last;
  }
  if (t.packets) t.delivered = std::max(t.delivered, t.tail[t.packets - 1]);
}

}  // namespace tpusim
