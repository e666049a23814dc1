// What a trace lane is, from its names alone (traces carry no types): the kinds by which the trace
// analysis groups busy time, the critical path and the causes of idle gaps.
//
//   process "host*"                         host (tracks tracing, compile, transfer)
//   [coreN.]mxuM, mxuM.weights              MXU (stream of LHS rows; weight-tile loads)
//   [coreN.]vpu                             VPU
//   [coreN.]dmaE, hbm.chK, hbm.coreN        DMA/HBM
//   [coreN.]xfer, noc, ici.*, pcie.*        ICI/transfer (core-to-core queue, on-chip network, ICI
//                                           links, host PCIe)
//   [coreN.]sync                            barrier (a core waiting for its collective's peers)
//   coreN.step                              device step (a training step's execution, no unit detail)
//   anything else                           other
#pragma once
#include <string>
#include <string_view>

namespace tpusim {

enum class LaneKind { kMxu, kVpu, kDmaHbm, kIciTransfer, kBarrier, kHost, kDeviceStep, kOther };

LaneKind classify_lane(std::string_view process, std::string_view track);

// "MXU", "VPU", "DMA/HBM", "ICI/transfer", "barrier", "host", "device step", "other".
const char* lane_kind_label(LaneKind k);
// JSON keys: "mxu", "vpu", "dma_hbm", "ici_transfer", "barrier", "host", "device_step", "other".
const char* lane_kind_key(LaneKind k);

// The core a track belongs to ("core3.vpu" -> 3), or -1 for lanes shared by the chip (HBM, ICI, ...).
int lane_core(std::string_view track);

// Lanes whose idle gaps are analysed: MXU row streams (not weight loads), VPUs, device steps.
bool is_compute_lane(LaneKind k, std::string_view track);

// What a busy lane during another lane's gap says about that gap, by priority (most likely the
// blocker first): data from HBM, MXU weights, ICI/transfers, a barrier, other compute work, then
// the host's compile, transfers and tracing. The label names it for people.
enum class GapCause {
  kDmaHbm, kMxuWeights, kIciTransfer, kBarrier, kCompute, kHostCompile, kHostTransfer, kHostTracing, kHostOther,
  kOther, kNothing
};
inline constexpr int kGapCauses = int(GapCause::kNothing) + 1;
GapCause gap_cause(LaneKind k, std::string_view track);
// "DMA/HBM", "MXU weight load", "ICI/transfer", "barrier", "other compute" (MXU/VPU work the lane
// depends on), "host compile", "host transfer" (program load, parameter upload), "host tracing",
// "host", "other", "nothing" (no other lane busy).
const char* gap_cause_label(GapCause c);
// JSON keys: "dma_hbm", "mxu_weights", "ici_transfer", "barrier", "compute", "host_compile", ...
const char* gap_cause_key(GapCause c);

}  // namespace tpusim
