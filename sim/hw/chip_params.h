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

// The data-center network (DCN) that joins the slices of a multislice run: the chip's share of its
// host's network interfaces. DCN traffic goes HBM -> PCIe -> host -> NIC -> ... -> the other
// slice's host -> PCIe -> HBM (sim/ici/ici_timing.h: dcn_store_estimate).
struct DcnParams {
  double bandwidth_gbyte_per_s = 0;  // per chip, one direction: the host's NIC bandwidth / its chips
  double latency_us = 0;             // host to host, one way, including the hosts' network stacks
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
  std::optional<DcnParams> dcn;      // absent: the chip's slices cannot be joined (no multislice)
  std::optional<PowerParams> power;  // absent: no energy figures (sim/power/energy_model.h)
  std::optional<CostParams> cost;    // absent: no cost figures
};

// Devices per chip as frameworks see them (1 on a megacore chip, else one per core) and the
// TensorCores of one device.
inline uint32_t devices_per_chip(const ChipParams& chip) { return chip.megacore ? 1 : chip.cores; }
inline uint32_t cores_per_device(const ChipParams& chip) { return chip.megacore ? chip.cores : 1; }

// Whether the chip has a CMEM that DMAs may name.
inline bool has_cmem(const ChipParams& chip) { return chip.cmem && chip.cmem->size_mib > 0; }
// CMEM capacity per chip (0 without one).
inline uint64_t cmem_size_bytes(const ChipParams& chip) {
  return has_cmem(chip) ? uint64_t(chip.cmem->size_mib) << 20 : 0;
}

}  // namespace tpusim
