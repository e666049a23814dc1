// The network protocol between a core's transfer queue, the on-chip NoC, the ICI routers and
// links, the PCIe link and the host: trains of packets, passed hop by hop through TrainIf ports.
//
// A message (one kSend, kHostLoad or kHostStore) is cut into packets of `ici.packet_bytes`; the
// sender hands them on in trains (consecutive packets of one message, sim/xfer/xfer.h says how
// many). Timing style (STYLE rule 2): loosely timed, like the HBM protocol. transmit() is an
// untimed call made by the sender's process; the train carries, per packet, when its first byte
// (`head`) and last byte (`tail`) are available at the current point of the path, in cycles of the
// run (fractional: bandwidth servers work in fractions of a cycle). Every stage rewrites them to
// the times the packet reaches the next stage, so when transmit() returns they describe the
// arrival at the destination, and the destination has set `delivered`. No data is carried.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include <systemc>

namespace tpusim {

enum class TrainKind : uint8_t {
  kSend,       // core -> core (NoC or ICI), destination: the receiving core's HBM
  kHostLoad,   // host RAM -> PCIe -> this core's HBM
  kHostStore,  // this core's HBM -> PCIe -> host RAM
};

struct Train {
  TrainKind kind = TrainKind::kSend;
  uint32_t src_chip = 0, src_core = 0;
  uint32_t dst_chip = 0, dst_core = 0;
  uint32_t src_instr = 0;   // the transfer instruction in the source core's stream
  uint32_t recv_instr = 0;  // kSend: the matching kRecv in the destination core's stream
  uint64_t flow = 0;        // the message's id within the run (trace spans of one message merge)
  std::string_view label;   // the instruction's label (trace event name)
  bool last = false;        // the message's last train
  bool dcn = false;         // kHostStore: on through the host's network interface (isa::Instr::dcn)

  // Packets: `bytes` in `packets` packets of `packet_bytes` (the last one shorter). A zero-byte
  // message is one empty packet (it still crosses the path and pays its latency).
  uint64_t bytes = 0;
  uint32_t packet_bytes = 0;
  uint32_t packets = 0;
  std::vector<double> head, tail;  // per packet, cycles of the run (see above)

  uint32_t stage = 0;     // bandwidth stages crossed so far (the sender resets it to 0)
  double injected = 0;    // out: set by the first stage: when the train's last byte left the source
  double delivered = 0;   // in/out: running maximum over the message's trains of when their data
                          // was complete at the destination (HBM written, or in host RAM)

  uint64_t packet_size(uint32_t p) const { return p + 1 < packets ? packet_bytes : bytes - uint64_t(p) * packet_bytes; }
};

class TrainIf : public virtual sc_core::sc_interface {
 public:
  virtual void transmit(Train& train) = 0;
};

}  // namespace tpusim
