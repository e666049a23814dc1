// Progress text: clock format, counts and the ETA; nothing at all in quiet mode.
#include <gtest/gtest.h>

#include <cstdio>

#include "sweep/progress.h"

namespace tpusim::sweep {
namespace {

TEST(SweepProgress, Clock) {
  EXPECT_EQ(SweepProgress::clock(0), "0:00");
  EXPECT_EQ(SweepProgress::clock(65.4), "1:05");
  EXPECT_EQ(SweepProgress::clock(3723), "1:02:03");
}

TEST(SweepProgress, LineHasCountsAndEta) {
  SweepProgress p(SweepProgress::Mode::kNone, "mxu", 10);
  // 4 done and 2 half done in 50 s: 10 s per point, 5 points left.
  EXPECT_EQ(p.line(4, 1, 2, 50), "sweep mxu: 4/10 points, 1 failed, 2 running, 0:50 elapsed, ETA 0:50");
  EXPECT_EQ(p.line(0, 0, 2, 3), "sweep mxu: 0/10 points, 2 running, 0:03 elapsed");  // no ETA before a point is in
  EXPECT_EQ(p.line(10, 0, 0, 99), "sweep mxu: 10/10 points, 1:39 elapsed");
}

TEST(SweepProgress, QuietPrintsNothingLinesModePrintsLines) {
  char buf[4096] = {};
  std::FILE* f = fmemopen(buf, sizeof buf, "w");
  {
    SweepProgress p(SweepProgress::Mode::kNone, "q", 3, f);
    p.update(3, 0, 0);
  }
  std::fflush(f);
  EXPECT_EQ(std::string(buf), "");
  {
    SweepProgress p(SweepProgress::Mode::kLines, "l", 3, f);
    p.update(3, 0, 0);
  }
  std::fclose(f);
  EXPECT_EQ(std::string(buf).rfind("sweep l: 3/3 points, 0:00 elapsed\n", 0), 0u) << buf;
  EXPECT_EQ(std::string(buf).find('\033'), std::string::npos);  // no terminal escapes in logs
}

}  // namespace
}  // namespace tpusim::sweep
