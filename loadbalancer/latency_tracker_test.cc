#include "loadbalancer/latency_tracker.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

TEST(LatencyTrackerTest, BucketBounds) {
  absl::Span<const double> b = LatencyTracker::BucketUpperBounds();
  ASSERT_EQ(b.size(), 81u);
  EXPECT_DOUBLE_EQ(b.front(), 1e-6);
  EXPECT_NEAR(b[10], 1e-5, 1e-12);
  EXPECT_NEAR(b.back(), 100.0, 1e-9);
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
}

TEST(LatencyTrackerTest, UnknownNodeIsZero) {
  FakeClock clock;
  LatencyTracker t(&clock);
  EXPECT_EQ(t.Ewma("x"), absl::ZeroDuration());
  EXPECT_EQ(t.Quantile("x", 0.5), absl::ZeroDuration());
  EXPECT_EQ(t.Count("x"), 0u);
  EXPECT_EQ(t.GlobalQuantile(0.99), absl::ZeroDuration());
  HistogramSnapshot s = t.NodeSnapshot("x");
  EXPECT_EQ(s.counts.size(), s.upper_bounds_seconds.size() + 1);
  EXPECT_EQ(s.count, 0u);
}

TEST(LatencyTrackerTest, Ewma) {
  FakeClock clock;
  LatencyTracker t(&clock);
  t.Record("a", absl::Milliseconds(10));
  EXPECT_EQ(t.Ewma("a"), absl::Milliseconds(10));
  t.Record("a", absl::Milliseconds(20));  // 0.2*20 + 0.8*10 = 12
  EXPECT_NEAR(Ms(t.Ewma("a")), 12.0, 1e-6);
  for (int i = 0; i < 100; ++i) t.Record("a", absl::Milliseconds(1));
  EXPECT_NEAR(Ms(t.Ewma("a")), 1.0, 1e-3);
  EXPECT_EQ(t.Ewma("b"), absl::ZeroDuration());
}

TEST(LatencyTrackerTest, QuantilesOfExponentialDistribution) {
  FakeClock clock;
  LatencyTracker t(&clock);
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> exp_ms(1.0);  // mean 1 ms
  std::vector<double> samples;
  for (int i = 0; i < 50000; ++i) {
    double ms = exp_ms(rng);
    samples.push_back(ms);
    t.Record("a", absl::Microseconds(ms * 1000));
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {0.5, 0.95, 0.99}) {
    const double truth = samples[static_cast<size_t>(q * samples.size())];
    EXPECT_NEAR(Ms(t.Quantile("a", q)), truth, truth * 0.06) << "q=" << q;
    EXPECT_NEAR(Ms(t.GlobalQuantile(q)), truth, truth * 0.06) << "q=" << q;
  }
  // Analytic values: ln2, ln20, ln100 ms.
  EXPECT_NEAR(Ms(t.Quantile("a", 0.5)), std::log(2.0), 0.05);
  EXPECT_NEAR(Ms(t.Quantile("a", 0.95)), std::log(20.0), 0.2);
  EXPECT_NEAR(Ms(t.Quantile("a", 0.99)), std::log(100.0), 0.3);
  EXPECT_EQ(t.Count("a"), 50000u);
}

TEST(LatencyTrackerTest, ConstantLatencyIsExact) {
  FakeClock clock;
  LatencyTracker t(&clock);
  for (int i = 0; i < 100; ++i) t.Record("a", absl::Milliseconds(20));
  for (double q : {0.0, 0.5, 0.95, 0.99, 1.0}) {
    EXPECT_EQ(t.Quantile("a", q), absl::Milliseconds(20)) << q;
  }
  HistogramSnapshot s = t.NodeSnapshot("a");
  EXPECT_DOUBLE_EQ(s.min_seconds, 0.02);
  EXPECT_DOUBLE_EQ(s.max_seconds, 0.02);
}

TEST(LatencyTrackerTest, PerNodeAndGlobal) {
  FakeClock clock;
  LatencyTracker t(&clock);
  for (int i = 0; i < 900; ++i) t.Record("fast", absl::Milliseconds(1));
  for (int i = 0; i < 100; ++i) t.Record("slow", absl::Milliseconds(100));
  EXPECT_NEAR(Ms(t.Quantile("fast", 0.99)), 1.0, 0.13);
  EXPECT_NEAR(Ms(t.Quantile("slow", 0.5)), 100.0, 13);
  EXPECT_NEAR(Ms(t.GlobalQuantile(0.5)), 1.0, 0.13);
  EXPECT_NEAR(Ms(t.GlobalQuantile(0.95)), 100.0, 13);
  EXPECT_EQ(t.GlobalCount(), 1000u);
}

// A handle is the node's entry: records through it are the node's, and a
// new handle, until it records, changes nothing anyone reads.
TEST(LatencyTrackerTest, RecordsThroughAHandleAreTheNodes) {
  FakeClock clock;
  LatencyTracker t(&clock);
  const LatencyTracker::NodeHandle a = t.Handle("a");
  EXPECT_EQ(t.Count("a"), 0u);
  EXPECT_EQ(t.Ewma("a"), absl::ZeroDuration());
  t.Record(a, absl::Milliseconds(10));
  t.Record("a", absl::Milliseconds(20));
  t.Record(t.Handle("a"), absl::Milliseconds(20));
  EXPECT_EQ(t.Count("a"), 3u);
  EXPECT_NEAR(Ms(t.Ewma("a")), 0.2 * 20 + 0.8 * (0.2 * 20 + 0.8 * 10), 1e-6);
  EXPECT_EQ(t.Ewma(a), t.Ewma("a"));
  EXPECT_EQ(t.Ewma(t.Handle("b")), absl::ZeroDuration());
  EXPECT_EQ(t.Count("b"), 0u);
  EXPECT_EQ(t.GlobalCount(), 3u);
}

// Record(handle, latency, now) files the sample in the window's slice of
// `now`, not of the clock's time when it is called.
TEST(LatencyTrackerTest, RecordAtATimeUsesThatTimesSlice) {
  FakeClock clock;
  LatencyTracker t(&clock, {.window = absl::Seconds(60), .window_slices = 6});
  const LatencyTracker::NodeHandle a = t.Handle("a");
  const absl::Time start = clock.MonotonicNow();
  clock.Advance(absl::Seconds(65));
  // Ended at the start: already out of the window.
  t.Record(a, absl::Milliseconds(5), start);
  EXPECT_EQ(t.Count("a"), 0u);
  // Ended now: in it.
  t.Record(a, absl::Milliseconds(5), clock.MonotonicNow());
  EXPECT_EQ(t.Count("a"), 1u);
  EXPECT_EQ(t.GlobalCount(), 1u);
  EXPECT_NEAR(Ms(t.Ewma("a")), 5, 1e-6);
}

// RecordAll is Record for each sample: the same counts, EWMAs and
// quantiles per node and overall, whether a node's samples come in one
// run or several.
TEST(LatencyTrackerTest, RecordAllIsRecordForEach) {
  FakeClock clock;
  LatencyTracker one(&clock), all(&clock);
  const std::vector<std::pair<std::string, int>> samples = {
      {"a", 3}, {"a", 9}, {"b", 1}, {"a", 27}, {"c", 200}, {"b", 5}, {"b", 5}};
  std::vector<LatencyTracker::Sample> batch;
  for (const auto& [node, ms] : samples) {
    one.Record(one.Handle(node), absl::Milliseconds(ms), clock.MonotonicNow());
    batch.push_back({all.Handle(node), absl::Milliseconds(ms)});
  }
  all.RecordAll({batch.data(), 3}, clock.MonotonicNow());
  all.RecordAll(absl::MakeConstSpan(batch).subspan(3), clock.MonotonicNow());
  all.RecordAll({}, clock.MonotonicNow());  // nothing
  for (const std::string node : {"a", "b", "c"}) {
    EXPECT_EQ(all.Count(node), one.Count(node)) << node;
    EXPECT_EQ(all.Ewma(node), one.Ewma(node)) << node;
    EXPECT_EQ(all.Quantile(node, 0.5), one.Quantile(node, 0.5)) << node;
  }
  EXPECT_EQ(all.Count("a"), 3u);
  EXPECT_NEAR(Ms(all.Ewma("a")), 0.2 * 27 + 0.8 * (0.2 * 9 + 0.8 * 3), 1e-6);
  EXPECT_EQ(all.GlobalCount(), samples.size());
  EXPECT_EQ(all.GlobalQuantile(0.99), one.GlobalQuantile(0.99));
  EXPECT_EQ(all.GlobalCumulativeSnapshot().count, samples.size());
  // One call, a node's samples apart ({a, b, a}): each lands on its node.
  LatencyTracker mixed(&clock);
  const LatencyTracker::NodeHandle a = mixed.Handle("a");
  const LatencyTracker::NodeHandle b = mixed.Handle("b");
  const LatencyTracker::Sample apart[] = {{a, absl::Milliseconds(10)},
                                          {b, absl::Milliseconds(1)},
                                          {a, absl::Milliseconds(20)}};
  mixed.RecordAll(apart, clock.MonotonicNow());
  EXPECT_EQ(mixed.Count("a"), 2u);
  EXPECT_EQ(mixed.Count("b"), 1u);
  EXPECT_NEAR(Ms(mixed.Ewma("a")), 0.2 * 20 + 0.8 * 10, 1e-6);
  EXPECT_NEAR(Ms(mixed.Ewma("b")), 1, 1e-6);
}

TEST(LatencyTrackerTest, WindowForgetsOldSamples) {
  FakeClock clock;
  LatencyTracker t(&clock, {.window = absl::Seconds(60), .window_slices = 6});
  for (int i = 0; i < 100; ++i) t.Record("a", absl::Milliseconds(100));
  clock.Advance(absl::Seconds(30));
  for (int i = 0; i < 100; ++i) t.Record("a", absl::Milliseconds(1));
  EXPECT_EQ(t.Count("a"), 200u);
  clock.Advance(absl::Seconds(35));  // first batch's slice left the window
  EXPECT_EQ(t.Count("a"), 100u);
  EXPECT_NEAR(Ms(t.Quantile("a", 0.99)), 1.0, 0.13);
  EXPECT_EQ(t.GlobalCount(), 100u);
  clock.Advance(absl::Minutes(5));
  EXPECT_EQ(t.Count("a"), 0u);
  EXPECT_EQ(t.Quantile("a", 0.5), absl::ZeroDuration());
  // The EWMA and the cumulative histogram do not expire.
  EXPECT_GT(t.Ewma("a"), absl::ZeroDuration());
  HistogramSnapshot total = t.GlobalCumulativeSnapshot();
  EXPECT_EQ(total.count, 200u);
  EXPECT_NEAR(total.sum_seconds, 100 * 0.1 + 100 * 0.001, 1e-9);
  uint64_t sum = 0;
  for (uint64_t c : total.counts) sum += c;
  EXPECT_EQ(sum, 200u);
}

TEST(LatencyTrackerTest, ExtremesGoToEdgeBuckets) {
  FakeClock clock;
  LatencyTracker t(&clock);
  t.Record("a", absl::Nanoseconds(10));
  t.Record("a", -absl::Seconds(1));
  t.Record("b", absl::Seconds(1000));
  HistogramSnapshot s = t.GlobalCumulativeSnapshot();
  EXPECT_EQ(s.counts.front(), 2u);
  EXPECT_EQ(s.counts.back(), 1u);
  // Overflow bucket: the recorded maximum.
  EXPECT_EQ(t.Quantile("b", 0.5), absl::Seconds(1000));
  EXPECT_LE(t.Quantile("a", 0.5), absl::Microseconds(1));
}

TEST(LatencyTrackerTest, ConcurrentRecords) {
  LatencyTracker t(nullptr);  // real clock
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&t, k] {
      for (int i = 0; i < 5000; ++i) {
        t.Record(k % 2 ? "a" : "b", absl::Microseconds(100 + i % 7));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(t.GlobalCumulativeSnapshot().count, 20000u);
  EXPECT_EQ(t.Count("a") + t.Count("b"), 20000u);
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
