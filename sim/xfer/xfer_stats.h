// Stats of a core's transfer queue (sim/xfer/xfer.h), shared by the SystemC unit and the
// analytical engine.
#pragma once
#include <cstdint>

#include "sim/base/stats.h"
#include "sim/isa/program.h"

namespace tpusim {

struct XferStats {
  uint64_t sends = 0, recvs = 0, host_loads = 0, host_stores = 0;
  uint64_t bytes = 0;  // moved by the queue: sent + host loaded + host stored
  uint64_t send_bytes = 0, recv_bytes = 0, host_load_bytes = 0, host_store_bytes = 0;
  uint64_t busy_cycles = 0;  // summed over channels: taken until the last byte left the source
  uint64_t channels = 0;
  uint64_t run_cycles = 0;   // the core's cycles in this run (set when the run ends)

  void reset(uint32_t channel_count) {
    *this = XferStats{};
    channels = channel_count;
  }
  void transfer(const isa::Instr& ins, uint64_t cycles) {
    busy_cycles += cycles;
    bytes += ins.bytes;
    switch (ins.op) {
      case isa::Op::kSend:
        ++sends;
        send_bytes += ins.bytes;
        break;
      case isa::Op::kHostLoad:
        ++host_loads;
        host_load_bytes += ins.bytes;
        break;
      default:
        ++host_stores;
        host_store_bytes += ins.bytes;
        break;
    }
  }
  void received(uint64_t b, bool complete) {
    recv_bytes += b;
    recvs += complete;
  }
  void declare(StatGroup& g) const {
    g.counter("sends", &sends, "transfers", "kSend executed (core to core)");
    g.counter("recvs", &recvs, "transfers", "kRecv satisfied (their data arrived in this core's HBM)");
    g.counter("host_loads", &host_loads, "transfers", "host RAM -> HBM transfers");
    g.counter("host_stores", &host_stores, "transfers", "HBM -> host RAM transfers");
    g.counter("bytes", &bytes, "bytes", "bytes moved by the queue (sent, host loaded, host stored)");
    g.counter("send_bytes", &send_bytes, "bytes", "bytes sent to other cores");
    g.counter("recv_bytes", &recv_bytes, "bytes", "bytes received from other cores");
    g.counter("host_load_bytes", &host_load_bytes, "bytes", "bytes loaded from host RAM");
    g.counter("host_store_bytes", &host_store_bytes, "bytes", "bytes stored to host RAM");
    g.counter("busy_cycles", &busy_cycles, "cycles",
              "channel occupancy summed over channels (start until the last byte left the source)");
    g.counter("channels", &channels, "channels", "transfer channels of the core: the transfer queue's and the host queue's");
    g.derived("utilization",
              [this] { return run_cycles && channels ? double(busy_cycles) / (double(channels) * double(run_cycles)) : 0.0; },
              "fraction", "busy_cycles / (channels * core cycles of the run)");
  }
};

}  // namespace tpusim
