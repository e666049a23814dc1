#include "traces/lane_kind.h"

#include <cctype>

namespace tpusim {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

// "core0.mxu1.weights" -> "mxu1.weights"; "hbm.ch3" -> "hbm.ch3".
std::string_view without_core(std::string_view track) {
  if (lane_core(track) < 0) return track;
  return track.substr(track.find('.') + 1);
}

}  // namespace

int lane_core(std::string_view track) {
  if (!starts_with(track, "core") || track.size() < 5 || !std::isdigit(static_cast<unsigned char>(track[4])))
    return -1;
  int v = 0;
  size_t i = 4;
  while (i < track.size() && std::isdigit(static_cast<unsigned char>(track[i])) && v < 1000000) v = v * 10 + (track[i++] - '0');
  return i == track.size() || track[i] == '.' ? v : -1;
}

LaneKind classify_lane(std::string_view process, std::string_view track) {
  if (starts_with(process, "host")) return LaneKind::kHost;
  const std::string_view lane = without_core(track);
  size_t alpha = 0;
  while (alpha < lane.size() && std::isalpha(static_cast<unsigned char>(lane[alpha]))) ++alpha;
  const std::string_view word = lane.substr(0, alpha);
  if (word == "mxu") return LaneKind::kMxu;
  if (word == "vpu") return LaneKind::kVpu;
  if (word == "dma" || word == "hbm") return LaneKind::kDmaHbm;
  if (word == "xfer" || word == "noc" || word == "ici" || word == "pcie") return LaneKind::kIciTransfer;
  if (word == "sync") return LaneKind::kBarrier;
  if (word == "step" && lane_core(track) >= 0) return LaneKind::kDeviceStep;
  return LaneKind::kOther;
}

const char* lane_kind_label(LaneKind k) {
  switch (k) {
    case LaneKind::kMxu: return "MXU";
    case LaneKind::kVpu: return "VPU";
    case LaneKind::kDmaHbm: return "DMA/HBM";
    case LaneKind::kIciTransfer: return "ICI/transfer";
    case LaneKind::kBarrier: return "barrier";
    case LaneKind::kHost: return "host";
    case LaneKind::kDeviceStep: return "device step";
    case LaneKind::kOther: return "other";
  }
  return "other";
}

const char* lane_kind_key(LaneKind k) {
  switch (k) {
    case LaneKind::kMxu: return "mxu";
    case LaneKind::kVpu: return "vpu";
    case LaneKind::kDmaHbm: return "dma_hbm";
    case LaneKind::kIciTransfer: return "ici_transfer";
    case LaneKind::kBarrier: return "barrier";
    case LaneKind::kHost: return "host";
    case LaneKind::kDeviceStep: return "device_step";
    case LaneKind::kOther: return "other";
  }
  return "other";
}

bool is_compute_lane(LaneKind k, std::string_view track) {
  if (k == LaneKind::kMxu) return !ends_with(track, ".weights");
  return k == LaneKind::kVpu || k == LaneKind::kDeviceStep;
}

GapCause gap_cause(LaneKind k, std::string_view track) {
  switch (k) {
    case LaneKind::kDmaHbm: return GapCause::kDmaHbm;
    case LaneKind::kMxu: return ends_with(track, ".weights") ? GapCause::kMxuWeights : GapCause::kCompute;
    case LaneKind::kVpu: return GapCause::kCompute;
    case LaneKind::kIciTransfer: return GapCause::kIciTransfer;
    case LaneKind::kBarrier: return GapCause::kBarrier;
    case LaneKind::kHost:
      if (track == "compile") return GapCause::kHostCompile;
      if (track == "transfer") return GapCause::kHostTransfer;
      if (track == "tracing") return GapCause::kHostTracing;
      return GapCause::kHostOther;
    case LaneKind::kDeviceStep: return GapCause::kCompute;
    case LaneKind::kOther: return GapCause::kOther;
  }
  return GapCause::kOther;
}

const char* gap_cause_label(GapCause c) {
  switch (c) {
    case GapCause::kDmaHbm: return "DMA/HBM";
    case GapCause::kMxuWeights: return "MXU weight load";
    case GapCause::kIciTransfer: return "ICI/transfer";
    case GapCause::kBarrier: return "barrier";
    case GapCause::kCompute: return "other compute";
    case GapCause::kHostCompile: return "host compile";
    case GapCause::kHostTransfer: return "host transfer";
    case GapCause::kHostTracing: return "host tracing";
    case GapCause::kHostOther: return "host";
    case GapCause::kOther: return "other";
    case GapCause::kNothing: return "nothing";
  }
  return "other";
}

const char* gap_cause_key(GapCause c) {
  switch (c) {
    case GapCause::kDmaHbm: return "dma_hbm";
    case GapCause::kMxuWeights: return "mxu_weights";
    case GapCause::kIciTransfer: return "ici_transfer";
    case GapCause::kBarrier: return "barrier";
    case GapCause::kCompute: return "compute";
    case GapCause::kHostCompile: return "host_compile";
    case GapCause::kHostTransfer: return "host_transfer";
    case GapCause::kHostTracing: return "host_tracing";
    case GapCause::kHostOther: return "host_other";
    case GapCause::kOther: return "other";
    case GapCause::kNothing: return "nothing";
  }
  return "other";
}

}  // namespace tpusim
