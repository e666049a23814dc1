// ReplicaStreams (compiler/collectives/replicas.h): replicas whose collective sections differ from core 0's only
// in their peers share core 0's stream with a per-transfer peer table; the others get a copy that
// is exactly what they emitted, whether their recording was checked and dropped kernel by kernel or
// kept.
#include <gtest/gtest.h>

#include "compiler/collectives/replicas.h"

namespace tpusim::compiler {
namespace {

const std::vector<CoreId> kCores = {{0, 0}, {0, 1}, {1, 0}};

// One kernel of a collective on core `i` (of 3 in a ring): a send to the next, a receive from the
// previous, `bytes` each.
void ring_kernel(ProgramBuilder& b, uint32_t i, uint64_t bytes, uint32_t tag) {
  b.begin_kernel("ring");
  b.alloc(1024, "staging");
  const uint32_t start = b.vpu({}, {0}, "start");  // after the compute (stream index 0 on every core)
  const CoreId to = kCores[(i + 1) % 3], from = kCores[(i + 2) % 3];
  const uint32_t s = b.transfer(isa::Op::kSend, bytes, to.chip, to.core, tag, {start}, "send");
  const uint32_t r = b.transfer(isa::Op::kRecv, bytes, from.chip, from.core, tag, {start}, "recv");
  b.vpu({}, {s, r}, "done");
  b.end_kernel();
}

// Compiles: a compute kernel on core 0, then `sections` sections of two ring kernels each.
// `odd(i, k)`: core i emits other bytes in section k's second kernel. `reverse`: cores emit their
// kernels last to first (core 0 last), so replicas cannot be checked as they go.
isa::Program compile(int sections, bool (*odd)(uint32_t, int), bool reverse) {
  isa::Program p;
  ReplicaStreams rs(p, kCores, 1 << 20);
  rs.main().begin_kernel("compute");
  rs.main().vpu({.alu_vregs = 8}, {}, "work");
  rs.main().end_kernel();
  for (int k = 0; k < sections; ++k) {
    std::vector<ProgramBuilder*> b = rs.begin_section();
    for (int kernel = 0; kernel < 2; ++kernel)
      for (uint32_t n = 0; n < 3; ++n) {
        const uint32_t i = reverse ? 2 - n : n;
        ring_kernel(*b[i], i, kernel == 1 && odd(i, k) ? 4096 : 1024, uint32_t(10 * k + kernel));
      }
    rs.end_section();
  }
  rs.main().begin_kernel("after");
  rs.main().vpu({.alu_vregs = 8}, {}, "more");
  rs.main().end_kernel();
  rs.finish();
  return p;
}

bool none(uint32_t, int) { return false; }
bool core2_section1(uint32_t i, int k) { return i == 2 && k == 1; }

// What every core runs, peers translated: the reference the shared or copied programs must equal.
std::string streams(const isa::Program& p) { return nlohmann::json(isa::unshared(p).cores).dump(); }

TEST(ReplicaStreams, IdenticalSectionsShareWithAPeerPerTransfer) {
  const isa::Program p = compile(2, none, false);
  for (size_t c = 1; c < 3; ++c) {
    EXPECT_EQ(p.cores[c].stream_of, 0) << c;
    ASSERT_EQ(p.cores[c].peers.size(), 8u) << "2 sections x 2 kernels x (send, recv), core " << c;
    EXPECT_EQ(p.cores[c].peers[0], (isa::PeerRef{kCores[(c + 1) % 3].chip, kCores[(c + 1) % 3].core}));
    EXPECT_EQ(p.cores[c].peers[1], (isa::PeerRef{kCores[(c + 2) % 3].chip, kCores[(c + 2) % 3].core}));
  }
  // Checked as they went or at the end: the same program.
  EXPECT_EQ(streams(p), streams(compile(2, none, true)));
  const isa::Program late = compile(2, none, true);
  EXPECT_EQ(late.cores[2].stream_of, 0);
}

TEST(ReplicaStreams, ADifferentKernelGivesAnExactCopy) {
  const isa::Program p = compile(2, core2_section1, false);
  EXPECT_EQ(p.cores[1].stream_of, 0);
  ASSERT_EQ(p.cores[2].stream_of, -1);
  const auto& own = p.cores[2].instrs;
  ASSERT_EQ(own.size(), p.cores[0].instrs.size());
  // Its first section was checked and dropped, then restored with its own peers; its second
  // section's second kernel sends 4096 bytes.
  uint64_t sent_4096 = 0;
  for (const auto& in : own) {
    if (in.op == isa::Op::kSend) {
      EXPECT_EQ(in.peer_chip, kCores[0].chip);
      EXPECT_EQ(in.peer_core, kCores[0].core);
    }
    sent_4096 += in.op == isa::Op::kSend && in.bytes == 4096;
  }
  EXPECT_EQ(sent_4096, 1u);
  EXPECT_EQ(p.cores[2].vmem_allocs.size(), p.cores[0].vmem_allocs.size());
  // The same as when nothing could be checked on the way.
  EXPECT_EQ(streams(p), streams(compile(2, core2_section1, true)));
}

}  // namespace
}  // namespace tpusim::compiler
