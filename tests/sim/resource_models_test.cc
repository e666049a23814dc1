// unit: the resource models both engines share, one per block (sim/README.md, "One timing model
// per block"): the DMA engines and transfer channels (sim/base/unit_pool.h), the transfers' first
// stages, the analytical HBM server, the CMEM server, barrier groups, the VPU and the MXU paths.
//
// Constants of test::v3_8_like() at 940 MHz (tests/sim/exact_cycle_cases.h): core HBM rate
// 430.851 B/cycle, so 1 MiB takes 2434 cycles and 512 KiB 1217; VPU ALU 2 vregs/cycle, latency
// 32; MXU weight load k/8 cycles, fill + drain 256.
#include <gtest/gtest.h>

#include "sim/cmem/cmem_server.h"
#include "sim/dma/dma_engines.h"
#include "sim/hbm/hbm_server.h"
#include "sim/hw/resolved_hw.h"
#include "sim/mxu/mxu_paths.h"
#include "sim/slice/barrier_groups.h"
#include "sim/vpu/vpu_unit.h"
#include "sim/xfer/xfer_channels.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

using test::kMiB;

TEST(UnitPool, LowestNumberedUnitFreeAtTheEarliestStartInQueueOrder) {
  UnitPool pool;
  pool.reset(3);
  auto take = [&](uint64_t ready, uint64_t dur) {
    const UnitPool::Pick p = pool.pick(0, ready);
    pool.hold(0, p, p.start + dur);
    return p;
  };
  EXPECT_EQ(take(10, 100).unit, 0u);  // [10, 110) on 0
  EXPECT_EQ(take(20, 10).unit, 1u);   // [20, 30) on 1
  UnitPool::Pick p = take(40, 5);     // 1 is free again: the lowest-numbered free unit
  EXPECT_EQ(p.unit, 1u);
  EXPECT_EQ(p.start, 40u);
  p = pool.pick(0, 0);                // in queue order: never before the previous start
  EXPECT_EQ(p.start, 40u);
  EXPECT_EQ(p.unit, 2u);              // 1 is busy until 45
  take(40, 100);                      // 2: [40, 140)
  p = take(40, 100);                  // every unit busy: the first to free, 1 at 45
  EXPECT_EQ(p.unit, 1u);
  EXPECT_EQ(p.start, 45u);
  p = pool.pick(0, 50);               // 0 frees first, at 110
  EXPECT_EQ(p.unit, 0u);
  EXPECT_EQ(p.start, 110u);
  pool.hold(0, p, UnitPool::kHeld);   // held until released (SystemC transfer channels)
  p = pool.pick(0, 120);
  EXPECT_EQ(p.unit, 2u);
  EXPECT_EQ(p.start, 140u);
  pool.release(0, 125);
  p = pool.pick(0, 120);
  EXPECT_EQ(p.unit, 0u);
  EXPECT_EQ(p.start, 125u);
}

TEST(UnitPool, QueuesKeepTheirOwnOrder) {
  DmaEngines e;
  e.reset(2);
  UnitPool::Pick p = e.pick(DmaEngines::kMain, 100);
  e.hold(DmaEngines::kMain, p, 200);
  p = e.pick(DmaEngines::kBackground, 50);  // the other queue is not held back by the main one
  EXPECT_EQ(p.start, 50u);
  EXPECT_EQ(p.unit, 1u);
  e.hold(DmaEngines::kBackground, p, 60);
  EXPECT_EQ(e.last_start(DmaEngines::kMain), 100u);
  EXPECT_EQ(e.last_start(DmaEngines::kBackground), 50u);
}

// Calendars: the earliest idle interval long enough for the occupancy alone, over all units; a
// held occupancy may be longer (it waited) and overlap what was placed after it.
TEST(UnitPool, CalendarsTakeTheEarliestGapThatFits) {
  DmaEngines e;
  e.reset(2, true);
  auto take = [&](uint32_t q, uint64_t ready, uint64_t alone, uint64_t end_after) {
    const UnitPool::Pick p = e.pick(q, ready, alone);
    e.hold(q, p, p.start + end_after);
    return p;
  };
  take(DmaEngines::kMain, 0, 100, 100);       // 0: [0, 100)
  take(DmaEngines::kMain, 0, 100, 100);       // 1: [0, 100)
  take(DmaEngines::kMain, 300, 100, 100);     // 0: [300, 400)
  UnitPool::Pick p = e.pick(DmaEngines::kBackground, 50, 200);  // the gap [100, 300) on 0 fits
  EXPECT_EQ(p.unit, 0u);
  EXPECT_EQ(p.start, 100u);
  p = e.pick(DmaEngines::kBackground, 50, 201);  // it does not; 1 is free from 100 on
  EXPECT_EQ(p.unit, 1u);
  EXPECT_EQ(p.start, 100u);
  e.hold(DmaEngines::kBackground, p, 500);
  EXPECT_EQ(e.pick(DmaEngines::kMain, 300, 10).start, 400u);  // 0 after [300, 400); 1 until 500
  EXPECT_GT(e.calendar_size(), 0u);
}

TEST(DmaEngines, AloneIsTheContentionFreeDuration) {
  const HwConfig hw = test::v3_8_like();
  isa::Instr ins;
  ins.op = isa::Op::kDmaLoad;
  ins.bytes = kMiB;
  EXPECT_EQ(dma_alone_cycles(resolve_hw(hw), ins), 299u + 2434u);
  ins.bytes = 0;
  EXPECT_EQ(dma_alone_cycles(resolve_hw(hw), ins), 299u);
  EXPECT_EQ(DmaEngines::queue_of(ins), DmaEngines::kMain);
  ins.async = true;
  EXPECT_EQ(DmaEngines::queue_of(ins), DmaEngines::kBackground);
}

TEST(XferChannels, FirstStagesAndStreamingBehindThem) {
  const HwConfig hw = test::v3_8_like();  // 2x2 mesh: ports x+ x- y+ y-, then NoC, h2d, d2h
  EXPECT_EQ(XferChannels::stage_count(hw), 4u + 3u);
  EXPECT_EQ(XferChannels::first_stage(hw, isa::Op::kSend, 0, 0), 4u);  // same chip: the NoC
  EXPECT_EQ(XferChannels::first_stage(hw, isa::Op::kSend, 0, 1), 0u);  // x+
  EXPECT_EQ(XferChannels::first_stage(hw, isa::Op::kSend, 0, 3), 0u);  // x first (dimension order)
  EXPECT_EQ(XferChannels::first_stage(hw, isa::Op::kSend, 3, 1), 3u);  // y-
  EXPECT_EQ(XferChannels::first_stage(hw, isa::Op::kHostLoad, 2, 2), 5u);
  EXPECT_EQ(XferChannels::first_stage(hw, isa::Op::kHostStore, 2, 2), 6u);
  XferChannels x;
  x.reset(2, XferChannels::stage_count(hw));
  const UnitPool::Pick a = x.pick(0, 10);
  x.injected(0, a, 0, 500);
  EXPECT_EQ(x.stream_after(0, 0, 100), 500u);  // behind the transfer through the same stage
  EXPECT_EQ(x.stream_after(0, 1, 100), 100u);
  const UnitPool::Pick b = x.pick(0, 20);  // the other channel is free
  EXPECT_EQ(b.unit, 1u);
  EXPECT_EQ(b.start, 20u);
  // The host queue (1) starts in its own order on its own channels (after the 2 of queue 0): not
  // after the transfer queue's last start (10), whatever queue 0's channels hold.
  x.injected(0, b, 0, 900);
  const UnitPool::Pick h = x.pick(1, 5);
  EXPECT_EQ(h.start, 5u);
  EXPECT_EQ(h.unit, 2u);
  EXPECT_EQ(x.pick(0, 5).start, 500u);  // both of queue 0's channels busy until 500
  EXPECT_EQ(x.channels(), 2u + XferChannels::kHostChannels);
}

// The background transfer queue (2: an asynchronous collective's sends) has its own order and
// occupancy of the transfer channels, and streams behind the foreground's transfers through a
// stage; a foreground transfer does not wait for the background's (placed ahead of it).
TEST(XferChannels, TheBackgroundQueueIsIndependent) {
  const HwConfig hw = test::v3_8_like();
  XferChannels x;
  x.reset(1, XferChannels::stage_count(hw));
  EXPECT_EQ(XferChannels::queue_of(isa::Op::kSend, true), 2u);
  EXPECT_EQ(XferChannels::queue_of(isa::Op::kSend), 0u);
  const UnitPool::Pick bg = x.pick(2, 1000);  // placed ahead
  EXPECT_EQ(bg.start, 1000u);
  x.injected(2, bg, 0, 1400);
  EXPECT_EQ(x.stream_after(2, 0, 100), 1400u);
  EXPECT_EQ(x.stream_after(0, 0, 100), 100u);  // the foreground does not queue behind it
  const UnitPool::Pick fg = x.pick(0, 100);    // nor wait for its channel
  EXPECT_EQ(fg.start, 100u);
  x.injected(0, fg, 0, 400);
  EXPECT_EQ(x.stream_after(2, 0, 1500), 1500u);
  EXPECT_EQ(x.stream_after(0, 0, 100), 400u);
  EXPECT_EQ(x.pick(2, 50).start, 1400u);  // its one channel, in its own order
  EXPECT_EQ(x.last_start(2), 1000u);
  EXPECT_EQ(x.last_start(0), 100u);
}

TEST(HbmServer, OneSerialServerPerCore) {
  const HwConfig hw = test::v3_8_like();
  HbmServer h;
  h.reset(resolve_hw(hw), hw.chip.core.dma.chunk_bytes, false);
  HbmServer::Service d = h.serve_dma(100, kMiB);
  EXPECT_EQ(d.begin, 100u);
  EXPECT_EQ(d.cycles, 2434u);
  d = h.serve_dma(200, kMiB / 2);  // waits for the first: served back to back
  EXPECT_EQ(d.begin, 2534u);
  EXPECT_EQ(d.cycles, 1217u);
  HbmServer::Service r = h.serve_read(3000, kMiB / 2);  // a read waits for the DMAs only ...
  EXPECT_EQ(r.begin, 3751u);
  r = h.serve_read(3000, kMiB / 2);  // ... not for another read
  EXPECT_EQ(r.begin, 3751u);
  d = h.serve_dma(3000, kMiB / 2);  // later DMAs wait for the reads
  EXPECT_EQ(d.begin, 3751u + 2 * 1217u);
  h.account(kMiB);  // a destination write: counted only
  EXPECT_EQ(h.bytes, 4 * kMiB);
  EXPECT_EQ(h.requests, 4 * kMiB / 32768);
  EXPECT_NEAR(h.busy_cycles, 4 * 2433.73, 0.01);
}

// A DMA larger than the gap it starts in is served piece by piece around what is placed: 2 MiB
// (4868 cycles) from 8000 with [10000, 12434) taken: [8000, 10000), then [12434, 15302).
TEST(HbmServer, CalendarsServeADmaInTheGapsAroundEarlierPlacements) {
  const HwConfig hw = test::v3_8_like();
  HbmServer h;
  h.reset(resolve_hw(hw), hw.chip.core.dma.chunk_bytes, true);
  h.serve_dma(10000, kMiB);
  const HbmServer::Service d = h.serve_dma(8000, 2 * kMiB);
  EXPECT_EQ(d.begin, 8000u);
  EXPECT_EQ(d.begin + d.cycles, 15302u);
  // A read's reservation is a gap's edge too: 1 MiB from 15302 with a read at [16000, 18434).
  EXPECT_EQ(h.serve_read(16000, kMiB).begin, 16000u);
  const HbmServer::Service e = h.serve_dma(15302, kMiB);
  EXPECT_EQ(e.begin + e.cycles, 18434u + (2434u - 698u));
}

TEST(HbmServer, CalendarsServeTheEarliestIdleInterval) {
  const HwConfig hw = test::v3_8_like();
  HbmServer h;
  h.reset(resolve_hw(hw), hw.chip.core.dma.chunk_bytes, true);
  EXPECT_EQ(h.serve_dma(10000, kMiB).begin, 10000u);     // [10000, 12434)
  EXPECT_EQ(h.serve_dma(0, kMiB / 2).begin, 0u);         // before it: [0, 1217)
  EXPECT_EQ(h.serve_dma(0, kMiB).begin, 1217u);          // the gap [1217, 10000) holds it
  // A read fills the DMAs' gaps too (a transfer reads at its stream rate): [8000, 10000), then
  // the rest from 12434.
  EXPECT_EQ(h.serve_read(8000, kMiB).begin, 8000u);
  EXPECT_EQ(h.serve_dma(3651, kMiB / 2).begin, 3651u);   // [3651, 4868): still a gap
  // A write of 1 MiB delivered at t must find 2434 cycles among the DMAs ([0, 4868) and
  // [10000, 12434) now) ending by t, else the delivery waits for the first room after.
  EXPECT_EQ(h.reserve_write(20000, kMiB, 0), 20000u);
  EXPECT_EQ(h.reserve_write(12434, kMiB, 0), 14868u);  // [10000, 12434) is a DMA's
  EXPECT_EQ(h.reserve_write(9000, kMiB, 0), 9000u);    // [6566, 9000) is idle
  EXPECT_EQ(h.reserve_write(3000, kMiB, 0), 7302u);    // the first room: [4868, 7302)
}

TEST(CmemServer, FirstComeFirstServedInWholeCycles) {
  HwConfig hw = test::v3_8_like();
  hw.chip.cmem = CmemParams{.size_mib = 128, .bandwidth_gbyte_per_s = 940, .latency_ns = 100};  // 1000 B/cycle
  const ResolvedHw r = resolve_hw(hw);
  CmemServer c;
  CmemServer::Service s = c.serve(r, 10, 1500);
  EXPECT_EQ(s.begin, 10u);
  EXPECT_EQ(s.cycles, 2u);
  s = c.serve(r, 11, 1000);
  EXPECT_EQ(s.begin, 12u);
  EXPECT_EQ(c.free(), 13u);
  EXPECT_EQ(c.transfers, 2u);
  EXPECT_EQ(c.bytes, 2500u);
  EXPECT_EQ(c.busy_cycles, 3u);
}

TEST(BarrierGroups, CompleteAtTheLatestArrivalWhateverTheOrder) {
  const std::vector<uint32_t> participants = {3, 1};
  BarrierGroups g;
  g.reset(participants);
  EXPECT_FALSE(g.arrive(0, 500));
  EXPECT_FALSE(g.arrive(0, 900));
  EXPECT_FALSE(g.complete(0));
  EXPECT_TRUE(g.arrive(0, 700));  // the last participant, not the latest time
  EXPECT_TRUE(g.complete(0));
  EXPECT_EQ(g.release(0), 900u);
  EXPECT_TRUE(g.arrive(1, 42));
  EXPECT_EQ(g.release(1), 42u);
}

TEST(VpuUnit, InOrderWithOneQueueAndGapFillingWithTwo) {
  const HwConfig hw = test::v3_8_like();
  const isa::VpuWork w100{.alu_vregs = 200};  // 100 issue cycles
  VpuUnit one;
  one.reset(hw.chip.core.vpu, 2, 0);
  VpuUnit::Block b = one.place(false, 10, w100, 0);
  EXPECT_EQ(b.start, 10u);
  EXPECT_EQ(b.cycles, 100u);
  EXPECT_EQ(b.done, 10u + 100u + 32u);
  EXPECT_EQ(one.place(false, 20, w100, 0).start, 110u);
  // Kernel time in ps (SystemC): a cycle of 1064 ps.
  VpuUnit ps;
  ps.reset(hw.chip.core.vpu, 1, 0);
  b = ps.place(false, 1064, w100, 0, 1064);
  EXPECT_EQ(b.done, 1064u * (1 + 100 + 32));
  // Two queues: a background block fills a gap the main queue left.
  VpuUnit two;
  two.reset(hw.chip.core.vpu, 2, 1);
  two.place(false, 0, w100, 0);    // [0, 100)
  two.place(false, 300, w100, 0);  // [300, 400)
  EXPECT_EQ(two.place(true, 50, w100, 0).start, 100u);
  EXPECT_FALSE(VpuUnit::occupies(hw.chip.core.vpu, isa::VpuWork{}));
}

TEST(MxuPaths, WeightsCompleteAtTheirEndMatmulsAfterFillAndDrain) {
  const HwConfig hw = test::v3_8_like();
  isa::Instr w, m;
  w.k = 128;
  m.rows = 256;
  m.passes = 1;
  MxuPaths p;
  MxuPaths::Op o = p.weights(hw.chip.core.mxu, w, 2000);
  EXPECT_EQ(o.start, 2000u);
  EXPECT_EQ(o.done, 2016u);
  o = p.matmul(hw.chip.core.mxu, m, o.done);
  EXPECT_EQ(o.done, 2016u + 256u + 256u);
  o = p.matmul(hw.chip.core.mxu, m, 0);  // pipelines behind the previous stream
  EXPECT_EQ(o.start, 2272u);
  EXPECT_EQ(o.done, 2784u);
  p.reset();
  EXPECT_EQ(p.weights(hw.chip.core.mxu, w, 10, 1000).done, 10u + 16u * 1000u);
}

}  // namespace
}  // namespace tpusim
