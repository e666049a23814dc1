// block: on contention-free programs the two engines give identical cycles — they share every
// unit's timing model (sim/README.md, "One timing model per block") — except for the one rule
// they do not share, the HBM: the SystemC HBM spreads a transfer's requests round-robin over the
// core's channels (sim/hbm/hbm_interleave.h), the analytical engine serves the core's bandwidth as
// one server (sim/hbm/hbm_server.h). Alone, a transfer takes the same time in both exactly when
// it is a whole number of interleave rounds (the core's channels x dma.chunk_bytes: 16 x 2 KiB =
// 32 KiB on the shipped v3); otherwise SystemC takes as long as the transfer's busiest channel.
// So, on the shipped v3-8 (configs/hw/v3-8.yaml):
//  * random kernel-like programs with one DMA in flight per core, transfers one at a time in the
//    slice, barriers, MXU and VPU work: identical cycles and stats when every DMA and transfer is
//    a whole number of rounds, and for any sizes when each core has one HBM channel;
//  * a serial chain of DMAs of any size: SystemC is slower by exactly the interleave excess of
//    its DMAs, hbm_interleaved_cycles - hbm_transfer_cycles, summed;
//  * compiled single kernels with one DMA engine (so one DMA at a time): identical when their DMAs
//    are whole rounds, or with one channel per core; otherwise SystemC is slower by at most the
//    summed excess (measured gaps in sim/README.md).
// "Contention-free": no two DMAs or transfers of a core use its HBM at once, no two transfers
// share a link, the NoC or PCIe.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "sim/hbm/hbm_interleave.h"
#include "sim/hbm/hbm_timing.h"
#include "sim/hw/resolved_hw.h"
#include "tests/sim/test_program.h"

namespace tpusim {
namespace {

// The shipped v3-8: per core 16 HBM channels, requests of 2 KiB.
HwConfig v3_8() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }
// The same with one HBM channel per core: every request covers all of its core's channels.
HwConfig v3_8_one_channel() {
  HwConfig hw = v3_8();
  hw.chip.hbm.channels = hw.chip.cores;
  return hw;
}
uint64_t interleave_round(const HwConfig& hw) {
  return uint64_t(resolve_hw(hw).hbm_core_channels) * hw.chip.core.dma.chunk_bytes;
}

struct Engines {
  explicit Engines(const HwConfig& hw) : sc(make_engine("systemc", hw)), an(make_engine("analytical", hw)) {}
  std::unique_ptr<Engine> sc, an;
};

struct Pair {
  RunResult sc, an;
  int64_t gap() const { return int64_t(sc.device_cycles) - int64_t(an.device_cycles); }
};
Pair run_both(Engines& e, const isa::Program& p) { return {e.sc->run(p, nullptr), e.an->run(p, nullptr)}; }

// Identical cycles on every core, and the same stats (SystemC's per-channel HBM groups aside).
void expect_identical(Engines& e, const isa::Program& p) {
  const Pair r = run_both(e, p);
  EXPECT_EQ(r.sc.device_cycles, r.an.device_cycles) << p.name;
  ASSERT_EQ(r.sc.cores.size(), r.an.cores.size()) << p.name;
  for (size_t i = 0; i < r.an.cores.size(); ++i) EXPECT_EQ(r.sc.cores[i].end_cycle, r.an.cores[i].end_cycle) << p.name << " core " << i;
  for (auto& [key, group] : r.an.stats.items()) {
    ASSERT_TRUE(r.sc.stats.contains(key)) << p.name << " " << key;
    for (auto& [stat, value] : group.items()) {
      const double a = value["value"].get<double>(), s = r.sc.stats[key][stat]["value"].get<double>();
      EXPECT_NEAR(s, a, 1e-9 * std::max(1.0, std::abs(a))) << p.name << " " << key << "." << stat;
    }
  }
}

// Cycles SystemC's HBM adds to the DMAs of `p` when each runs alone (hbm_interleave.h).
uint64_t interleave_excess(const HwConfig& hw, const isa::Program& p) {
  const ResolvedHw r = resolve_hw(hw);
  uint64_t excess = 0;
  for (size_t c = 0; c < p.cores.size(); ++c)
    for (const isa::Instr& i : isa::expanded_instrs(p.stream(c)))
      if ((i.op == isa::Op::kDmaLoad || i.op == isa::Op::kDmaStore) && i.mem == isa::MemSpace::kHbm && i.bytes > 0)
        excess += hbm_interleaved_cycles(r, hw.chip.core.dma.chunk_bytes, i.bytes) -
                  hbm_transfer_cycles(r.hbm_core_bytes_per_cycle, i.bytes);
  return excess;
}

// A random kernel-like program on cores of several chips: per core, tiles of (load input, load
// weights, weight load on an MXU, matmul, VPU epilogue, store) with random extra MXU and VPU work,
// every DMA behind the core's previous one (one DMA engine user at a time); now and then a phase
// of transfers between two barriers that pass a token along the cores (send, recv, send, ...,
// host store, host load: one transfer in the slice at a time) while no DMA runs. `bytes` draws a
// DMA's or a transfer's size.
template <class Bytes>
isa::Program kernel_like(const std::string& name, uint32_t seed, Bytes bytes) {
  std::mt19937 rng(seed);
  auto pick = [&](uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); };
  // Same chip (NoC), neighbours (one ICI hop), two hops, and back.
  isa::Program p = test::make_program(name, {{0, 0}, {0, 1}, {1, 0}, {3, 1}});
  const uint32_t n = uint32_t(p.cores.size());
  std::vector<test::Stream> s;
  for (auto& c : p.cores) s.emplace_back(c);
  std::vector<int64_t> last_dma(n, -1);
  std::vector<std::vector<std::vector<uint32_t>>> tile_users(n, std::vector<std::vector<uint32_t>>(2));
  auto dma = [&](uint32_t c, bool load, uint64_t b, std::vector<uint32_t> deps) {
    if (last_dma[c] >= 0) deps.push_back(uint32_t(last_dma[c]));
    const uint32_t i = s[c].with_deps(load ? s[c].dma_load(b) : s[c].dma_store(b), deps);
    last_dma[c] = i;
    return i;
  };
  uint32_t barrier_id = 0, tag = 0;
  for (int tile = 0; tile < 24; ++tile) {
    for (uint32_t c = 0; c < n; ++c) {
      test::Stream& st = s[c];
      const uint32_t in = dma(c, true, bytes(rng), {});
      const uint32_t w = dma(c, true, bytes(rng), {});
      const uint32_t m = pick(2);
      const uint32_t wt = st.with_deps(st.weights(m, 8 * (1 + pick(16)), 128, {w}), tile_users[c][m]);
      tile_users[c][m].clear();
      const uint32_t mm = st.matmul(m, 1 + pick(512), 128, 128, {wt, in}, pick(2) ? 1 : 3);
      tile_users[c][m].push_back(mm);
      const uint32_t v = st.vpu({.alu_vregs = pick(2000), .eup_vregs = pick(300), .xlu_vregs = pick(100),
                                 .vld_vregs = pick(500), .vst_vregs = pick(500)},
                                {mm});
      if (pick(3) == 0) st.vpu({.alu_vregs = pick(4000)}, {in});  // independent of the matmul
      if (pick(4) == 0) dma(c, false, 0, {v});                    // a zero-byte DMA
      dma(c, false, bytes(rng), {v});
    }
    if (pick(4) != 0) continue;
    // A transfer phase: no DMA runs from the first barrier to the second.
    const uint32_t open = barrier_id++, close = barrier_id++;
    std::vector<uint32_t> entered(n), left(n);
    for (uint32_t c = 0; c < n; ++c) entered[c] = s[c].barrier(open, {uint32_t(last_dma[c])});
    int64_t token = -1;
    for (uint32_t c = 0; c < n; ++c) {
      test::Stream& st = s[c];
      uint32_t got = entered[c];
      if (c > 0) got = st.recv(p.cores[c - 1].chip, p.cores[c - 1].core, uint32_t(token), {entered[c]});
      if (c + 1 < n) {
        token = tag++;
        left[c] = st.send(bytes(rng), p.cores[c + 1].chip, p.cores[c + 1].core, uint32_t(token), {got});
      } else {
        const uint32_t h = st.host_store(bytes(rng), {got});
        left[c] = st.host_load(bytes(rng), {h});
      }
    }
    for (uint32_t c = 0; c < n; ++c) last_dma[c] = s[c].barrier(close, {left[c]});
  }
  return p;
}

TEST(ContentionFree, RandomKernelLikeProgramsOfWholeInterleaveRoundsAreIdentical) {
  const HwConfig hw = v3_8();
  const uint64_t round = interleave_round(hw);  // 32 KiB
  ASSERT_EQ(round, 32768u);
  Engines e(hw);
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    auto rounds = [&](std::mt19937& rng) { return round * std::uniform_int_distribution<uint64_t>(0, 64)(rng); };
    expect_identical(e, kernel_like("rounds" + std::to_string(seed), seed, rounds));
  }
}

TEST(ContentionFree, RandomKernelLikeProgramsOfAnySizeAreIdenticalWithOneChannelPerCore) {
  const HwConfig hw = v3_8_one_channel();
  Engines e(hw);
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    auto any = [](std::mt19937& rng) { return std::uniform_int_distribution<uint64_t>(0, 2u << 20)(rng); };
    expect_identical(e, kernel_like("any" + std::to_string(seed), seed, any));
  }
}

// With the shipped 16 channels per core, sizes that are not whole rounds time differently, by
// exactly the interleave excess when the DMAs are the whole critical path.
TEST(ContentionFree, SerialDmasOfAnySizeDifferByTheInterleaveExcessExactly) {
  const HwConfig hw = v3_8();
  Engines e(hw);
  std::mt19937 rng(7);
  for (int round = 0; round < 12; ++round) {
    isa::Program p = test::make_program("serial" + std::to_string(round), {{0, 0}, {2, 1}});
    for (auto& core : p.cores) {
      test::Stream s(core);
      int64_t last = -1;
      for (int i = 0; i < 20; ++i) {
        const uint64_t b = std::uniform_int_distribution<uint64_t>(0, 1u << 20)(rng);
        const uint32_t d = i % 2 ? s.dma_store(b) : s.dma_load(b);
        if (last >= 0) s.add_dep(d, uint32_t(last));
        last = d;
      }
    }
    const Pair r = run_both(e, p);
    for (size_t c = 0; c < p.cores.size(); ++c) {
      isa::Program one;
      one.cores.push_back(p.cores[c]);
      EXPECT_EQ(r.sc.cores[c].end_cycle, r.an.cores[c].end_cycle + interleave_excess(hw, one)) << p.name << " core " << c;
    }
  }
  // The extreme: a 2 KiB DMA occupies one of the 16 channels, as long as 32 KiB on all of them.
  isa::Program small = test::make_program("dma_2k");
  test::Stream(small.cores[0]).dma_load(2048);
  const Pair r = run_both(e, small);
  const double rate = resolve_hw(hw).hbm_core_bytes_per_cycle;
  EXPECT_EQ(r.gap(), int64_t(hbm_transfer_cycles(rate, 32768) - hbm_transfer_cycles(rate, 2048)));
}

struct KernelCase {
  const char* kernel;
  std::map<std::string, uint64_t> shape;
};
const std::vector<KernelCase> kKernels = {
    {"matmul", {{"m", 128}, {"k", 128}, {"n", 128}}},
    {"matmul", {{"m", 512}, {"k", 512}, {"n", 512}}},
    {"matmul", {{"m", 1024}, {"k", 1024}, {"n", 1024}}},
    {"matmul", {{"m", 300}, {"k", 200}, {"n", 100}}},
    {"layernorm", {{"rows", 2048}, {"cols", 768}}},
    {"layernorm", {{"rows", 100}, {"cols", 100}}},
    {"softmax", {{"rows", 512}, {"cols", 512}}},
    {"attention", {{"heads", 12}, {"seq", 128}, {"head_dim", 64}}},
    {"encoder_block", {{"seq", 128}, {"hidden", 768}, {"heads", 12}, {"ffn", 3072}}},
};

isa::Program compile(const KernelCase& k, const char* dtype, const HwConfig& hw) {
  isa::Program p = compiler::compile_kernel({k.kernel, k.shape, models::parse_float_dtype(dtype).value()}, hw);
  p.name += std::string(".") + dtype;
  return p;
}

bool whole_rounds(const HwConfig& hw, const isa::Program& p) {
  for (size_t c = 0; c < p.cores.size(); ++c)
    for (const isa::Instr& i : isa::expanded_instrs(p.stream(c)))
      if ((i.op == isa::Op::kDmaLoad || i.op == isa::Op::kDmaStore) && i.bytes % interleave_round(hw) != 0) return false;
  return true;
}

// One DMA engine: the compiled kernel's DMAs run one at a time.
TEST(ContentionFree, CompiledKernelsWithOneDmaEngine) {
  HwConfig hw = v3_8();
  hw.chip.core.dma.engines = 1;
  HwConfig one = v3_8_one_channel();
  one.chip.core.dma.engines = 1;
  Engines e(hw), e1(one);
  int whole = 0;
  for (const KernelCase& k : kKernels) {
    for (const char* dtype : {"f32", "bf16"}) {
      const isa::Program p = compile(k, dtype, hw);
      expect_identical(e1, compile(k, dtype, one));
      if (whole_rounds(hw, p)) {
        ++whole;
        expect_identical(e, p);
        continue;
      }
      const Pair r = run_both(e, p);
      ::testing::Test::RecordProperty(p.name + "_gap_cycles", std::to_string(r.gap()));
      EXPECT_GE(r.gap(), 0) << p.name;
      EXPECT_LE(uint64_t(r.gap()), interleave_excess(hw, p)) << p.name;
    }
  }
  EXPECT_GE(whole, 6);  // the matmuls of 128, 512, 1024
}

}  // namespace
}  // namespace tpusim
