#include "base/thread_priority.h"

#include <algorithm>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

// Each case lowers only threads it starts, so the test runner's main thread
// keeps its priority.
TEST(ThreadPriorityTest, LowersOnlyTheCallingThreadAndItsChildren) {
  const int before = ThreadNice();
  int lowered = -100, child = -100;
  std::thread t([&] {
    if (!LowerThreadPriority(10).ok()) return;
    lowered = ThreadNice();
    std::thread c([&] { child = ThreadNice(); });
    c.join();
  });
  t.join();
  EXPECT_EQ(lowered, std::max(before, 10));
  EXPECT_EQ(child, lowered);
  EXPECT_EQ(ThreadNice(), before);
}

TEST(ThreadPriorityTest, NeverRaisesPriority) {
  // A test runner started with nice > 15 (e.g. beside a build) starts there.
  const int before = ThreadNice();
  int after = -100;
  absl::Status s;
  std::thread t([&] {
    if (!LowerThreadPriority(15).ok()) return;
    s = LowerThreadPriority(5);
    after = ThreadNice();
  });
  t.join();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(after, std::max(before, 15));
}

TEST(ThreadPriorityTest, RefusesValuesOutsideTheBackgroundRange) {
  absl::Status neg, big;
  std::thread t([&] {
    neg = LowerThreadPriority(-1);
    big = LowerThreadPriority(kMaxNice + 1);
  });
  t.join();
  EXPECT_EQ(neg.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(neg.message()), testing::HasSubstr("nice value -1"));
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rangefs
