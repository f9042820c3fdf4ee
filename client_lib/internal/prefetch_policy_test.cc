// The rule of prefetch_policy.h, at its threshold: a 4 MiB prefetch's extra
// copy costs about 1 ms at kCopyBytesPerSec, so it pays from twice that of
// gap and of fill on.
#include "client_lib/internal/prefetch_policy.h"

#include <cstddef>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

constexpr size_t kBytes = 4 << 20;
// Twice the copy's time, as the policy computes it (about 2.1 ms).
const absl::Duration kTwice =
    2 * absl::Seconds(static_cast<double>(kBytes) /
                      PrefetchPolicy::kCopyBytesPerSec);
const absl::Duration kLess = kTwice - absl::Microseconds(1);

TEST(PrefetchPolicyTest, PaysBeforeAnythingIsKnown) {
  PrefetchPolicy p;
  EXPECT_TRUE(p.Pays(kBytes));
}

TEST(PrefetchPolicyTest, PaysFromTwiceTheCopysTimeOfGapAndFill) {
  PrefetchPolicy p;
  p.Gap(kTwice);
  p.Gap(kTwice);
  p.Fill(kTwice);
  EXPECT_TRUE(p.Pays(kBytes));
  p.Fill(kLess);  // storage too fast
  EXPECT_FALSE(p.Pays(kBytes));
  p.Fill(kTwice);
  p.Gap(kLess);  // a caller too quick
  EXPECT_FALSE(p.Pays(kBytes));
}

TEST(PrefetchPolicyTest, OneLateCallDoesNotTurnItOn) {
  PrefetchPolicy p;
  p.Fill(absl::Milliseconds(5));
  p.Gap(absl::ZeroDuration());
  p.Gap(absl::Milliseconds(5));  // the smaller of the last two counts
  EXPECT_FALSE(p.Pays(kBytes));
  p.Gap(absl::Milliseconds(5));
  EXPECT_TRUE(p.Pays(kBytes));
}

TEST(PrefetchPolicyTest, TheCopysTimeGrowsWithTheBytes) {
  PrefetchPolicy p;
  p.Gap(kTwice);
  p.Gap(kTwice);
  p.Fill(kTwice);
  EXPECT_TRUE(p.Pays(kBytes / 2));
  EXPECT_FALSE(p.Pays(2 * kBytes));
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
