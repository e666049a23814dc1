// Exact-cycle cases both engines must reproduce (contention-free or contention that both model
// the same way), with the derivation of every expected value. Run on "systemc" by the block tests
// and on "analytical" by the unit tests.
//
// Constants of test::v3_8_like() at 940 MHz:
//   launch L = 2000; DMA fixed = setup 64 + ceil(250 ns * 0.94 cycles/ns) = 64 + 235 = 299;
//   core HBM rate = 900e9 * 0.9 / 2 cores / 940e6 = 430.851 B/cycle, so
//   1 MiB takes ceil(1048576 / 430.851) = ceil(2433.73) = 2434 cycles;
//   MXU weight load of k = 128 rows: 128 / 8 = 16; fill + drain = 128 + 128 = 256;
//   VPU: ALU 2 vregs/cycle, EUP 4 cycles/vreg, XLU 8 cycles/vreg, latency 32.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tests/sim/test_program.h"

namespace tpusim::test {

constexpr uint64_t kMiB = 1 << 20;

struct ExactCase {
  std::string name;
  isa::Program program;
  uint64_t device_cycles = 0;
  std::vector<uint64_t> core_cycles;  // per core stream, in program order (empty: not checked)
};

inline std::vector<ExactCase> exact_cycle_cases() {
  std::vector<ExactCase> cases;
  auto add = [&](std::string name, isa::Program p, uint64_t cycles, std::vector<uint64_t> cores = {}) {
    cases.push_back({std::move(name), std::move(p), cycles, std::move(cores)});
  };
  {  // One DMA of 1 MiB: L + setup + latency + transfer = 2000 + 64 + 235 + 2434 = 4733.
    auto p = make_program("dma_1mib");
    Stream(p.cores[0]).dma_load(kMiB);
    add("dma_1mib", std::move(p), 4733);
  }
  {  // Weight load (k=128): 2000..2016. Matmul of 256 rows: streams 2016..2272, completes +256 = 2528.
    auto p = make_program("mxu_weights_matmul");
    Stream s(p.cores[0]);
    uint32_t w = s.weights(0, 128, 128);
    s.matmul(0, 256, 128, 128, {w});
    add("mxu_weights_matmul", std::move(p), 2528);
  }
  {  // Back-to-back matmuls pipeline: M1 streams 2016..2272 (done 2528), M2 streams 2272..2528
     // (done 2784), not 2528 + 512 as if each waited for the previous result.
    auto p = make_program("mxu_back_to_back");
    Stream s(p.cores[0]);
    uint32_t w = s.weights(0, 128, 128);
    s.matmul(0, 256, 128, 128, {w});
    s.matmul(0, 256, 128, 128, {w});
    add("mxu_back_to_back", std::move(p), 2784);
  }
  {  // fp32 "high" = 3 bf16 passes: k=64 loads in 64/8 = 8 (2000..2008); 100 rows x 3 passes =
     // 300 stream cycles (2008..2308); done 2308 + 256 = 2564.
    auto p = make_program("mxu_passes");
    Stream s(p.cores[0]);
    uint32_t w = s.weights(0, 64, 128);
    s.matmul(0, 100, 64, 128, {w}, 3);
    add("mxu_passes", std::move(p), 2564);
  }
  {  // Double-buffered weights: W0 2000..2016, W1 2016..2032 (in order on the weight path),
     // M0 2016..2272 (done 2528), M1 2272..2528 (done 2784), W2 (dep M0) 2528..2544,
     // M2 (dep W2) 2544..2800, done 3056.
    auto p = make_program("mxu_double_buffered");
    Stream s(p.cores[0]);
    uint32_t w0 = s.weights(0, 128, 128);
    uint32_t w1 = s.weights(0, 128, 128);
    uint32_t m0 = s.matmul(0, 256, 128, 128, {w0});
    s.matmul(0, 256, 128, 128, {w1});
    uint32_t w2 = s.weights(0, 128, 128, {m0});
    s.matmul(0, 256, 128, 128, {w2});
    add("mxu_double_buffered", std::move(p), 3056);
  }
  {  // Two MXUs run in parallel: both streams 2016..2528 (512 rows), done 2784 each.
    auto p = make_program("two_mxus");
    Stream s(p.cores[0]);
    uint32_t w0 = s.weights(0, 128, 128);
    uint32_t w1 = s.weights(1, 128, 128);
    s.matmul(0, 512, 128, 128, {w0});
    s.matmul(1, 512, 128, 128, {w1});
    add("two_mxus", std::move(p), 2784);
  }
  {  // ALU-bound: max(ceil(1000/2)=500, 100*4=400, 300, 300) = 500; done 2000 + 500 + 32 = 2532.
    auto p = make_program("vpu_alu_bound");
    Stream(p.cores[0]).vpu({.alu_vregs = 1000, .eup_vregs = 100, .vld_vregs = 300, .vst_vregs = 300});
    add("vpu_alu_bound", std::move(p), 2532);
  }
  {  // EUP-bound: max(500, 200*4 = 800) = 800; done 2000 + 800 + 32 = 2832.
    auto p = make_program("vpu_eup_bound");
    Stream(p.cores[0]).vpu({.alu_vregs = 1000, .eup_vregs = 200});
    add("vpu_eup_bound", std::move(p), 2832);
  }
  {  // XLU-bound: max(500, 150*4 = 600, 110*8 = 880) = 880; done 2000 + 880 + 32 = 2912.
    auto p = make_program("vpu_xlu_bound");
    Stream(p.cores[0]).vpu({.alu_vregs = 1000, .eup_vregs = 150, .xlu_vregs = 110});
    add("vpu_xlu_bound", std::move(p), 2912);
  }
  {  // Chain DMA -> MXU -> VPU -> DMA: load done 4733; weights 4733..4749; matmul 4749..5005,
     // done 5261; VPU (512 ALU vregs = 256 cycles) 5261..5517, done 5549; store of 1 MiB
     // 5549 + 299 + 2434 = 8282.
    auto p = make_program("chain");
    Stream s(p.cores[0]);
    uint32_t d = s.dma_load(kMiB);
    uint32_t w = s.weights(0, 128, 128, {d});
    uint32_t m = s.matmul(0, 256, 128, 128, {w});
    uint32_t v = s.vpu({.alu_vregs = 512}, {m});
    s.dma_store(kMiB, {v});
    add("chain", std::move(p), 8282);
  }
  {  // In order per unit: V1 waits for the load (4733) and V2 (no deps) waits behind V1:
     // V1 4733..4833 (done 4865), V2 4833..4933 (done 4965).
    auto p = make_program("vpu_in_order");
    Stream s(p.cores[0]);
    uint32_t d = s.dma_load(kMiB);
    s.vpu({.alu_vregs = 200}, {d});
    s.vpu({.alu_vregs = 200});
    add("vpu_in_order", std::move(p), 4965);
  }
  {  // DMA issue is in order too: V 2000..3000 (done 3032); D1 (0 bytes, dep V) 3032..3331;
     // D2 (0 bytes, no deps) is behind D1 so it starts at 3032 too (another engine), done 3331;
     // V2 (dep D2, 1 cycle) starts at 3331, done 3331 + 1 + 32 = 3364. Out of order it would
     // have been max(2299, 3000) + 1 + 32 = 3033.
    auto p = make_program("dma_in_order");
    Stream s(p.cores[0]);
    uint32_t v = s.vpu({.alu_vregs = 2000});
    s.dma_load(0, {v});
    uint32_t d2 = s.dma_load(0);
    s.vpu({.alu_vregs = 2}, {d2});
    add("dma_in_order", std::move(p), 3364);
  }
  {  // DMA engines overlap: 5 zero-byte transfers (299 cycles each, no bandwidth): 4 engines run
     // 2000..2299 in parallel, the fifth takes the first engine freed: 2299..2598.
    auto p = make_program("dma_engines");
    Stream s(p.cores[0]);
    for (int i = 0; i < 5; ++i) s.dma_load(0);
    add("dma_engines", std::move(p), 2598);
  }
  {  // Two concurrent 1 MiB loads on one core share its bandwidth: the second waits for the
     // first's data: 2064 + 2 * 2433.73 = 6931.46 -> 6932, + 235 = 7167 (first: 4733).
     // SystemC: both reserve the same 16 channels; analytical: one serial server. Same result.
    auto p = make_program("dma_contention");
    Stream s(p.cores[0]);
    s.dma_load(kMiB);
    s.dma_load(kMiB);
    add("dma_contention", std::move(p), 7167);
  }
  {  // per_core ownership: the two cores of a chip have separate channels and bandwidth, so
     // their 1 MiB loads do not interfere: 4733 each.
    auto p = make_program("two_cores", {{0, 0}, {0, 1}});
    Stream(p.cores[0]).dma_load(kMiB);
    Stream(p.cores[1]).dma_load(kMiB);
    add("two_cores", std::move(p), 4733, {4733, 4733});
  }
  {  // Barrier across chips: chip0.core0 reaches it after its load (4733), chip3.core1 after a
     // 100-cycle VPU block (2132); it completes at 4733 and both VPUs run 4733..4833 (done 4865).
    auto p = make_program("barrier", {{0, 0}, {3, 1}});
    Stream a(p.cores[0]), b(p.cores[1]);
    uint32_t d = a.dma_load(kMiB);
    uint32_t ba = a.barrier(9, {d});
    a.vpu({.alu_vregs = 200}, {ba});
    uint32_t v = b.vpu({.alu_vregs = 200});
    uint32_t bb = b.barrier(9, {v});
    b.vpu({.alu_vregs = 200}, {bb});
    add("barrier", std::move(p), 4865, {4865, 4865});
  }
  {  // An empty stream ends at the launch: 2000.
    auto p = make_program("empty");
    add("empty", std::move(p), 2000, {2000});
  }
  return cases;
}

}  // namespace tpusim::test
