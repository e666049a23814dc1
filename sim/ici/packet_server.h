// A bandwidth stage of the network: one ICI link direction, a chip's NoC, one direction of a PCIe
// link. It serves packets first come first served, back to back, at `bytes_per_cycle`, and
// delivers each one `latency_cycles` after it left (wire + router / NoC / PCIe latency).
//
// Per packet p of a train, with head/tail = when its first/last byte is available here:
//   start  s = max(head, free)              (the stage is free after the previous packet)
//   end    e = max(s + bytes / rate, tail)  (cut-through: it cannot finish before its last byte
//                                            has arrived, so a slower upstream stage paces it)
//   out:   head = s + latency, tail = e + latency
// Packets of different flows interleave in the order they are reserved, so two flows on one
// stage share its bandwidth (contention emerges; see sim/xfer/xfer.h for the reservation order).
// Bookkeeping is loosely timed, without SystemC events: the stage keeps its current busy period
// (start, bytes served back to back since), so a lone flow ends exactly at
// start + bytes / rate, as the shared formula in sim/ici/ici_timing.h says.
// Not a module: owned by the block it models (Link, Noc, Pcie), named after it for stats and trace.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/ici/link_stats.h"
#include "sim/ici/train.h"

namespace tpusim {

class PacketServer {
 public:
  // `name`: hierarchical name = stats key ("slice.chip0.ici.x+"); trace track from it ("ici.x+").
  explicit PacketServer(std::string name);

  void configure(double bytes_per_cycle, uint64_t latency_cycles);
  void begin_run(const RunContext* run);
  // Serves the train's packets; rewrites head/tail to their arrival behind this stage and, for
  // the first stage of the train's path, sets `injected`.
  void pass(Train& train);
  void end_run(uint64_t run_cycles);
  bool used() const { return stats_.used(); }
  void dump_stats(nlohmann::json& out) const {
    if (used()) out[group_.name()] = group_.dump();
  }

 private:
  void flush();

  double rate_ = 0;
  double latency_ = 0;
  double period_start_ = 0;   // the current busy period (cycles of the run) ...
  uint64_t period_bytes_ = 0;  // ... and the bytes served back to back since its start
  const RunContext* run_ = nullptr;
  LinkStats stats_;
  StatGroup group_;
  TraceNames track_;
  // Trace: consecutive trains of one flow without a gap are drawn as one event.
  bool span_open_ = false;
  uint64_t span_flow_ = 0;
  double span_start_ = 0, span_end_ = 0;
  uint64_t span_bytes_ = 0;
  std::string_view span_label_;
};

}  // namespace tpusim
