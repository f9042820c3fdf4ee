// PeriodicTask runs at once, repeats, and stops at once when destroyed.
#include "storage_node/periodic_task.h"

#include <atomic>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

// Polls `cond` until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& cond, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (!cond()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST(PeriodicTaskTest, RunsAtOnceAndRepeats) {
  std::atomic<int> runs{0};
  PeriodicTask task(absl::Milliseconds(20), [&] { runs.fetch_add(1); });
  EXPECT_TRUE(Eventually([&] { return runs.load() >= 3; }, absl::Seconds(30)))
      << runs.load();
}

TEST(PeriodicTaskTest, DestructionDoesNotWaitOutTheInterval) {
  std::atomic<int> runs{0};
  const absl::Time start = absl::Now();
  {
    PeriodicTask task(absl::Hours(1), [&] { runs.fetch_add(1); });
    ASSERT_TRUE(
        Eventually([&] { return runs.load() == 1; }, absl::Seconds(30)));
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
