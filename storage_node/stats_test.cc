#include "storage_node/stats.h"

#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

TEST(LatencyWindowTest, EmptyIsZero) {
  LatencyWindow w;
  EXPECT_EQ(w.Percentile(50), absl::ZeroDuration());
}

TEST(LatencyWindowTest, Percentiles) {
  LatencyWindow w(1000);
  for (int i = 1; i <= 100; ++i) w.Record(absl::Microseconds(i));
  EXPECT_EQ(w.Percentile(50), absl::Microseconds(50));
  EXPECT_EQ(w.Percentile(99), absl::Microseconds(99));
  EXPECT_EQ(w.Percentile(100), absl::Microseconds(100));
}

TEST(LatencyWindowTest, KeepsOnlyRecentSamples) {
  LatencyWindow w(10);
  for (int i = 0; i < 100; ++i) w.Record(absl::Seconds(1));
  for (int i = 0; i < 10; ++i) w.Record(absl::Microseconds(5));
  EXPECT_EQ(w.size(), 10u);
  EXPECT_EQ(w.Percentile(99), absl::Microseconds(5));
}

}  // namespace
}  // namespace node
}  // namespace rangefs
