#include "sim/noc/noc.h"

namespace tpusim {

Noc::Noc(sc_core::sc_module_name name, uint32_t cores)
    : sc_module(name), in("in"), to_core("to_core", cores), server_(this->name()) {
  in.bind(*this);
}

void Noc::transmit(Train& train) {
  server_.pass(train);
  to_core[train.dst_core]->transmit(train);
}

}  // namespace tpusim
