// block + unit: background (`async`) DMA and VPU queues (sim/isa/program.h) on both engines, and
// the occupancy calendar both engines place shared work in (sim/base/busy_calendar.h).
//
// Constants of test::v3_8_like() at 940 MHz (tests/sim/exact_cycle_cases.h): launch 2000; DMA
// fixed part 299 = setup 64 + HBM latency 235; 1 MiB of HBM 2434 cycles, 512 KiB
// ceil(524288 / 430.851) = 1217; VPU (sim/vpu/vpu_timing.h) ceil(alu_vregs / 2) cycles for
// ALU-only blocks, result 32 cycles after the last issue. A zero-byte send to the other core of
// the chip (sim/ici/ici_timing.h) is delivered 64 + 235 + 0 + 94 (NoC) = 393 cycles after it
// was taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sim/analysis/program_plan.h"
#include "sim/base/busy_calendar.h"
#include "sim/base/sim_error.h"
#include "sim/engine/engine.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/ici_timing.h"
#include "sim/vpu/vpu_timing.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

using test::kMiB;

const char* const kEngines[] = {"systemc", "analytical"};
constexpr uint64_t kVpuLatency = 32;

// ALU-only VPU work of `cycles` issue cycles (2 ALU slots).
isa::VpuWork alu(uint64_t cycles) { return {.alu_vregs = 2 * cycles}; }

// Where an instruction ran, from the trace: the event labelled `label` on a track of core
// `core` of chip 0 (a DMA's event lasts until its completion, a VPU block's only its issue).
struct Span {
  uint64_t start = 0, end = 0;
};
Span span(const test::RecordingTrace& trace, const std::string& label, uint32_t core = 0) {
  const std::string prefix = "core" + std::to_string(core) + ".";
  std::vector<Span> found;
  for (const auto& e : trace.events)
    if (e.process == "slice.chip0" && e.track.rfind(prefix, 0) == 0 && e.name == label)
      found.push_back({e.start, e.start + e.dur});
  EXPECT_EQ(found.size(), 1u) << label;
  return found.empty() ? Span{} : found[0];
}
uint64_t vpu_done(const test::RecordingTrace& trace, const std::string& label) {
  return span(trace, label).end + kVpuLatency;
}

struct Traced {
  RunResult result;
  test::RecordingTrace trace;
};
Traced run(const char* engine, const isa::Program& p) {
  Traced r;
  r.result = make_engine(engine, test::v3_8_like())->run(p, &r.trace);
  return r;
}

// ---- BusyCalendar and SharedUnit -------------------------------------------------------------

TEST(BusyCalendar, FirstFitIsTheEarliestIdleIntervalThatFits) {
  BusyCalendar cal;
  EXPECT_EQ(cal.first_fit(5, 10), 5u);
  cal.insert(10, 10);  // [10, 20)
  cal.insert(30, 10);  // [30, 40)
  EXPECT_EQ(cal.size(), 2u);
  EXPECT_EQ(cal.first_fit(0, 10), 0u);   // [0, 10) ends where the first interval starts
  EXPECT_EQ(cal.first_fit(0, 11), 40u);  // neither before 10 nor in the gap [20, 30)
  EXPECT_EQ(cal.first_fit(15, 10), 20u);  // the gap exactly
  EXPECT_EQ(cal.first_fit(15, 11), 40u);
  EXPECT_EQ(cal.first_fit(25, 5), 25u);   // inside the gap
  EXPECT_EQ(cal.first_fit(25, 6), 40u);
  EXPECT_EQ(cal.first_fit(45, 100), 45u);  // after everything
  // A zero-length occupancy only has to be outside every interval (a start counts as inside).
  EXPECT_EQ(cal.first_fit(10, 0), 20u);
  EXPECT_EQ(cal.first_fit(15, 0), 20u);
  EXPECT_EQ(cal.first_fit(20, 0), 20u);
}

// fill() serves work in the gaps both calendars leave, piece by piece: 30 cycles from 0 with [10, 20)
// busy here and [25, 40) busy in the other take [0, 10), [20, 25), [40, 55).
TEST(BusyCalendar, FillServesWorkPieceByPieceInTheCommonGaps) {
  BusyCalendar cal, other;
  cal.insert(10, 10);
  other.insert(25, 15);
  const auto [begin, end] = cal.fill(0, 30, other);
  EXPECT_EQ(begin, 0u);
  EXPECT_EQ(end, 55u);
  EXPECT_EQ(cal.first_fit(0, 1), 25u);   // [0, 25) busy here now; [25, 40) is idle here
  EXPECT_EQ(cal.next_start(20), 40u);    // the last piece
  // From inside a busy interval: it starts at the first idle moment; nothing busy after: one piece.
  BusyCalendar a, none;
  a.insert(0, 100);
  const auto [b2, e2] = a.fill(50, 10, none);
  EXPECT_EQ(b2, 100u);
  EXPECT_EQ(e2, 110u);
}

TEST(BusyCalendar, InsertMergesAdjacentIntervals) {
  BusyCalendar cal;
  cal.insert(10, 10);  // [10, 20)
  cal.insert(30, 10);  // [30, 40)
  cal.insert(5, 0);    // zero length: nothing
  EXPECT_EQ(cal.size(), 2u);
  cal.insert(20, 10);  // fills the gap: [10, 40)
  EXPECT_EQ(cal.size(), 1u);
  cal.insert(0, 10);  // joins the next: [0, 40)
  EXPECT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal.first_fit(0, 1), 40u);
  cal.insert(40, 5);  // at the end, adjacent: [0, 45)
  cal.insert(50, 5);  // at the end, apart: [0, 45) [50, 55)
  EXPECT_EQ(cal.size(), 2u);
  EXPECT_EQ(cal.first_fit(0, 5), 45u);
  EXPECT_EQ(cal.first_fit(0, 6), 55u);
  cal.insert(45, 5);  // joins both: [0, 55)
  EXPECT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal.first_fit(0, 1), 55u);
  cal.clear();
  EXPECT_EQ(cal.size(), 0u);
  EXPECT_EQ(cal.first_fit(0, 1), 0u);
}

// add(): occupancies that may overlap each other (the analytical engine's transfer reads).
TEST(BusyCalendar, AddTakesTheUnion) {
  BusyCalendar cal;
  cal.add(10, 10);  // [10, 20)
  cal.add(15, 10);  // overlaps: [10, 25)
  EXPECT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal.first_fit(10, 1), 25u);
  cal.add(30, 5);  // apart: [10, 25) [30, 35)
  EXPECT_EQ(cal.size(), 2u);
  EXPECT_EQ(cal.first_fit(20, 5), 25u);
  cal.add(25, 0);  // zero length: nothing
  EXPECT_EQ(cal.size(), 2u);
  cal.add(5, 40);  // covers both: [5, 45)
  EXPECT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal.first_fit(0, 5), 0u);
  EXPECT_EQ(cal.first_fit(0, 6), 45u);
  cal.add(45, 5);  // touching: [5, 50)
  EXPECT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal.first_fit(5, 1), 50u);
  cal.add(0, 5);  // touching from before: [0, 50)
  EXPECT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal.first_fit(0, 0), 50u);
}

TEST(BusyCalendar, PruneForgetsIntervalsEndingAtOrBeforeTheFrontier) {
  BusyCalendar cal;
  cal.insert(0, 10);
  cal.insert(20, 10);
  cal.insert(40, 10);
  cal.prune(29);  // [20, 30) ends after 29: kept
  EXPECT_EQ(cal.size(), 2u);
  cal.prune(30);
  EXPECT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal.first_fit(30, 15), 50u);  // [40, 50) is still there
  // Many intervals: the pruned front is erased once it is large; what remains is intact.
  BusyCalendar big;
  for (uint64_t i = 0; i < 3000; ++i) big.insert(10 * i, 5);  // [10i, 10i + 5)
  big.prune(10 * 2000);  // drops i < 2000 (ends 10i + 5 <= 20000)
  EXPECT_EQ(big.size(), 1000u);
  EXPECT_EQ(big.first_fit(20000, 5), 20005u);
  EXPECT_EQ(big.first_fit(20000, 6), 10u * 3000 - 5);  // no gap of 6 before the last interval's end
  big.insert(20005, 5);  // fills the gap [20005, 20010): [20000, 20015), one interval less
  EXPECT_EQ(big.size(), 999u);
  EXPECT_EQ(big.first_fit(20000, 5), 20015u);
}

// With work in one queue only, a SharedUnit is the plain in-order unit: start = max(ready, end of
// the previous occupancy), even where an earlier idle gap would fit.
TEST(SharedUnit, OneQueueIsThePlainInOrderUnit) {
  for (uint32_t q : {0u, 1u}) {
    SharedUnit unit;
    unit.reset(q == 0 ? std::vector<uint32_t>{4, 0} : std::vector<uint32_t>{0, 4});
    EXPECT_EQ(unit.place(q, 100, 10), 100u);
    EXPECT_EQ(unit.place(q, 0, 10), 110u);
    EXPECT_EQ(unit.place(q, 500, 10), 500u);
    EXPECT_EQ(unit.place(q, 200, 10), 510u);
  }
}

TEST(SharedUnit, TwoQueuesFillEachOthersGapsEachInOrder) {
  SharedUnit unit;
  unit.reset({2, 3});
  EXPECT_EQ(unit.place(0, 0, 10), 0u);    // main [0, 10)
  EXPECT_EQ(unit.place(0, 50, 10), 50u);  // main [50, 60)
  EXPECT_EQ(unit.place(1, 5, 20), 10u);   // background fills the gap: [10, 30)
  // Ready at 0, but its queue's last start is 10; the gap [30, 50) is too short for 30.
  EXPECT_EQ(unit.place(1, 0, 30), 60u);  // [60, 90)
  // The gap [30, 50) fits 20, but the queue last started at 60.
  EXPECT_EQ(unit.place(1, 0, 20), 90u);
}

// A SharedUnit against a calendar that never forgets (brute force): random placements on two
// queues, many more than the pruning threshold.
TEST(SharedUnit, MatchesABruteForceCalendarThroughPruning) {
  constexpr uint32_t kPerQueue = 400;
  std::mt19937_64 rng(7);
  SharedUnit unit;
  unit.reset({kPerQueue, kPerQueue});
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [start, end)
  uint64_t last[2] = {0, 0};
  uint32_t left[2] = {kPerQueue, kPerQueue};
  // Each queue's ready times drift forward; queue 1's run far ahead and queue 0 fills the gaps
  // it leaves (what pruning must not forget).
  uint64_t clock[2] = {0, 0};
  while (left[0] + left[1] > 0) {
    const uint32_t q = left[0] == 0 ? 1 : left[1] == 0 ? 0 : uint32_t(rng() % 2);
    --left[q];
    clock[q] += rng() % (q == 0 ? 40 : 300);
    const uint64_t ready = clock[q] - std::min<uint64_t>(clock[q], rng() % 200);
    const uint64_t dur = 1 + rng() % 60;
    uint64_t t = std::max(ready, last[q]);
    for (bool moved = true; moved;) {
      moved = false;
      for (auto [s, e] : busy)
        if (s < t + dur && t < e) {
          t = e;
          moved = true;
        }
    }
    busy.emplace_back(t, t + dur);
    last[q] = t;
    ASSERT_EQ(unit.place(q, ready, dur), t) << "placement " << busy.size();
  }
}

// ---- Decoding and serialization ----------------------------------------------------------------

TEST(BackgroundQueue, PlanPutsAsyncDmasAndVpuBlocksOnTheirOwnQueues) {
  auto p = test::make_program("units");
  test::Stream s(p.cores[0]);
  s.dma_load(1024);                    // 0
  s.async(s.dma_store(1024));          // 1
  s.vpu(alu(1));                       // 2
  s.async(s.vpu(alu(1), {1}));         // 3
  s.async(s.dma_load(1024, {2, 3}));   // 4
  s.weights(0, 128, 128);              // 5
  ProgramPlan plan;
  plan.build(p, test::v3_8_like());
  const CorePlan& cp = plan.cores()[0];
  EXPECT_EQ(cp.unit[0], UnitIndex::kDma);
  EXPECT_EQ(cp.unit[1], UnitIndex::kDmaAsync);
  EXPECT_EQ(cp.unit[2], UnitIndex::kVpu);
  EXPECT_EQ(cp.unit[3], UnitIndex::kVpuAsync);
  EXPECT_EQ(cp.unit[5], UnitIndex::mxu_weights(0));
  ASSERT_EQ(cp.queues.size(UnitIndex::kDma), 1u);
  ASSERT_EQ(cp.queues.size(UnitIndex::kDmaAsync), 2u);
  EXPECT_EQ(cp.queues.row(UnitIndex::kDmaAsync)[0], 1u);
  EXPECT_EQ(cp.queues.row(UnitIndex::kDmaAsync)[1], 4u);
  EXPECT_EQ(cp.queues.size(UnitIndex::kVpu), 1u);
  EXPECT_EQ(cp.queues.size(UnitIndex::kVpuAsync), 1u);
}

// A background send (an asynchronous collective's) waiting for its data does not hold up a later
// foreground send (a synchronous collective's): the transfer queues are independent. Core 1 sends
// to core 0 only after 100,000 cycles of vector work; core 0's background send waits for that, its
// foreground send, later in the stream, starts at launch. (Before the background transfer queue
// the foreground send waited for the background one's start, past 102,000.)
TEST(BackgroundQueue, ForegroundSendsDoNotWaitForBackgroundSends) {
  auto p = test::make_program("sends", {{0, 0}, {0, 1}});
  test::Stream c0(p.cores[0]), c1(p.cores[1]);
  const uint32_t late = c0.recv(0, 1, 1, {}, "late");
  c0.async(c0.send(4096, 0, 1, 2, {late}, "bg"));
  c0.send(4096, 0, 1, 3, {}, "fg");
  const uint32_t work = c1.vpu(alu(100000), {}, "work");
  c1.send(0, 0, 0, 1, {work}, "go");
  c1.recv(0, 0, 2, {}, "bg in");
  c1.recv(0, 0, 3, {}, "fg in");
  for (const char* engine : kEngines) {
    SCOPED_TRACE(engine);
    const Traced r = run(engine, p);
    EXPECT_LT(span(r.trace, "fg").start, 3000u);
    EXPECT_GT(span(r.trace, "bg").start, 102000u);
  }
}

TEST(BackgroundQueue, PlanRejectsAsyncOnOpsWithoutABackgroundQueue) {
  auto error = [](const isa::Program& p) -> std::string {
    try {
      ProgramPlan().build(p, test::v3_8_like());
    } catch (const SimError& e) {
      return e.what();
    }
    return "";
  };
  {
    auto p = test::make_program("matmul");
    test::Stream s(p.cores[0]);
    const uint32_t w = s.weights(0, 128, 128);
    s.async(s.matmul(0, 8, 128, 128, {w}, 1, "mm"));
    const std::string what = error(p);
    EXPECT_NE(what.find("'mm' (mxu_matmul) is marked async"), std::string::npos) << what;
  }
  {  // a send has one: an asynchronous collective's (UnitIndex::kXferAsync)
    auto p = test::make_program("send", {{0, 0}, {0, 1}});
    test::Stream s(p.cores[0]);
    s.async(s.send(64, 0, 1, 3, {}, "out"));
    test::Stream(p.cores[1]).recv(0, 0, 3);
    EXPECT_EQ(error(p), "");
    auto q = test::make_program("recv", {{0, 0}, {0, 1}});
    test::Stream(q.cores[0]).send(64, 0, 1, 3, {}, "out");
    test::Stream r(q.cores[1]);
    r.async(r.recv(0, 0, 3));
    EXPECT_NE(error(q).find("is marked async"), std::string::npos) << error(q);
  }
  {
    auto p = test::make_program("barrier");
    test::Stream s(p.cores[0]);
    s.async(s.barrier(1, {}, "b"));
    EXPECT_NE(error(p).find("async"), std::string::npos) << error(p);
  }
}

TEST(BackgroundQueue, JsonWritesAsyncOnlyWhenSet) {
  isa::Instr i;
  i.op = isa::Op::kDmaStore;
  i.bytes = 4096;
  i.label = "bg";
  nlohmann::json sync_json = i;
  EXPECT_FALSE(sync_json.contains("async"));  // programs without background work: as before
  EXPECT_FALSE(sync_json.get<isa::Instr>().async);
  i.async = true;
  nlohmann::json js = i;
  EXPECT_EQ(js.at("async"), true);
  const isa::Instr back = js.get<isa::Instr>();
  EXPECT_TRUE(back.async);
  EXPECT_EQ(back.bytes, 4096u);
  EXPECT_EQ(nlohmann::json(back), js);
  js.erase("async");
  EXPECT_EQ(js, sync_json);
}

// ---- Timing, both engines ----------------------------------------------------------------------

// Core 0's background chain (load -> VPU -> store) waits for a recv that core 1 satisfies late;
// the main chain after it in the stream runs as if the background work were not there.
// Core 1: P 2000..12000 (done 12032), its zero-byte send is taken then, delivered 12425.
// Core 0, main: A 2000..4733; V (1000) 4733..5733, done 5765; S 5765 + 299 + 2434 = 8498;
//   V2 (100, no deps) behind V in the VPU queue: 5733..5833, done 5865.
// Core 0, background: bg_load 12425..15158; bg_vpu (500) 15158..15658, done 15690;
//   bg_store 15690..18423: the core ends at 18423 (the HBM and VPU are idle then).
isa::Program waiting_chain(bool background, bool async) {
  auto p = test::make_program("waiting_chain", {{0, 0}, {0, 1}});
  test::Stream s(p.cores[0]), peer(p.cores[1]);
  peer.send(0, 0, 0, 7, {peer.vpu(alu(10000), {}, "P")});
  const uint32_t r = s.recv(0, 1, 7);
  if (background) {
    auto mark = [&](uint32_t i) { return async ? s.async(i) : i; };
    const uint32_t l = mark(s.dma_load(kMiB, {r}, "bg_load"));
    const uint32_t v = mark(s.vpu(alu(500), {l}, "bg_vpu"));
    mark(s.dma_store(kMiB, {v}, "bg_store"));
  }
  const uint32_t a = s.dma_load(kMiB, {}, "A");
  const uint32_t v = s.vpu(alu(1000), {a}, "V");
  s.dma_store(kMiB, {v}, "S");
  s.vpu(alu(100), {}, "V2");
  return p;
}

TEST(BackgroundQueue, AWaitingChainDoesNotBlockTheMainQueues) {
  ASSERT_EQ(send_estimate(test::v3_8_like(), resolve_hw(test::v3_8_like()), 0, 0, 0).total_cycles(), 393u);
  ASSERT_EQ(vpu_issue_cycles(test::v3_8_like().chip.core.vpu, alu(500)), 500u);
  for (const char* engine : kEngines) {
    SCOPED_TRACE(engine);
    const Traced bg = run(engine, waiting_chain(true, true));
    const Traced none = run(engine, waiting_chain(false, false));
    for (const Traced* r : {&bg, &none}) {
      EXPECT_EQ(span(r->trace, "A").end, 4733u);
      EXPECT_EQ(vpu_done(r->trace, "V"), 5765u);
      EXPECT_EQ(span(r->trace, "S").end, 8498u);
      EXPECT_EQ(vpu_done(r->trace, "V2"), 5865u);
      EXPECT_EQ(r->result.cores[1].end_cycle, 12425u);
    }
    EXPECT_EQ(span(bg.trace, "bg_load").start, 12425u);
    EXPECT_EQ(span(bg.trace, "bg_load").end, 15158u);
    EXPECT_EQ(vpu_done(bg.trace, "bg_vpu"), 15690u);
    EXPECT_EQ(span(bg.trace, "bg_store").end, 18423u);
    EXPECT_EQ(bg.result.cores[0].end_cycle, 18423u);
    EXPECT_EQ(none.result.cores[0].end_cycle, 12425u);  // the recv

    // The same chain in the main queues: DMA issue is in stream order, so A waits behind
    // bg_store, which waits for bg_vpu (done 15690); V waits behind bg_vpu on the VPU.
    const Traced inline_chain = run(engine, waiting_chain(true, false));
    EXPECT_EQ(span(inline_chain.trace, "A").start, 15690u);
    EXPECT_GE(span(inline_chain.trace, "V").start, span(inline_chain.trace, "bg_vpu").end);
  }
}

// A background store waits for a recv whose send (core 1) answers core 0's main-queue send,
// which comes after the store in the stream. In the main queue this is a deadlock (the store
// blocks D); in the background it is not. (The analytical engine's scan stops at the waiting
// background store and must retry past it before calling the round a deadlock.)
// D 2000..2299; s0 taken 2299, delivered 2692 (r1); s1 taken 2692, delivered 3085 (r0);
// G 3085..3384.
TEST(BackgroundQueue, AWaitOnAPeerThatNeedsTheMainQueueIsNotADeadlock) {
  for (bool async : {true, false}) {
    auto p = test::make_program("crossed", {{0, 0}, {0, 1}});
    test::Stream a(p.cores[0]), b(p.cores[1]);
    const uint32_t g = a.dma_store(0, {a.recv(0, 1, 2)}, "G");
    if (async) a.async(g);
    a.send(0, 0, 1, 1, {a.dma_load(0, {}, "D")});
    b.send(0, 0, 0, 2, {b.recv(0, 0, 1)});
    for (const char* engine : kEngines) {
      SCOPED_TRACE(engine);
      if (!async) {
        EXPECT_THROW(run(engine, p), SimError);
        continue;
      }
      const Traced r = run(engine, p);
      EXPECT_EQ(span(r.trace, "D").end, 2299u);
      EXPECT_EQ(span(r.trace, "G").start, 3085u);
      EXPECT_EQ(r.result.cores[0].end_cycle, 3384u);
      EXPECT_EQ(r.result.cores[1].end_cycle, 3085u);
    }
  }
}

// The VPU serves both queues one block at a time. Main: V1 [2000, 2500); V2 waits for the 1 MiB
// load: [4733, 5233), done 5265; the VPU is idle in [2500, 4733) (2233 cycles).
// Background, each ready at 2299 (after the zero-byte load Z):
//   B1 (1000) fits the gap: [2500, 3500);
//   B2 (3000) does not fit what is left of it ([3500, 4733)): after V2, [5233, 8233);
//   B3 (500) would fit [3500, 4000) but its queue is in order: after B2, [8233, 8733), done 8765.
// Both engines place the main blocks first here (their deps are known first: stream order for
// the analytical engine, L's start before Z's for SystemC), so they agree exactly.
TEST(BackgroundQueue, VpuBlocksFillIdleGapsInOrderWithoutOverlap) {
  auto p = test::make_program("vpu_gaps");
  test::Stream s(p.cores[0]);
  const uint32_t l = s.dma_load(kMiB, {}, "L");
  const uint32_t z = s.dma_load(0, {}, "Z");
  s.vpu(alu(500), {}, "V1");
  s.vpu(alu(500), {l}, "V2");
  s.async(s.vpu(alu(1000), {z}, "B1"));
  s.async(s.vpu(alu(3000), {z}, "B2"));
  s.async(s.vpu(alu(500), {z}, "B3"));
  for (const char* engine : kEngines) {
    SCOPED_TRACE(engine);
    const Traced r = run(engine, p);
    EXPECT_EQ(span(r.trace, "V1").start, 2000u);
    EXPECT_EQ(span(r.trace, "V2").start, 4733u);
    EXPECT_EQ(span(r.trace, "B1").start, 2500u);
    EXPECT_EQ(span(r.trace, "B2").start, 5233u);
    EXPECT_EQ(span(r.trace, "B3").start, 8233u);
    EXPECT_EQ(r.result.device_cycles, 8765u);
    // Never two blocks at once: busy time is the sum, and the drawn intervals are disjoint.
    EXPECT_EQ(test::stat(r.result, "slice.chip0.core0.vpu", "busy_cycles"), 500 + 500 + 1000 + 3000 + 500);
    EXPECT_EQ(test::stat(r.result, "slice.chip0.core0.vpu", "blocks"), 5);
    auto blocks = r.trace.on("slice.chip0", "core0.vpu");
    ASSERT_EQ(blocks.size(), 5u);
    std::sort(blocks.begin(), blocks.end(), [](const auto& x, const auto& y) { return x.start < y.start; });
    for (size_t k = 1; k < blocks.size(); ++k)
      EXPECT_LE(blocks[k - 1].start + blocks[k - 1].dur, blocks[k].start) << blocks[k].name;
  }
}

// The background DMA queue is in order, like the main one, and independent of it: G1 waits for
// V (1000, done 3032) and G2 (no deps) waits behind it: both 3032..3331; the main M runs
// 2000..2299 (on the main queue it would be behind G1 and G2 as well).
TEST(BackgroundQueue, TheBackgroundDmaQueueKeepsItsOwnOrder) {
  auto p = test::make_program("dma_order");
  test::Stream s(p.cores[0]);
  const uint32_t v = s.vpu(alu(1000), {}, "V");
  s.async(s.dma_load(0, {v}, "G1"));
  s.async(s.dma_load(0, {}, "G2"));
  s.dma_load(0, {}, "M");
  for (const char* engine : kEngines) {
    SCOPED_TRACE(engine);
    const Traced r = run(engine, p);
    EXPECT_EQ(span(r.trace, "G1").start, 3032u);
    EXPECT_EQ(span(r.trace, "G2").start, 3032u);
    EXPECT_EQ(span(r.trace, "G2").end, 3331u);
    EXPECT_EQ(span(r.trace, "M").start, 2000u);
    EXPECT_EQ(span(r.trace, "M").end, 2299u);
  }
}

// With only one queue per unit in use, a background queue is timed as the main one would be:
// every exact-cycle case with all its DMAs and VPU blocks moved to the background gives the same
// cycles on both engines.
TEST(BackgroundQueue, AProgramEntirelyInTheBackgroundTimesAsInTheMainQueues) {
  for (const char* engine : kEngines) {
    auto e = make_engine(engine, test::v3_8_like());
    for (auto c : test::exact_cycle_cases()) {
      for (auto& core : c.program.cores)
        for (auto& ins : core.instrs)
          ins.async = ins.op == isa::Op::kDmaLoad || ins.op == isa::Op::kDmaStore || ins.op == isa::Op::kVpu;
      const RunResult r = e->run(c.program, nullptr);
      EXPECT_EQ(r.device_cycles, c.device_cycles) << engine << " " << c.name;
      for (size_t i = 0; i < c.core_cycles.size(); ++i)
        EXPECT_EQ(r.cores.at(i).end_cycle, c.core_cycles[i]) << engine << " " << c.name;
    }
  }
}

// Background and main work sharing the VPU and the HBM.
// Main (the exact-cycle "chain"): A 2000..4733 (HBM 2064..4498); weights 4733..4749; matmul
//   4749..5005, done 5261; V (256) 5261..5517, done 5549; S requested at 5613.
// Background: G (500) has the idle VPU: 2000..2500, done 2532; Bl (512 KiB) starts at 2532, its
//   HBM request at 2596 waits for A's service: 4498..5715, done 5950; H (1000) 5950..6950, done
//   6982; Bs (512 KiB) requested at 7046.
// S's request waits for Bl's service (asked for first): 5715..8149, done 8384; Bs after S:
//   8149..9366, done 9601. (SystemC: per channel, A ends 4497.73, Bl 5714.60, S 8148.33, Bs
//   9365.20; + 235, completion on the next cycle: 5950, 8384, 9601.)
// Without the background work S ends at 8282 (the "chain" case): Bl costs it 5715 - 5613 = 102.
// `in_time_order`: the stream lists the work in the order of its HBM requests (A, Bl, S, Bs), as
// the analytical engine needs to place them in that order; otherwise the whole background chain
// comes right after A (as a compiler emitting a collective at its start would).
isa::Program mixed(bool in_time_order) {
  auto p = test::make_program("mixed");
  test::Stream s(p.cores[0]);
  const uint32_t a = s.dma_load(kMiB, {}, "A");
  const uint32_t g = s.async(s.vpu(alu(500), {}, "G"));
  const uint32_t bl = s.async(s.dma_load(512 * 1024, {g}, "Bl"));
  auto background_rest = [&] {
    const uint32_t h = s.async(s.vpu(alu(1000), {bl}, "H"));
    s.async(s.dma_store(512 * 1024, {h}, "Bs"));
  };
  if (!in_time_order) background_rest();
  const uint32_t w = s.weights(0, 128, 128, {a});
  const uint32_t m = s.matmul(0, 256, 128, 128, {w});
  s.dma_store(kMiB, {s.vpu(alu(256), {m}, "V")}, "S");
  if (in_time_order) background_rest();
  return p;
}

TEST(BackgroundQueue, EnginesAgreeExactlyOnAMixedProgramInTimeOrder) {
  for (const char* engine : kEngines) {
    SCOPED_TRACE(engine);
    const Traced r = run(engine, mixed(true));
    EXPECT_EQ(span(r.trace, "A").end, 4733u);
    EXPECT_EQ(vpu_done(r.trace, "V"), 5549u);
    EXPECT_EQ(span(r.trace, "G").start, 2000u);
    EXPECT_EQ(span(r.trace, "Bl").start, 2532u);
    EXPECT_EQ(span(r.trace, "Bl").end, 5950u);
    EXPECT_EQ(span(r.trace, "H").start, 5950u);
    EXPECT_EQ(span(r.trace, "S").end, 8282u + (5715 - 5613));
    EXPECT_EQ(span(r.trace, "Bs").end, 9601u);
    EXPECT_EQ(r.result.device_cycles, 9601u);
    EXPECT_EQ(test::stat(r.result, "slice.chip0.core0.vpu", "busy_cycles"), 256 + 500 + 1000);
    EXPECT_EQ(test::stat(r.result, "slice.chip0.hbm", "bytes"), 3.0 * kMiB);
    EXPECT_EQ(test::stat(r.result, "slice.chip0.core0.dma", "transfers"), 4);
  }
}

// A contended VPU interval goes to the block that is ready first when the background block
// comes first in the stream: L (1 MiB, done 4733), V1 [2000, 2500), B (3000, ready 2532 after V1)
// listed before V2 (500, ready 4733 after L). The analytical engine defers B until its main queues
// reach 2532, and holds V2 (ready later than B) until B is placed: B [2532, 5532), V2 [5532,
// 6032), done 6064, as SystemC (first come, first served).
TEST(BackgroundQueue, AContendedVpuIntervalGoesToTheBlockReadyFirst) {
  auto p = test::make_program("vpu_fcfs");
  test::Stream s(p.cores[0]);
  const uint32_t l = s.dma_load(kMiB, {}, "L");
  const uint32_t v1 = s.vpu(alu(500), {}, "V1");
  s.async(s.vpu(alu(3000), {v1}, "B"));
  s.vpu(alu(500), {l}, "V2");
  for (const char* engine : kEngines) {
    SCOPED_TRACE(engine);
    const Traced r = run(engine, p);
    EXPECT_EQ(span(r.trace, "B").start, 2532u);
    EXPECT_EQ(span(r.trace, "V2").start, 5532u);
    EXPECT_EQ(r.result.device_cycles, 6064u);
  }
}

// Where the engines differ by design (sim/README.md, "Background queues"):
// * (Agreement) DMA engines: both engines give the main and the background DMAs the same engines.
//   Four main zero-byte loads take the four engines 2000..2299; the background one G gets an
//   engine at 2299 (done 2598).
// * Who takes a contended VPU interval first: SystemC places a block as soon as its deps'
//   completion times are known, the analytical engine in stream order. B (3000) is ready at 2532
//   (after V1), V2 at 4733 (after the 1 MiB load L); B does not fit the idle [2500, 4733).
//   SystemC knows V1's end at the launch, L's only when L starts: B gets [2532, 5532), V2
//   [5532, 6032), done 6064 (as a first-come-first-served VPU would). The analytical engine
//   places V2 first, [4733, 5233), then B [5233, 8233), done 8265.
// * (Agreement) HBM order: mixed(false) lists H and Bs before the main W, M, V, S. Bs (ready at
//   7046) waits in the analytical engine until the main queues have placed work up to then
//   (defer), so S (requested at 5613) gets HBM first, as in SystemC: S ends at 8384, Bs at 9601.
TEST(BackgroundQueue, EnginesDifferWhereDocumented) {
  {
    auto p = test::make_program("engines");
    test::Stream s(p.cores[0]);
    for (const char* label : {"M0", "M1", "M2", "M3"}) s.dma_load(0, {}, label);
    s.async(s.dma_load(0, {}, "G"));
    const Traced sc = run("systemc", p), an = run("analytical", p);
    // Both engines: the background DMA waits for one of the engines the main DMAs hold.
    for (const Traced* r : {&sc, &an}) {
      EXPECT_EQ(span(r->trace, "M3").end, 2299u);
      EXPECT_EQ(span(r->trace, "G").start, 2299u);
      EXPECT_EQ(r->result.device_cycles, 2598u);
    }
  }
  {
    auto p = test::make_program("vpu_order");
    test::Stream s(p.cores[0]);
    const uint32_t l = s.dma_load(kMiB, {}, "L");
    const uint32_t v1 = s.vpu(alu(500), {}, "V1");
    s.vpu(alu(500), {l}, "V2");
    s.async(s.vpu(alu(3000), {v1}, "B"));
    const Traced sc = run("systemc", p), an = run("analytical", p);
    EXPECT_EQ(span(sc.trace, "B").start, 2532u);
    EXPECT_EQ(span(sc.trace, "V2").start, 5532u);
    EXPECT_EQ(sc.result.device_cycles, 6064u);
    EXPECT_EQ(span(an.trace, "V2").start, 4733u);
    EXPECT_EQ(span(an.trace, "B").start, 5233u);
    EXPECT_EQ(an.result.device_cycles, 8265u);
  }
  {
    // (Agreement) Stream order does not decide HBM order: the analytical engine defers Bs until its
    // main queues have reached its ready time, so S gets HBM first, as in SystemC.
    for (const char* engine : kEngines) {
      const Traced r = run(engine, mixed(false));
      EXPECT_EQ(span(r.trace, "S").end, 8384u) << engine;
      EXPECT_EQ(r.result.device_cycles, 9601u) << engine;
    }
  }
}

}  // namespace
}  // namespace tpusim
