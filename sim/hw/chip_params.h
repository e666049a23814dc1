// Parameters of one TPU chip: its TensorCores, HBM, CMEM (v4), on-chip network, ICI ports and PCIe host interface.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "sim/hw/cmem_params.h"
#include "sim/hw/core_params.h"
#include "sim/hw/cost_params.h"
#include "sim/hw/hbm_params.h"
#include "sim/hw/power_params.h"

namespace tpusim {

struct IciParams {
  uint32_t links = 0;                              // ICI ports per chip
  double bandwidth_gbyte_per_s_per_direction = 0;  // per link, one direction
  double hop_latency_ns = 0;                       // per router hop
  uint32_t packet_bytes = 0;                       // network packet: the unit in which links, the NoC and
                                                   // PCIe are reserved (interleaving granularity)
};

// The on-chip network between the TensorCores of one chip (core-to-core transfers on one chip).
struct NocParams {
  double bandwidth_gbyte_per_s = 0;  // shared by all core-to-core transfers of the chip
  double latency_ns = 0;             // source core to destination core
};

struct PcieParams {
  double bandwidth_gbyte_per_s = 0;  // host <-> chip, one direction
  double latency_ns = 0;
};

struct ChipParams {
  std::string generation;  // "v2", "v3", "v4", "v5e", "v5p", "v6e"
  uint32_t cores = 0;      // TensorCores per chip
  // The chip's cores form one device (TPU v4 "megacore"): frameworks see one device per chip, and
  // XLA splits each program over its cores, which share the chip's HBM. false: every core is a
  // device of its own (v2/v3).
  bool megacore = false;
  CoreParams core;         // every core of the chip is identical (declared once, replicated)
  HbmParams hbm;
  std::optional<CmemParams> cmem;  // v4 only; absent (or size 0): no CMEM
  NocParams noc;
  IciParams ici;
  PcieParams pcie;
  std::optional<PowerParams> power;  // absent: no energy figures (sim/power/energy_model.h)
  std::optional<CostParams> cost;    // absent: no cost figures
};

// Devices per chip as frameworks see them (1 on a megacore chip, else one per core) and the
// TensorCores of one device.
inline uint32_t devices_per_chip(const ChipParams& chip) { return chip.megacore ? 1 : chip.cores; }
inline uint32_t cores_per_device(const ChipParams& chip) { return chip.megacore ? chip.cores : 1; }

// Peak bf16 flop per cycle of one core: each multiplier of its MXUs' R x C arrays does one
// multiply-accumulate (2 flop) per cycle: 2 x MXUs x R x C.
inline double core_peak_flop_per_cycle(const ChipParams& chip) {
  return 2.0 * chip.core.mxu.count * chip.core.mxu.rows * chip.core.mxu.cols;
}
inline double core_peak_tflop_per_s(const ChipParams& chip) {
  return core_peak_flop_per_cycle(chip) * chip.core.clock_mhz * 1e6 / 1e12;
}
// Peak HBM GB/s one core sees: the chip's share per core (per_core ownership) or all of it (shared).
inline double core_peak_hbm_gbyte_per_s(const ChipParams& chip) {
  double g = chip.hbm.bandwidth_gbyte_per_s;
  if (chip.hbm.ownership == "per_core" && chip.cores > 0) g /= chip.cores;
  return g;
}

// HBM bytes one device holds: the chip's on a megacore (and wherever the cores share it), a core's
// share with per_core ownership (v2/v3: each TensorCore has its own HBM stacks).
inline uint64_t device_hbm_bytes(const ChipParams& chip) {
  const uint64_t bytes = uint64_t(chip.hbm.size_gib) << 30;
  return chip.hbm.ownership == "per_core" && chip.cores > 0 ? bytes / chip.cores : bytes;
}

// Whether the chip has a CMEM that DMAs may name.
inline bool has_cmem(const ChipParams& chip) { return chip.cmem && chip.cmem->size_mib > 0; }
// CMEM capacity per chip (0 without one).
inline uint64_t cmem_size_bytes(const ChipParams& chip) {
  return has_cmem(chip) ? uint64_t(chip.cmem->size_mib) << 20 : 0;
}

}  // namespace tpusim
