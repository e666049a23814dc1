#include "sim/hw/resolved_hw.h"

#include <algorithm>

#include "sim/base/clock.h"

namespace tpusim {

ResolvedHw resolve_hw(const HwConfig& hw) {
  const ChipParams& chip = hw.chip;
  const Clock clock{chip.core.clock_mhz};
  ResolvedHw r;
  r.core_peak_flop_per_cycle = 2.0 * chip.core.mxu.count * chip.core.mxu.rows * chip.core.mxu.cols;
  r.core_peak_tflop_per_s = r.core_peak_flop_per_cycle * chip.core.clock_mhz * 1e6 / 1e12;
  r.device_peak_flop_per_s = r.core_peak_tflop_per_s * cores_per_device(chip) * 1e12;

  r.hbm_per_core = chip.hbm.ownership == HbmOwnership::kPerCore;
  const uint32_t owners = r.hbm_per_core ? std::max<uint32_t>(chip.cores, 1) : 1;  // cores the chip's HBM is split over
  r.device_hbm_bytes = (uint64_t(chip.hbm.size_gib) << 30) / owners;
  r.core_peak_hbm_gbyte_per_s = chip.hbm.bandwidth_gbyte_per_s / owners;
  r.hbm_core_peak_bytes_per_cycle = clock.bytes_per_cycle(r.core_peak_hbm_gbyte_per_s);
  r.hbm_core_bytes_per_cycle = clock.bytes_per_cycle(chip.hbm.bandwidth_gbyte_per_s * chip.hbm.efficiency / owners);
  r.hbm_core_channels = chip.hbm.channels / owners;  // the schema makes per_core channels a multiple of cores
  r.hbm_latency_cycles = clock.cycles_from_ns(chip.hbm.latency_ns);
  r.dma_fixed_cycles = chip.core.dma.setup_cycles + r.hbm_latency_cycles;

  if (has_cmem(chip)) {
    r.cmem_bytes_per_cycle = clock.bytes_per_cycle(chip.cmem->bandwidth_gbyte_per_s);
    r.cmem_latency_cycles = clock.cycles_from_ns(chip.cmem->latency_ns);
  }
  r.cmem_dma_fixed_cycles = chip.core.dma.setup_cycles + r.cmem_latency_cycles;

  uint32_t long_dims = 0;
  for (uint32_t d : hw.slice.topology.dims) long_dims += d > 1;
  r.ici_links_per_neighbour = std::max<uint32_t>(long_dims == 0 ? chip.ici.links : chip.ici.links / (2 * long_dims), 1);
  r.ici_link_bytes_per_cycle = clock.bytes_per_cycle(r.ici_links_per_neighbour * chip.ici.bandwidth_gbyte_per_s_per_direction);
  r.ici_hop_cycles = clock.cycles_from_ns(chip.ici.hop_latency_ns);
  r.noc_bytes_per_cycle = clock.bytes_per_cycle(chip.noc.bandwidth_gbyte_per_s);
  r.noc_latency_cycles = clock.cycles_from_ns(chip.noc.latency_ns);
  r.pcie_bytes_per_cycle = clock.bytes_per_cycle(chip.pcie.bandwidth_gbyte_per_s);
  r.pcie_latency_cycles = clock.cycles_from_ns(chip.pcie.latency_ns);
  if (chip.dcn) {
    const uint32_t chips = std::max<uint32_t>(hw.slice.chips_per_host, 1);
    r.dcn_host_bytes_per_cycle = clock.bytes_per_cycle(chip.dcn->bandwidth_gbyte_per_s * chips);
    r.dcn_core_bytes_per_cycle = r.dcn_host_bytes_per_cycle / (chips * std::max<uint32_t>(chip.cores, 1));
    r.dcn_latency_cycles = clock.cycles_from_ns(chip.dcn->latency_us * 1e3);
  }
  return r;
}

}  // namespace tpusim
