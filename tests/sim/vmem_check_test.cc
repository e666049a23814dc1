// unit: the VMEM allocation check (capacity, overlap while live, bytes free in the message).
#include <gtest/gtest.h>

#include "sim/base/sim_error.h"
#include "sim/vmem/vmem_check.h"
#include "tests/sim/test_hw.h"
#include "tests/sim/test_program.h"

namespace tpusim {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::string vmem_error(const isa::CoreProgram& p) {
  try {
    check_vmem(test::v3_8_like().chip.core.vmem, p, "slice.chip0.core0.vmem");
  } catch (const SimError& e) {
    return e.what();
  }
  return "";
}

isa::CoreProgram stream_of(uint32_t n) {
  isa::CoreProgram p;
  test::Stream s(p);
  for (uint32_t i = 0; i < n; ++i) s.vpu({});
  return p;
}

TEST(VmemCheck, ReusingAddressesWithDisjointLiveRangesIsFine) {
  auto p = stream_of(4);
  test::Stream s(p);
  s.alloc(0, 8 * kMiB, 0, 1, "a");
  s.alloc(0, 8 * kMiB, 2, 3, "b");  // same addresses, after 'a' died
  s.alloc(8 * kMiB, 8 * kMiB, 0, 3, "c");
  VmemUsage u = check_vmem(test::v3_8_like().chip.core.vmem, p, "vmem");
  EXPECT_EQ(u.capacity_bytes, 16 * kMiB);
  EXPECT_EQ(u.allocs, 3u);
  EXPECT_EQ(u.peak_bytes, 16 * kMiB);
}

// A 17 MiB buffer in a 16 MiB VMEM; nothing else is live, so all 16 MiB are free.
TEST(VmemCheck, OverflowNamesTheBufferItsSizeAndTheFreeBytes) {
  auto p = stream_of(2);
  test::Stream s(p);
  s.alloc(0, 17 * kMiB, 0, 1, "activations");
  std::string e = vmem_error(p);
  EXPECT_NE(e.find("out of VMEM on slice.chip0.core0.vmem"), std::string::npos) << e;
  EXPECT_NE(e.find("'activations' (17825792 bytes at offset 0"), std::string::npos) << e;
  EXPECT_NE(e.find("16777216-byte VMEM; 16777216 bytes free while it is live"), std::string::npos) << e;
}

// 'b' (6 MiB at 12 MiB) runs past the end; 'a' (4 MiB) is live at the same time: 12 MiB free.
TEST(VmemCheck, OverflowPastTheEndCountsOtherLiveBuffers) {
  auto p = stream_of(2);
  test::Stream s(p);
  s.alloc(0, 4 * kMiB, 0, 1, "a");
  s.alloc(12 * kMiB, 6 * kMiB, 1, 1, "b");
  std::string e = vmem_error(p);
  EXPECT_NE(e.find("'b' (6291456 bytes at offset 12582912"), std::string::npos) << e;
  EXPECT_NE(e.find("12582912 bytes free while it is live"), std::string::npos) << e;
}

// 'x' = [0, 1 MiB) live 0..1, 'y' = [512 KiB, 1.5 MiB) live 1..2: they share addresses at #1.
// While 'y' is live, 'x' holds 1 MiB: 15 MiB free.
TEST(VmemCheck, OverlapWhileLiveNamesBothBuffers) {
  auto p = stream_of(3);
  test::Stream s(p);
  s.alloc(0, kMiB, 0, 1, "x");
  s.alloc(kMiB / 2, kMiB, 1, 2, "y");
  std::string e = vmem_error(p);
  EXPECT_NE(e.find("VMEM buffers overlap on slice.chip0.core0.vmem"), std::string::npos) << e;
  EXPECT_NE(e.find("'x' (1048576 bytes at offset 0, live #0..#1)"), std::string::npos) << e;
  EXPECT_NE(e.find("'y' (1048576 bytes at offset 524288, live #1..#2)"), std::string::npos) << e;
  EXPECT_NE(e.find("15728640 bytes free while 'y' is live"), std::string::npos) << e;
}

TEST(VmemCheck, LiveRangeOutsideTheStreamIsInvalid) {
  auto p = stream_of(2);
  test::Stream s(p);
  s.alloc(0, 16, 1, 5, "late");
  EXPECT_NE(vmem_error(p).find("'late'"), std::string::npos);
}

}  // namespace
}  // namespace tpusim
