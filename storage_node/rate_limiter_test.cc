#include "storage_node/rate_limiter.h"

#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

TEST(RateLimiterTest, SpacesAcquisitionsAtTheRate) {
  FakeClock clock;
  RateLimiter limiter(1000, &clock);  // 1000 bytes/s
  const absl::Time t0 = clock.MonotonicNow();
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(limiter.Acquire(500, absl::InfiniteFuture()), IsOk());
  }
  // Each waits for its own 500 B at 1000 B/s.
  EXPECT_EQ(clock.MonotonicNow() - t0, absl::Seconds(2.5));
}

TEST(RateLimiterTest, IdleTimeIsNotBanked) {
  FakeClock clock;
  RateLimiter limiter(1000, &clock);
  ASSERT_THAT(limiter.Acquire(1000, absl::InfiniteFuture()), IsOk());
  clock.Advance(absl::Seconds(60));
  const absl::Time t0 = clock.MonotonicNow();
  ASSERT_THAT(limiter.Acquire(1000, absl::InfiniteFuture()), IsOk());
  ASSERT_THAT(limiter.Acquire(1000, absl::InfiniteFuture()), IsOk());
  EXPECT_EQ(clock.MonotonicNow() - t0, absl::Seconds(2));
}

TEST(RateLimiterTest, ZeroIsUnlimited) {
  FakeClock clock;
  RateLimiter limiter(0, &clock);
  const absl::Time t0 = clock.MonotonicNow();
  for (int i = 0; i < 100; ++i) {
    ASSERT_THAT(limiter.Acquire(1 << 30, absl::InfiniteFuture()), IsOk());
  }
  EXPECT_EQ(clock.MonotonicNow(), t0);
}

TEST(RateLimiterTest, TurnPastDeadlineFailsWithoutUsingTheRate) {
  FakeClock clock;
  RateLimiter limiter(1000, &clock);
  const absl::Time t0 = clock.MonotonicNow();
  EXPECT_THAT(limiter.Acquire(5000, t0 + absl::Seconds(1)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_EQ(clock.MonotonicNow(), t0);  // did not sleep
  ASSERT_THAT(limiter.Acquire(1000, absl::InfiniteFuture()), IsOk());
  EXPECT_EQ(clock.MonotonicNow() - t0, absl::Seconds(1));  // nothing used
}

}  // namespace
}  // namespace node
}  // namespace rangefs
