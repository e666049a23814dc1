// The analytical engine's completion store (sim/engine/completion_store.h): every value reads back
// exactly as written whatever is frozen and shared, equal chunks (up to a shift in time) are kept
// once, and replicas sharing a stream give the engine the same per-core results as unshared copies.
#include "sim/engine/completion_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/engine/engine.h"
#include "test_hw.h"
#include "test_program.h"

namespace tpusim {
namespace {

constexpr uint32_t kChunk = CompletionStore::kChunk;

// Finishes the instructions of `cores` in a random order, checking every core against a plain
// vector after each step (a read of every instruction near the one written, and all at the end).
void check_against_reference(CompletionStore& store, const std::vector<std::vector<uint64_t>>& values,
                             std::mt19937& rng) {
  store.begin_run();
  std::vector<CompletionStore::Core> cores(values.size());
  std::vector<std::vector<uint8_t>> done(values.size());
  std::vector<std::pair<uint32_t, uint32_t>> order;
  for (uint32_t c = 0; c < values.size(); ++c) {
    store.reset(cores[c], uint32_t(values[c].size()));
    done[c].assign(values[c].size(), 0);
    for (uint32_t i = 0; i < values[c].size(); ++i) order.push_back({c, i});
  }
  std::shuffle(order.begin(), order.end(), rng);
  auto check = [&](uint32_t c, uint32_t i) {
    ASSERT_EQ(cores[c].done(i), bool(done[c][i])) << "core " << c << " instruction " << i;
    if (done[c][i]) {
      ASSERT_EQ(cores[c].completion(i), values[c][i]) << "core " << c << " instruction " << i;
    }
  };
  for (auto [c, i] : order) {
    cores[c].finish(i, values[c][i]);
    done[c][i] = 1;
    for (uint32_t j = i > 3 ? i - 3 : 0; j < std::min<size_t>(i + 3, values[c].size()); ++j) check(c, j);
  }
  for (uint32_t c = 0; c < values.size(); ++c)
    for (uint32_t i = 0; i < values[c].size(); ++i) check(c, i);
}

TEST(CompletionStore, ReadsBackWhatWasWrittenWhateverIsShared) {
  std::mt19937 rng(7);
  CompletionStore store;
  // Core 0: random times; core 1: core 0's shifted later (shares every chunk); core 2: core 0's
  // but one value (shares all but one chunk); core 3: one chunk spanning more than 2^32 cycles
  // (stays as 64-bit words); lengths not multiples of the chunk.
  const uint32_t n = 3 * kChunk + 17;
  std::vector<std::vector<uint64_t>> v(4);
  std::uniform_int_distribution<uint64_t> t(1, 1u << 20);
  for (uint32_t i = 0; i < n; ++i) v[0].push_back(t(rng) + uint64_t(i) * 100);
  for (uint64_t x : v[0]) v[1].push_back(x + 123456789);
  v[2] = v[0];
  v[2][kChunk + 5] += 1;
  v[3] = v[0];
  v[3].resize(kChunk + 3);
  v[3][2] = (uint64_t(1) << 40) + 5;
  check_against_reference(store, v, rng);
  const CompletionStore::Usage& u = store.usage();
  // Chunks: 4 per core of 0-2 (the last of 17), 2 of core 3 (one too wide to freeze).
  EXPECT_EQ(u.frozen_chunks, 4u * 3 + 1);
  // Distinct: core 0's 4, core 2's changed chunk, core 3's 3-instruction last chunk.
  EXPECT_EQ(u.distinct_chunks, 6u);
  EXPECT_EQ(u.private_chunks, 1u);  // core 3's wide chunk
  // A second run on the same store starts empty and reuses the words.
  check_against_reference(store, {v[1]}, rng);
  EXPECT_EQ(store.usage().distinct_chunks, 4u);
  EXPECT_EQ(store.usage().private_chunks, 0u);
}

// 8 replicas (v3-8-like: 4 chips x 2 cores) run one stream of several chunks: DMAs, VPU blocks,
// background DMAs fed by receives, and a ring exchange between the cores. Sharing the stream
// (isa::CoreProgram::stream_of) and unshared copies give identical per-core end cycles, stats and
// op profile, and the device time of the stream on one core is what a replica sees without peers.
isa::Program ring_program(uint32_t rounds) {
  isa::Program p = test::make_program("ring", {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}});
  const uint32_t cores = uint32_t(p.cores.size());
  auto peer = [&](uint32_t c) { return std::pair{p.cores[c].chip, p.cores[c].core}; };
  test::Stream s(p.cores[0]);
  uint32_t prev = s.dma_load(65536);
  for (uint32_t r = 0; r < rounds; ++r) {
    const uint32_t v = s.vpu({.alu_vregs = 64 + r % 7, .vld_vregs = 8}, {prev});
    const uint32_t st = s.dma_store(4096 * (1 + r % 5), {v});
    const auto [nc, nk] = peer(1);
    const auto [pc, pk] = peer(cores - 1);
    const uint32_t snd = s.send(8192, nc, nk, r, {st});
    const uint32_t rcv = s.recv(pc, pk, r, {v});
    s.async(s.dma_load(8192, {rcv}));
    prev = s.vpu({.alu_vregs = 32}, {snd, rcv});
  }
  // Replicas: core c sends to c+1 and receives from c-1 (the stream's peers translated).
  for (uint32_t c = 1; c < cores; ++c) {
    isa::CoreProgram& cp = p.cores[c];
    cp.stream_of = 0;
    for (uint32_t r = 0; r < rounds; ++r) {
      const auto [nc, nk] = peer((c + 1) % cores);
      const auto [pc, pk] = peer((c + cores - 1) % cores);
      cp.peers.push_back({nc, nk});
      cp.peers.push_back({pc, pk});
    }
  }
  return p;
}

TEST(CompletionStore, SharedReplicaStreamsTimeAsUnsharedCopies) {
  const HwConfig hw = test::v3_8_like();
  const isa::Program shared = ring_program(3 * kChunk / 6 + 40);  // ~3.1 chunks per core
  const isa::Program copies = isa::unshared(shared);
  auto a = make_engine("analytical", hw)->run(shared, nullptr);
  auto engine = make_engine("analytical", hw);
  auto b = engine->run(copies, nullptr);
  ASSERT_EQ(a.cores.size(), 8u);
  ASSERT_EQ(a.cores.size(), b.cores.size());
  for (size_t c = 0; c < a.cores.size(); ++c) EXPECT_EQ(a.cores[c].end_cycle, b.cores[c].end_cycle) << c;
  EXPECT_EQ(a.device_cycles, b.device_cycles);
  EXPECT_EQ(a.stats, b.stats);
  EXPECT_EQ(a.collectives, b.collectives);
  EXPECT_EQ(a.op_profile.cycles, b.op_profile.cycles);
  // The same engine again (its store reused) gives the same result.
  EXPECT_EQ(engine->run(shared, nullptr).stats, a.stats);
}

}  // namespace
}  // namespace tpusim
