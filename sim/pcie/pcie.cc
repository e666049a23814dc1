#include "sim/pcie/pcie.h"

namespace tpusim {

Pcie::Pcie(sc_core::sc_module_name name, uint32_t cores)
    : sc_module(name),
      in("in"),
      to_core("to_core", cores),
      host("host"),
      h2d_(std::string(this->name()) + ".h2d"),
      d2h_(std::string(this->name()) + ".d2h") {
  in.bind(*this);
}

void Pcie::transmit(Train& train) {
  if (train.kind == TrainKind::kHostLoad) {
    host->transmit(train);  // the source: host RAM
    h2d_.pass(train);
    to_core[train.dst_core]->transmit(train);
  } else {
    d2h_.pass(train);
    host->transmit(train);  // the destination: host RAM
  }
}

}  // namespace tpusim
