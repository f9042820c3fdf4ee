// PeriodicTask runs at once, repeats, and stops at once when destroyed.
#include "storage_node/periodic_task.h"

#include <atomic>
#include <functional>
#include <memory>

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
  auto task = std::make_unique<PeriodicTask>(absl::Hours(1),
                                             [&] { runs.fetch_add(1); });
  ASSERT_TRUE(Eventually([&] { return runs.load() == 1; }, absl::Seconds(30)));
  // Idle: at once. 30 s is far below the hour a wrong destructor would wait
  // and far above what a loaded machine adds.
  const absl::Time start = absl::Now();
  task.reset();
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(30))
      << "~PeriodicTask took " << absl::FormatDuration(took);
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
