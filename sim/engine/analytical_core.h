// The analytical engine's state of one simulated core (sim/engine/analytical_engine.cc): its
// completion times, its waits on other cores, its units' resource models and its stats.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/analysis/program_plan.h"
#include "sim/cmem/cmem_server.h"
#include "sim/core/sequencer_stats.h"
#include "sim/dma/dma_engines.h"
#include "sim/dma/dma_stats.h"
#include "sim/engine/completion_store.h"
#include "sim/engine/network_counts.h"
#include "sim/hbm/hbm_server.h"
#include "sim/ici/ici_timing.h"
#include "sim/mxu/mxu_paths.h"
#include "sim/mxu/mxu_stats.h"
#include "sim/vmem/vmem_check.h"
#include "sim/vpu/vpu_stats.h"
#include "sim/vpu/vpu_unit.h"
#include "sim/xfer/xfer_channels.h"
#include "sim/xfer/xfer_stats.h"

namespace tpusim {

// A core's way to another chip: the first stage its transfers stream through, the links they
// cross, and the estimate for the last message size sent (AnalyticalEngine::route_to).
struct Route {
  uint32_t peer_chip = 0;
  uint32_t stage = 0;
  std::vector<IciHop> path;
  uint64_t bytes = 0;
  TransferEstimate estimate;
};

struct CoreState {
  const CorePlan* plan = nullptr;
  // Per instruction: its completion cycle once done (the largest state of a run: a full pod has
  // 2048 cores; sim/engine/completion_store.h keeps what replicas share once).
  CompletionStore::Core times;
  bool done(uint32_t i) const { return times.done(i); }
  uint64_t completion(uint32_t i) const { return times.completion(i); }
  // The instruction try_schedule() is at: its completion, or a deferred one's ready time.
  uint64_t at = 0;
  // Per barrier (position in CorePlan::barriers) and per kSend/kRecv (position in sends_recvs):
  // sized by those few instructions, not by the stream (a BERT-large step has millions per core).
  std::vector<uint8_t> arrived;       // per barrier: reached (its group may still be incomplete)
  std::vector<uint64_t> reached;      // per barrier: the cycle it was reached
  std::vector<uint8_t> has_data;      // per recv: its send is scheduled ...
  std::vector<uint64_t> data_at;      // ... and its data arrives then
  // The core's units: the same resource models as the SystemC blocks (sim/README.md, "One timing
  // model per block"). With background DMAs the DMA engines and the HBM server are calendars.
  std::vector<MxuPaths> mxu_paths;    // per MXU: weight-load and streaming path
  VpuUnit vpu_unit;                   // the VPU: main and background queue
  DmaEngines engines;                 // the DMA engines: main and background queue
  XferChannels xfer_q;                // the transfer queue's channels, its transfers' first stages
  HbmServer hbm;                      // the core's HBM bandwidth server
  CmemServer cmem;                    // the core's CMEM bandwidth server (no contention between cores)
  // Instructions the scans passed but could not schedule yet. A queue runs in order, so those of
  // a queue are always its positions [scheduled, passed): only the first can be next, and once it is
  // blocked a scan skips the rest without visiting them (revisiting every kept instruction of
  // every queue made a scan's cost grow with the collectives' length: 2048 cores spent most of
  // their time there). Receives and barriers, which are not in order, are kept in a list.
  std::vector<uint32_t> passed;       // per unit queue: its instructions the cursor has passed
  std::vector<uint32_t> pending;      // receives and barriers not done yet, stream order
  std::vector<uint32_t> next_pending;
  // A receive whose data has not arrived is not revisited (nothing else can unblock it): asleep per
  // kSend/kRecv position until its send is scheduled, which puts it in `woken`.
  std::vector<uint8_t> asleep;
  std::vector<uint32_t> woken;
  std::vector<Route> routes;          // per peer chip sent to (route_to())
  // Per barrier position: the groups its arrival counts in, with how many participants it stands
  // for (the core's class members at that position; one, its own group, without the reduction).
  std::vector<uint32_t> barrier_counts_begin;
  std::vector<std::pair<uint32_t, uint32_t>> barrier_counts;  // (group, participants)
  uint64_t scheduled = 0;             // instructions done
  std::vector<uint32_t> cand;         // during a scan, per unit queue: its next position to visit
  std::vector<uint8_t> noted;         // ... and a blocked background queue's horizon was noted
  std::vector<uint8_t> blocked;       // per unit queue, during a scan: an earlier instruction waits
  std::vector<uint32_t> unscheduled;  // per unit queue: its instructions not scheduled yet
  size_t pruned_at = 0;               // calendar size at the last prune
  uint64_t last_barrier = 0;          // barriers are reached in stream order
  uint64_t main_reached = 0;          // the latest start placed on a main DMA, VPU or MXU queue
  uint32_t cursor = 0;                // next instruction never scanned
  bool dirty = false;                 // a recv's data or a barrier release arrived since the last scan
  uint64_t end = 0;
  // Stats, same structs and keys as the SystemC blocks.
  SequencerStats seq;
  std::vector<MxuStats> mxu;
  VpuStats vpu;
  DmaStats dma;
  XferStats xfer;
  VmemUsage vmem;
  HostTransfers host;                 // its host loads and stores (sim/engine/network_counts.h)
  // Trace names (built only when tracing).
  std::string process, prefix;

  bool finished() const { return scheduled == plan->unit.size(); }
  // The queue position of unit u's next instruction to schedule.
  uint32_t next_of(uint32_t u) const { return plan->queues.size(u) - unscheduled[u]; }
};

}  // namespace tpusim
