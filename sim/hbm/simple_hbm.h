// "simple" HBM: every channel is a bandwidth server with a fixed latency.
//  * Channels: `chip.hbm.channels`. per_core ownership: core i uses channels
//    [i*ch/cores, (i+1)*ch/cores) and sees 1/cores of the chip bandwidth; shared: every core uses
//    every channel. Either way a channel serves chip_bandwidth * efficiency / channels
//    (= hbm_core_bytes_per_cycle / hbm_core_channels, sim/hw/resolved_hw.h).
//  * Requests of a core go round-robin over its channels (a per-core pointer that carries over
//    from transfer to transfer, reset at each run start).
//  * A channel serves requests first come, first served, back to back: a request issued at cycle
//    r starts at max(r, end of the channel's current busy period) and takes bytes / rate; its data
//    arrives latency_ns later (pipelined: latency never occupies the channel).
// Bookkeeping is loosely timed (reservations, no SystemC event), so contention emerges from
// overlapping requests; a transfer costs O(channels of its core) whatever its request count.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "sim/base/stats.h"
#include "sim/hbm/hbm.h"
#include "sim/hbm/hbm_stats.h"

namespace tpusim {

class SimpleHbm : public Hbm {
 public:
  explicit SimpleHbm(sc_core::sc_module_name name);

  void configure(const ChipParams& chip, const ResolvedHw& r) override;
  void begin_run(const RunContext* run) override;
  void end_run(uint64_t chip_cycles) override;
  void dump_stats(nlohmann::json& out) const override;

 protected:
  void serve(int core, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;

 private:
  // What a reservation touches, one per channel, contiguous (a transfer walks all of its core's).
  struct Lane {
    // The current busy period: since cycle `period_start` (of the run) the channel has served
    // `period_bytes` back to back. Its end is one division of the byte total, so a lone transfer
    // ends exactly where hbm_transfer_cycles puts it (no per-request rounding accumulates).
    uint64_t period_start = 0;
    uint64_t period_bytes = 0;
    // From the last reservation: the period's length period_bytes * count / rate in cycles and
    // its end period_start + len (the same expressions the idle test would compute).
    double len = 0;
    double end = 0;
    HbmChannelStats stats;
  };
  // The rest of a channel: its names, stats group and trace span.
  struct Channel {
    Channel(const std::string& name, const HbmChannelStats* stats) : group(name), track(TraceNames::of(name)) {
      stats->declare(group);
    }
    StatGroup group;
    TraceNames track;
    // Trace: consecutive requests of one DMA on this channel are drawn as one event.
    bool span_open = false;
    int span_core = 0;
    uint32_t span_instr = 0;
    double span_start = 0, span_end = 0;
    uint64_t span_bytes = 0;
    std::string_view span_label;
  };
  struct CoreView {
    uint32_t first = 0;  // first channel of the core
    uint32_t count = 0;  // channels of the core
    uint32_t next = 0;   // round-robin pointer
  };

  // What a transfer reserves on one of its channels: `bytes` in `requests` requests, which take
  // `service` cycles of the channel (bytes * count / core rate), `core_service` of the core's
  // whole bandwidth.
  struct Share {
    uint64_t bytes = 0, requests = 0;
    double service = 0, core_service = 0;
  };
  Share share(uint64_t bytes, uint64_t requests, uint32_t count) const;
  uint64_t arrival_ps(uint64_t period_start, double len, uint64_t req) const;
  template <bool kTrace>
  const Lane& reserve(uint32_t c, int core, uint64_t req, const Share& s, uint32_t count, const HbmRequestTag* tag);
  template <bool kTrace>
  uint64_t reserve_transfer(int core, uint64_t req, uint64_t bytes, uint64_t chunk, const HbmRequestTag* tag);
  void trace_span(Channel& ch, const Lane& lane, int core, double begin, uint64_t bytes, const HbmRequestTag* tag);
  void flush(Channel& ch);

  double core_bytes_per_cycle_ = 0;
  uint64_t latency_cycles_ = 0;
  uint64_t period_ps_ = 1;
  std::vector<Lane> lanes_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<CoreView> cores_;
  const RunContext* run_ = nullptr;
  HbmStats stats_;
  StatGroup group_;
  double clock_mhz_ = 0, peak_gbyte_per_s_ = 0;
};

}  // namespace tpusim
