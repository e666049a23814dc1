// isa::PeerTable (sim/isa/peer_table.h): a peer table stored as runs of two alternating peers reads
// back every entry it was given, in any order and in order, whatever the pattern; tables of equal
// entries are equal however they were built; a collective's pattern is a run.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/isa/program.h"

namespace tpusim {
namespace {

using isa::PeerRef;
using isa::PeerTable;

// Sequences with every shape the runs meet: constants, alternations of two, a third peer breaking
// an alternation, odd and even lengths, single entries.
std::vector<std::vector<PeerRef>> sequences() {
  std::vector<std::vector<PeerRef>> out = {{}, {{1, 0}}, {{1, 0}, {1, 0}}, {{1, 0}, {2, 0}}, {{1, 0}, {2, 0}, {1, 0}}};
  std::mt19937 rng(7);
  for (int n = 0; n < 200; ++n) {
    std::vector<PeerRef> v;
    const int len = int(rng() % 60);
    PeerRef a{uint32_t(rng() % 3), 0}, b{uint32_t(rng() % 3), uint32_t(rng() % 2)};
    for (int k = 0; k < len; ++k) {
      if (rng() % 7 == 0) a = {uint32_t(rng() % 3), 0};  // the pattern changes now and then
      if (rng() % 11 == 0) b = {uint32_t(rng() % 3), 1};
      v.push_back(k % 2 ? b : a);
    }
    out.push_back(v);
  }
  return out;
}

TEST(PeerTable, ReadsBackEveryEntry) {
  for (const auto& v : sequences()) {
    const PeerTable t(v);
    ASSERT_EQ(t.size(), v.size());
    EXPECT_EQ(t.expanded(), v);
    PeerTable::Reader r = t.reader();
    size_t hint = 0;
    for (size_t k = 0; k < v.size(); ++k) {
      EXPECT_EQ(t[k], v[k]) << k;
      EXPECT_EQ(t.at(k, hint), v[k]) << k;
      EXPECT_EQ(r.next(), v[k]) << k;
    }
    for (size_t k = v.size(); k-- > 0;) EXPECT_EQ(t.at(k, hint), v[k]) << k;  // backwards: the hint is only a guess
  }
}

TEST(PeerTable, AppendIsPushingEveryEntry) {
  const auto seqs = sequences();
  for (size_t i = 0; i + 1 < seqs.size(); ++i) {
    PeerTable joined(seqs[i]);
    joined.append(PeerTable(seqs[i + 1]));
    std::vector<PeerRef> both = seqs[i];
    both.insert(both.end(), seqs[i + 1].begin(), seqs[i + 1].end());
    EXPECT_EQ(joined, PeerTable(both)) << i;  // the same runs as pushing one by one
    EXPECT_EQ(joined.expanded(), both) << i;
  }
}

TEST(PeerTable, ACollectivesAlternatingPeersAreOneRun) {
  // A ring step after step, piece after piece: send to the next core, receive from the previous.
  PeerTable t;
  for (int k = 0; k < 255 * 8; ++k) {
    t.push_back({5, 0});
    t.push_back({3, 0});
  }
  EXPECT_EQ(t.runs(), 1u);
  EXPECT_EQ(t.size(), 255u * 8 * 2);
  EXPECT_NE(t, PeerTable({{5, 0}, {3, 0}}));
}

}  // namespace
}  // namespace tpusim
