// The output directory lock: one holder at a time, the holder's pid in the refusal, released when
// the holder goes (even when it is killed), never inherited by the point processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/config_error.h"
#include "sweep/out_lock.h"

namespace tpusim::sweep {
namespace {

namespace fs = std::filesystem;

struct OutLock : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("tpusim_lock_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(OutLock, ASecondHolderIsRefusedWithTheFirstOnesPid) {
  // flock locks belong to open files, so a second open in this process conflicts like another process.
  const OutDirLock first(dir.string(), "--out");
  try {
    const OutDirLock second(dir.string(), "--out");
    FAIL() << "a second lock of one directory was granted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(dir.string()), std::string::npos) << m;
    EXPECT_NE(m.find("pid " + std::to_string(::getpid())), std::string::npos) << m;
    EXPECT_NE(m.find("another directory"), std::string::npos) << m;
  }
}

TEST_F(OutLock, ReleasedWhenTheHolderGoes) {
  { const OutDirLock first(dir.string(), "--out"); }
  EXPECT_NO_THROW(OutDirLock(dir.string(), "--out"));
  // A holder killed without cleaning up (the file stays, with its pid): the lock is free again.
  const pid_t child = ::fork();
  if (child == 0) {
    // Never return into gtest from the child; retry while the parent's probe holds the lock.
    for (;;) {
      try {
        const OutDirLock held(dir.string(), "--out");
        for (;;) ::pause();
      } catch (...) {
        ::usleep(1000);
      }
    }
  }
  ASSERT_GT(child, 0);
  bool taken = false;  // wait until the child holds it
  for (int i = 0; i < 500 && !taken; ++i) {
    try {
      const OutDirLock probe(dir.string(), "--out");  // released at once: the child may take it
    } catch (const ConfigError&) {
      taken = true;
    }
    if (!taken) ::usleep(10000);
  }
  ASSERT_TRUE(taken);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(fs::exists(dir / kLockFile));
  EXPECT_NO_THROW(OutDirLock(dir.string(), "--out"));
}

TEST_F(OutLock, NotInheritedByChildren) {
  const OutDirLock held(dir.string(), "--out");
  // The lock fd is close-on-exec: a child that execs does not hold it.
  const std::string fds = (dir / "fds").string();
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", ("ls -l /proc/$$/fd > " + fds).c_str(), nullptr);
    ::_exit(127);
  }
  ::waitpid(child, nullptr, 0);
  std::ifstream in(fds);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.find(kLockFile), std::string::npos) << text;
}

TEST_F(OutLock, ADirectoryThatCannotHoldTheLock) {
  EXPECT_THROW(OutDirLock((dir / "missing").string(), "--out"), ConfigError);
}

}  // namespace
}  // namespace tpusim::sweep
