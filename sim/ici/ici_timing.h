// Slice topology, routing and the timing formulas of transfers between cores (ICI, on-chip NoC)
// and with the host (PCIe). Shared by the SystemC model, the analytical engine and the compiler's
// cost model; header-only, no SystemC.
//
// Topology: chips on a 1-3 D grid (`slice.topology.dims`), chip id = x + d0 * (y + d1 * z). A
// dimension with `wraparound` is a ring (torus), otherwise a line (mesh). Each chip has two ICI
// ports per dimension, "x+" / "x-" (y, z likewise), wired to the neighbour in that direction when
// there is one (a mesh edge has none; a dimension of size 1 has none).
// Routing: dimension order (x first, then y, then z); on a ring the shorter way round, ties go
// the positive way. Hops = sum over dimensions of the distance travelled.
// Links per neighbour: `ici.links / (2 * dimensions longer than 1)`, at least 1; the parallel
// links of one port act as one link of their summed bandwidth (the port's "link direction").
//
// A transfer without contention, in core cycles from the moment the core's transfer queue takes it:
//   setup  = dma.setup_cycles: descriptor issue (the transfer queue is a DMA engine of the core)
//   read   = HBM latency when the data comes from this core's HBM (send, host store), else 0
//   stream = ceil(bytes / rate), rate = the slowest stage of the path: the source core's HBM
//            share, every link (or the NoC, or PCIe), the destination core's HBM share. Packets
//            are cut through (forwarded while still arriving), so stages overlap and only the
//            slowest one counts; latency adds once per stage, not per packet.
//   path   = hops * ici.hop_latency (other chip) | noc.latency (same chip) | pcie.latency (host)
//            | pcie.latency + dcn.latency (a data-center-network store, multislice)
//   The queue is busy for setup + read + stream (the last byte has left the source); the
//   transfer completes (send and its recv) after setup + read + stream + path (the last byte is
//   in the destination). Writes into HBM are posted: they reserve HBM bandwidth but their latency
//   is not on the path.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/hw/hw_config.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim {

inline constexpr uint32_t kMaxIciDims = 3;
using ChipCoords = std::array<uint32_t, kMaxIciDims>;

// Fractional cycles of a bandwidth server rounded up to whole cycles; the tolerance absorbs the
// rounding of sums of fractions (both engines round through this, so they agree).
inline constexpr double kCycleEps = 1e-6;
inline uint64_t ceil_cycles(double x) { return x <= 0 ? 0 : uint64_t(std::ceil(x - kCycleEps)); }

// ---- ports ----
// Port index 2 * dim + (0 for "+", 1 for "-"): x+ = 0, x- = 1, y+ = 2, ...
inline uint32_t ici_port_index(uint32_t dim, int dir) { return 2 * dim + (dir < 0 ? 1 : 0); }
inline uint32_t ici_port_dim(uint32_t port) { return port / 2; }
inline int ici_port_dir(uint32_t port) { return port % 2 ? -1 : +1; }
inline std::string ici_port_name(uint32_t port) {
  std::string name = "x+";
  name[0] = "xyz"[ici_port_dim(port)];
  name[1] = ici_port_dir(port) > 0 ? '+' : '-';
  return name;
}
inline uint32_t ici_port_count(const TopologyParams& t) { return 2 * uint32_t(t.dims.size()); }

// ---- coordinates ----
inline ChipCoords chip_coords(const TopologyParams& t, uint32_t chip) {
  ChipCoords c{};
  for (size_t d = 0; d < t.dims.size(); ++d) {
    c[d] = chip % t.dims[d];
    chip /= t.dims[d];
  }
  return c;
}
inline uint32_t chip_at(const TopologyParams& t, const ChipCoords& c) {
  uint32_t id = 0;
  for (size_t d = t.dims.size(); d-- > 0;) id = id * t.dims[d] + c[d];
  return id;
}
inline bool ici_ring(const TopologyParams& t, uint32_t dim) {
  return dim < t.wraparound.size() && t.wraparound[dim] && t.dims[dim] > 1;
}

// The chip behind `port` of `chip`, if the port is wired.
inline std::optional<uint32_t> ici_neighbour(const TopologyParams& t, uint32_t chip, uint32_t port) {
  const uint32_t dim = ici_port_dim(port);
  if (dim >= t.dims.size() || t.dims[dim] < 2) return std::nullopt;
  const uint32_t n = t.dims[dim];
  ChipCoords c = chip_coords(t, chip);
  if (ici_port_dir(port) > 0) {
    if (c[dim] + 1 < n) ++c[dim];
    else if (ici_ring(t, dim)) c[dim] = 0;
    else return std::nullopt;
  } else {
    if (c[dim] > 0) --c[dim];
    else if (ici_ring(t, dim)) c[dim] = n - 1;
    else return std::nullopt;
  }
  return chip_at(t, c);
}

// The wired ports of `chip`, in port order.
inline std::vector<uint32_t> ici_ports_of(const TopologyParams& t, uint32_t chip) {
  std::vector<uint32_t> ports;
  for (uint32_t p = 0; p < ici_port_count(t); ++p)
    if (ici_neighbour(t, chip, p)) ports.push_back(p);
  return ports;
}

// ---- routing ----
// Direction (+1 / -1) and distance from coordinate `from` to `to` along dimension `dim`.
inline int ici_direction(const TopologyParams& t, uint32_t dim, uint32_t from, uint32_t to) {
  if (!ici_ring(t, dim)) return to >= from ? +1 : -1;
  const uint32_t n = t.dims[dim];
  const uint32_t fwd = (to + n - from) % n;
  return fwd <= n - fwd ? +1 : -1;  // ties go the positive way
}
inline uint32_t ici_distance(const TopologyParams& t, uint32_t dim, uint32_t from, uint32_t to) {
  if (!ici_ring(t, dim)) return to >= from ? to - from : from - to;
  const uint32_t n = t.dims[dim];
  const uint32_t fwd = (to + n - from) % n;
  return std::min(fwd, n - fwd);
}

inline uint32_t ici_hops(const TopologyParams& t, uint32_t src, uint32_t dst) {
  const ChipCoords a = chip_coords(t, src), b = chip_coords(t, dst);
  uint32_t hops = 0;
  for (uint32_t d = 0; d < t.dims.size(); ++d) hops += ici_distance(t, d, a[d], b[d]);
  return hops;
}

// The port through which a packet at chip `cur` leaves towards `dst` (cur != dst).
inline uint32_t ici_next_port(const TopologyParams& t, uint32_t cur, uint32_t dst) {
  const ChipCoords a = chip_coords(t, cur), b = chip_coords(t, dst);
  for (uint32_t d = 0; d < t.dims.size(); ++d)
    if (a[d] != b[d]) return ici_port_index(d, ici_direction(t, d, a[d], b[d]));
  return UINT32_MAX;  // cur == dst: no port
}

// A directed link: leaves `chip` through `port`.
struct IciHop {
  uint32_t chip = 0;
  uint32_t port = 0;
  bool operator==(const IciHop&) const = default;
};

// The links a transfer from `src` to `dst` crosses, in order (empty when src == dst).
inline std::vector<IciHop> ici_path(const TopologyParams& t, uint32_t src, uint32_t dst) {
  std::vector<IciHop> path;
  for (uint32_t cur = src; cur != dst;) {
    const uint32_t port = ici_next_port(t, cur, dst);
    path.push_back({cur, port});
    cur = *ici_neighbour(t, cur, port);
  }
  return path;
}

// ---- rates and latencies in core cycles (links per neighbour included): sim/hw/resolved_hw.h ----

// Packets of a message: a zero-byte message is still one (header-only) packet.
inline uint64_t network_packets(const ChipParams& chip, uint64_t bytes) {
  const uint64_t p = std::max<uint32_t>(chip.ici.packet_bytes, 1);
  return std::max<uint64_t>(1, (bytes + p - 1) / p);
}

// ---- one transfer without contention ----
struct TransferEstimate {
  uint32_t hops = 0;             // ICI hops (0: same chip through the NoC, or host)
  double bytes_per_cycle = 0;    // the path's rate: its slowest stage
  uint64_t setup_cycles = 0;     // descriptor issue
  uint64_t read_cycles = 0;      // HBM latency of the source read (0 when the source is the host)
  uint64_t stream_cycles = 0;    // ceil(bytes / bytes_per_cycle)
  uint64_t path_cycles = 0;      // latency of the path after the last byte left the source

  uint64_t queue_cycles() const { return setup_cycles + read_cycles + stream_cycles; }
  uint64_t total_cycles() const { return queue_cycles() + path_cycles; }
};

// kSend of `bytes` from a core of `src_chip` to a core of `dst_chip` (the NoC when equal).
inline TransferEstimate send_estimate(const HwConfig& hw, const ResolvedHw& r, uint32_t src_chip, uint32_t dst_chip,
                                      uint64_t bytes) {
  TransferEstimate e;
  e.hops = ici_hops(hw.slice.topology, src_chip, dst_chip);
  const double hbm = r.hbm_core_bytes_per_cycle;  // both ends: every core has the same share
  const double net = src_chip == dst_chip ? r.noc_bytes_per_cycle : r.ici_link_bytes_per_cycle;
  e.bytes_per_cycle = std::min(hbm, net);
  e.setup_cycles = hw.chip.core.dma.setup_cycles;
  e.read_cycles = r.hbm_latency_cycles;
  e.stream_cycles = ceil_cycles(double(bytes) / e.bytes_per_cycle);
  e.path_cycles = src_chip == dst_chip ? r.noc_latency_cycles : e.hops * r.ici_hop_cycles;
  return e;
}

// kHostLoad (host RAM -> HBM, `load`) or kHostStore (HBM -> host RAM) over the chip's PCIe link.
// `dcn`: a data-center-network store (isa::Instr::dcn, multislice): on from the host through its
// network interface to the other slice's host RAM. Cut through like the others: the rate is the
// slowest stage, here also the core's share of its host's NICs when every core of the host streams
// at once (ResolvedHw::dcn_core_bytes_per_cycle), and the path adds the DCN's latency, host to host.
inline TransferEstimate host_transfer_estimate(const HwConfig& hw, const ResolvedHw& r, bool load, uint64_t bytes,
                                               bool dcn = false) {
  TransferEstimate e;
  e.bytes_per_cycle = std::min(r.hbm_core_bytes_per_cycle, r.pcie_bytes_per_cycle);
  if (dcn) e.bytes_per_cycle = std::min(e.bytes_per_cycle, r.dcn_core_bytes_per_cycle);
  e.setup_cycles = hw.chip.core.dma.setup_cycles;
  e.read_cycles = load ? 0 : r.hbm_latency_cycles;
  e.stream_cycles = ceil_cycles(double(bytes) / e.bytes_per_cycle);
  e.path_cycles = r.pcie_latency_cycles + (dcn ? r.dcn_latency_cycles : 0);
  return e;
}

}  // namespace tpusim
