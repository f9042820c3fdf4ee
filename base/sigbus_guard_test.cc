#include "base/sigbus_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

// Two pages of a file, mapped, then the file truncated to `keep` bytes:
// the pages past it raise SIGBUS when touched.
class ShrunkMapping {
 public:
  explicit ShrunkMapping(off_t keep) {
    std::string dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    std::string path = dir + "/sigbus_guard_XXXXXX";
    fd_ = mkstemp(path.data());
    EXPECT_GE(fd_, 0);
    unlink(path.c_str());
    size_ = 2 * static_cast<size_t>(getpagesize());
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(size_)), 0);
    void* m = mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    EXPECT_NE(m, MAP_FAILED);
    map_ = static_cast<const volatile char*>(m);
    EXPECT_EQ(ftruncate(fd_, keep), 0);
  }
  ~ShrunkMapping() {
    munmap(const_cast<char*>(map_), size_);
    close(fd_);
  }
  char At(size_t i) const { return map_[i]; }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  size_t size_ = 0;
  const volatile char* map_ = nullptr;
};

TEST(SigbusGuardTest, AFaultEndsTheFunctionNotTheProcess) {
  ShrunkMapping m(0);
  volatile int reached = 0;
  EXPECT_FALSE(RunCatchingSigbus([&] {
    reached = 1;
    (void)m.At(0);
    reached = 2;
  }));
  EXPECT_EQ(reached, 1);
  // Again on the same thread: the signal is not left blocked.
  EXPECT_FALSE(RunCatchingSigbus([&] { (void)m.At(m.size() - 1); }));
}

TEST(SigbusGuardTest, BytesStillInTheFileAreReadAsUsual) {
  ShrunkMapping m(getpagesize());
  char c = 1;
  EXPECT_TRUE(RunCatchingSigbus([&] { c = m.At(0); }));
  EXPECT_EQ(c, 0);  // ftruncate grew the file with zeros
  EXPECT_FALSE(RunCatchingSigbus([&] { c = m.At(m.size() - 1); }));
}

TEST(SigbusGuardTest, AnInnerCallCatchesItsOwnFaultAndTheOuterGoesOn) {
  ShrunkMapping m(0);
  bool inner = true;
  bool after = false;
  EXPECT_TRUE(RunCatchingSigbus([&] {
    inner = RunCatchingSigbus([&] { (void)m.At(0); });
    after = true;
  }));
  EXPECT_FALSE(inner);
  EXPECT_TRUE(after);
  // The outer call's catch was put back: a fault now ends it.
  EXPECT_FALSE(RunCatchingSigbus([&] {
    EXPECT_FALSE(RunCatchingSigbus([&] { (void)m.At(0); }));
    (void)m.At(0);
  }));
}

TEST(SigbusGuardTest, ThreadsCatchTheirOwnFaultsAtOnce) {
  ShrunkMapping m(0);
  std::atomic<int> caught{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (!RunCatchingSigbus([&] { (void)m.At(0); })) caught++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(caught.load(), 400);
}

// A handler installed later that blocks every signal while it runs and
// chains to ours (as sanitizers and crash reporters do): the jump leaves
// the thread's mask as it was, so the next fault is caught too.
struct sigaction g_ours;
void BlockingChain(int sig, siginfo_t* info, void* context) {
  g_ours.sa_sigaction(sig, info, context);
}

TEST(SigbusGuardDeathTest, AHandlerThatBlocksSignalsAndChainsLeavesTheMask) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ShrunkMapping m(0);
        EXPECT_TRUE(RunCatchingSigbus([] {}));  // ours installed
        struct sigaction later;
        memset(&later, 0, sizeof(later));
        later.sa_sigaction = BlockingChain;
        later.sa_flags = SA_SIGINFO;
        sigfillset(&later.sa_mask);
        sigaction(SIGBUS, &later, &g_ours);
        for (int i = 0; i < 3; ++i) {
          if (RunCatchingSigbus([&] { (void)m.At(0); })) _exit(2);
        }
        sigset_t now;
        sigprocmask(SIG_BLOCK, nullptr, &now);
        _exit(sigismember(&now, SIGBUS) ? 3 : 0);
      },
      testing::ExitedWithCode(0), "");
}

TEST(SigbusGuardDeathTest, ASentSigbusIsNotCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(RunCatchingSigbus([] { raise(SIGBUS); }),
              testing::KilledBySignal(SIGBUS), "");
}

TEST(SigbusGuardDeathTest, AFaultOutsideKillsTheProcessAsBefore) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ShrunkMapping m(0);
        EXPECT_TRUE(RunCatchingSigbus([] {}));  // installed
        (void)m.At(0);
      },
      testing::KilledBySignal(SIGBUS), "");
}

void ExitSeven(int) { _exit(7); }

TEST(SigbusGuardDeathTest, AFaultOutsideGoesToThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        signal(SIGBUS, ExitSeven);
        ShrunkMapping m(0);
        EXPECT_TRUE(RunCatchingSigbus([] {}));
        (void)m.At(0);
      },
      testing::ExitedWithCode(7), "");
}

}  // namespace
}  // namespace rangefs
