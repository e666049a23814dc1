// The values derived from the hardware parameters, each by one rule, here: peaks, a core's share
// of its chip's HBM, rates in bytes per core cycle and latencies in whole core cycles. Blocks,
// engines, the compiler's cost models and the reports read them from a ResolvedHw; none divides the
// chip's HBM by its cores or converts a bandwidth or a latency to the core clock on its own.
// Resolve once per user (an engine when it is built, a compile or a report when it starts):
// resolve_hw() reads nothing but its argument, so a config changed in code resolves afresh.
#pragma once
#include <cstdint>

#include "sim/hw/hw_config.h"

namespace tpusim {

struct ResolvedHw {
  // ---- peaks (bf16 MXU work): every multiplier of a core's MXUs does one multiply-accumulate
  // (2 flop) per cycle.
  double core_peak_flop_per_cycle = 0;  // 2 x MXUs x rows x cols
  double core_peak_tflop_per_s = 0;     // ... at the core clock (10^12 flop/s)
  double device_peak_flop_per_s = 0;    // the cores of one device (a megacore chip's two, else one)

  // ---- HBM: one core's share. Ownership per_core (v2/v3): each core owns 1/cores of the chip's
  // capacity, bandwidth and channels; shared (v4 and later): every core sees all of it.
  bool hbm_per_core = false;                 // ownership per_core
  uint64_t device_hbm_bytes = 0;             // capacity a core (= a device; a megacore's share the chip's) holds
  double core_peak_hbm_gbyte_per_s = 0;      // peak bandwidth (10^9 bytes/s)
  double hbm_core_peak_bytes_per_cycle = 0;  // the same per core cycle: the roofline's memory roof
  double hbm_core_bytes_per_cycle = 0;       // what DMAs stream at: the peak x hbm.efficiency
  uint32_t hbm_core_channels = 0;            // channels of one core: per_core channels / cores, shared all
  uint64_t hbm_latency_cycles = 0;           // request to first data
  uint64_t dma_fixed_cycles = 0;             // a DMA's fixed part: dma.setup_cycles + the HBM latency

  // ---- CMEM (TPU v4; 0 without one): the chip's, seen whole by each of its cores.
  double cmem_bytes_per_cycle = 0;
  uint64_t cmem_latency_cycles = 0;
  uint64_t cmem_dma_fixed_cycles = 0;        // dma.setup_cycles + the CMEM latency

  // ---- network (sim/ici/ici_timing.h has the topology and the transfer formulas).
  uint32_t ici_links_per_neighbour = 0;      // ici.links / (2 x dimensions longer than 1), >= 1
  double ici_link_bytes_per_cycle = 0;       // one link direction of a port: its parallel links together
  uint64_t ici_hop_cycles = 0;
  double noc_bytes_per_cycle = 0;            // the chip's on-chip network, shared by its cores
  uint64_t noc_latency_cycles = 0;
  double pcie_bytes_per_cycle = 0;           // one direction of the chip's host link
  uint64_t pcie_latency_cycles = 0;
  // The data-center network (0 without chip.dcn): a host's network interfaces (its chips' shares
  // together), and one core's share when every core of the host streams at once, as the cores of
  // an SPMD collective do (the analytical engine's rate; SystemC shares the host's NIC as it goes).
  double dcn_host_bytes_per_cycle = 0;
  double dcn_core_bytes_per_cycle = 0;
  uint64_t dcn_latency_cycles = 0;

  // The first HBM channel of core `core` (its channels: [first, first + hbm_core_channels)).
  uint32_t hbm_first_channel(uint32_t core) const { return hbm_per_core ? core * hbm_core_channels : 0; }
};

// The values of `hw` (sim/hw/resolved_hw.cc has the rules).
ResolvedHw resolve_hw(const HwConfig& hw);

}  // namespace tpusim
