// Hardware configs for the simulator tests, built in code (independent of the YAML loader).
#pragma once
#include "sim/hw/hw_config.h"

namespace tpusim::test {

// A v3-8-like slice: 2x2 chips (mesh), 2 TensorCores per chip, 2 MXUs of 128x128 per core.
inline HwConfig v3_8_like() {
  HwConfig hw;
  hw.name = "test-v3-8";
  ChipParams& c = hw.chip;
  c.generation = "v3";
  c.cores = 2;
  c.core.clock_mhz = 940;
  c.core.sequencer.launch_cycles = 2000;
  c.core.mxu = {.count = 2, .rows = 128, .cols = 128, .weight_buffers = 2, .weight_load_rows_per_cycle = 8,
                .lhs_rows_per_cycle = 1};
  c.core.vpu = {.sublanes = 8, .lanes = 128, .alu_slots = 2, .vld_slots = 1, .vst_slots = 1,
                .eup_cycles_per_vreg = 4, .xlu_cycles_per_vreg = 8, .pipeline_latency_cycles = 32};
  c.core.vmem.size_mib = 16;
  c.core.dma = {.engines = 4, .setup_cycles = 64, .chunk_bytes = 32768};
  c.core.xfer.channels = 5;  // as the shipped v3: one per ICI port + one
  c.hbm = {.impl = "simple", .size_gib = 32, .bandwidth_gbyte_per_s = 900, .efficiency = 0.9, .channels = 32,
           .latency_ns = 250, .ownership = HbmOwnership::kPerCore};
  c.noc = {.bandwidth_gbyte_per_s = 200, .latency_ns = 100};
  c.ici = {.links = 4, .bandwidth_gbyte_per_s_per_direction = 82, .hop_latency_ns = 1000, .packet_bytes = 4096};
  c.pcie = {.bandwidth_gbyte_per_s = 16, .latency_ns = 0};
  hw.slice.topology.dims = {2, 2};
  hw.slice.topology.wraparound = {false, false};
  hw.slice.hosts = 1;
  hw.slice.chips_per_host = 4;
  hw.host = {.cpus = 96, .ram_gib = 340, .cpu_ghz = 2.0};
  return hw;
}

// v3_8_like() set up for transfers as the shipped configs are: HBM requests of 2 KiB (a
// transfer's reads and writes spread over all of the core's 16 channels) and a PCIe latency of
// 1 us. Same structure, so it shares the elaborated SystemC slice with v3_8_like().
// Rates at 940 MHz, in bytes per cycle: HBM per core 900e9 * 0.9 / 2 / 940e6 = 430.851;
// ICI link 82e9 / 940e6 = 87.234 (4 links / (2 * 2 dimensions) = 1 link per neighbour);
// NoC 200e9 / 940e6 = 212.766; PCIe 16e9 / 940e6 = 17.021. Latencies in cycles: HBM
// ceil(250 * 0.94) = 235, hop ceil(1000 * 0.94) = 940, NoC ceil(100 * 0.94) = 94, PCIe 940.
inline HwConfig v3_8_ici() {
  HwConfig hw = v3_8_like();
  hw.chip.core.dma.chunk_bytes = 2048;
  hw.chip.pcie.latency_ns = 1000;
  return hw;
}

}  // namespace tpusim::test
