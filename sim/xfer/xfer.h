// Xfer: a core's transfer unit ("slice.chip0.core1.xfer"), the DMA engine that moves data
// between this core's HBM and other cores (kSend) or the host (kHostLoad, kHostStore), and the
// receiving end of such transfers (`rx`: it writes arriving data into the core's HBM).
//
// One in-order issue queue (program.h) over `xfer.channels` channels, like the HBM<->VMEM DMA
// queue over its engines (sim/dma/dma.h): the head transfer starts on the lowest-numbered free
// channel once its deps are done; a channel carries one transfer at a time, from its start until
// its last byte has left the source (then the next may start on it): sim/xfer/xfer_channels.h,
// shared with the analytical engine. Channels are independent
// DMA streams: concurrent transfers meet only in shared resources (the core's HBM, the NoC, links),
// where contention emerges. Timing of one transfer (sim/ici/ici_timing.h):
//  * dma.setup_cycles after it is taken, it reads its data from HBM (send, host store) through
//    the core's HBM socket like a DMA, or the host provides it (host load);
//  * it cuts the message into packets of ici.packet_bytes and hands them, a train at a time, to
//    the path: the chip's NoC (send on the same chip), its ICI router (send to another chip) or
//    its PCIe link (host), whose bandwidth stages (sim/ici/packet_server.h) carry them;
//  * the destination's transfer unit writes each train into its core's HBM (posted writes:
//    requested when the train is handed on, they reserve HBM bandwidth; the data counts as
//    delivered when it has arrived and the write is served, the write latency is hidden) and
//    completes the matching kRecv when the last train is delivered;
//  * the send / host transfer itself completes at the same moment (the sender learns of the
//    delivery without extra latency); its channel is free when its last packet left the first stage.
// Trains: one activation per train (no per-cycle or per-packet process). A train is
// train_bytes(hw, r) bytes: a whole number of packets and of HBM chunks, at least all of the core's
// HBM channels' worth (so each read spreads over them) and long enough that reading the next
// train from HBM (issued one train ahead, possibly behind the train reads of the other channels)
// never starves the path. The next train is reserved
// when the current one has left the first stage, so flows sharing a stage alternate trains:
// the train is the interleaving granularity of contention (the packet is the granularity of
// the bookkeeping). Without contention every train follows the previous one back to back, so
// a transfer takes exactly the time of the shared formula.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "sim/analysis/program_plan.h"
#include "sim/base/core_ifs.h"
#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/hbm/hbm_protocol.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/train.h"
#include "sim/xfer/xfer_channels.h"
#include "sim/xfer/xfer_stats.h"

namespace tpusim {

// Bytes per train for `hw` (simulation granularity, see above).
uint64_t train_bytes(const HwConfig& hw, const ResolvedHw& r);

class Xfer : public sc_core::sc_module, public TrainIf {
 public:
  sc_core::sc_fifo_in<uint32_t> in;              // instruction indices from the sequencer: kSend
  sc_core::sc_fifo_in<uint32_t> host_in;         // ... kHostLoad, kHostStore (the host queue)
  sc_core::sc_port<CompletionIf> done;           // to the core's sequencer (transfers and recvs)
  tlm_utils::simple_initiator_socket<Xfer> hbm;  // to the chip's HBM
  sc_core::sc_port<TrainIf> noc;                 // sends to a core of the same chip
  sc_core::sc_port<TrainIf> ici;                 // sends to another chip (the chip's router)
  sc_core::sc_port<TrainIf> pcie;                // host loads and stores (the chip's PCIe link)
  sc_core::sc_export<TrainIf> rx;                // trains whose destination is this core's HBM

  explicit Xfer(sc_core::sc_module_name name);

  void configure(const HwConfig& hw, const ResolvedHw& r);
  void begin_run(const CorePlan* plan, const RunContext* run);
  void end_run(uint64_t core_cycles) { stats_.run_cycles = core_cycles; }
  bool used() const { return used_; }  // the stream holds transfers (stats are reported)
  const StatGroup& stats() const { return group_; }

  void transmit(Train& train) override;  // rx

 private:
  struct Read {
    double first = 0, last = 0;  // cycles: first byte and last byte of a train read from HBM
  };
  struct Active {
    bool on = false;
    uint32_t instr = 0;
    uint64_t start = 0;      // cycle the queue took it
    uint64_t t0 = 0;         // start + setup
    uint64_t remaining = 0;  // bytes not yet handed on in a train
    bool reads_hbm = false;
    Read next;               // the HBM read of the next train
  };
  struct Channel {
    Active act;
    Train train;             // the active transfer's train, reused
    uint32_t index = 0;      // in channels_ (and pool_)
    uint64_t next = 0;       // active: the cycle its next train is handed on
    TraceNames track;        // "core0.xfer2"
  };

  void step();
  void begin(Channel& ch, uint32_t instr, uint64_t now);
  uint64_t send_train(Channel& ch, uint64_t now);  // returns the cycle of the channel's next activation
  uint64_t finish(Channel& ch, uint64_t now);  // returns the cycle the channel is free
  Read read_hbm(const Active& act, uint64_t bytes, uint64_t issue, uint64_t now);
  // One HBM request of `bytes` issued at cycle `issue` (>= now); returns when served (cycles).
  double hbm_call(tlm::tlm_command cmd, uint64_t bytes, uint64_t issue, uint64_t now, uint32_t instr,
                  std::string_view label);

  uint64_t setup_cycles_ = 0, hbm_latency_ = 0, train_bytes_ = 0;
  uint32_t chunk_bytes_ = 0, packet_bytes_ = 0;
  const CorePlan* plan_ = nullptr;
  isa::StreamView stream_;  // the core stream of the run (set by begin_run)
  const RunContext* run_ = nullptr;
  bool used_ = false;
  std::vector<Channel> channels_;   // the transfer queue's, then the host queue's
  uint32_t send_channels_ = 1;
  XferChannels pool_;               // which channel a transfer takes and when (cycles)
  struct Head {
    bool holding = false;           // `held` was taken from the queue but no channel was free
    uint32_t held = 0;
  };
  Head heads_[2];                   // the transfer queue's, the host queue's
  bool or_built_ = false;
  sc_core::sc_event_or_list either_written_;
  tlm::tlm_generic_payload trans_;  // reused for every HBM request
  HbmRequestTag* tag_ = nullptr;    // owned by trans_
  XferStats stats_;
  StatGroup group_;
};

}  // namespace tpusim
