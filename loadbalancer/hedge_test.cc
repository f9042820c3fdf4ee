#include "loadbalancer/hedge.h"

#include <random>
#include <vector>

#include "base/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

TEST(HedgeBudgetTest, StartsWithBurst) {
  FakeClock clock;
  HedgeBudget budget(&clock, 0.05, 10);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(budget.TryAcquire()) << i;
  EXPECT_FALSE(budget.TryAcquire());
  EXPECT_EQ(budget.stats().last_denied, clock.Now());
}

TEST(HedgeBudgetTest, HoldsRatioOverTenThousandReads) {
  FakeClock clock;
  HedgeBudget budget(&clock, 0.05, 10);
  std::mt19937_64 rng(3);
  int hedges = 0;
  const int kReads = 10000;
  for (int i = 0; i < kReads; ++i) {
    budget.OnRead();
    // A pathological caller that wants to hedge half of its reads, in bursts.
    const int want = (rng() % 2 == 0) ? static_cast<int>(rng() % 3) : 0;
    for (int k = 0; k < want; ++k) hedges += budget.TryAcquire();
  }
  EXPECT_LE(hedges, 0.05 * kReads + 10);
  EXPECT_GE(hedges, 0.05 * kReads - 1);  // and the budget is usable
  HedgeBudget::Stats s = budget.stats();
  EXPECT_EQ(s.reads, static_cast<uint64_t>(kReads));
  EXPECT_EQ(s.hedges_granted, static_cast<uint64_t>(hedges));
  EXPECT_GT(s.hedges_denied, 0u);
}

TEST(HedgeBudgetTest, CostlierHedgesTakeSeveralTokensAtMostTheBurst) {
  HedgeBudget budget(nullptr, 0.05, 10);
  EXPECT_TRUE(budget.TryAcquire(6));   // an RS(6,3) rebuild: 6 reads
  EXPECT_FALSE(budget.TryAcquire(6));  // 4 left
  EXPECT_TRUE(budget.TryAcquire(4));
  budget.OnReads(1000);  // back to the burst (capped at 10)
  // Never more than the bucket holds: a 20-read hedge takes all 10.
  EXPECT_TRUE(budget.TryAcquire(20));
  EXPECT_FALSE(budget.TryAcquire(1));
  EXPECT_EQ(budget.stats().hedges_granted, 3u);
}

TEST(HedgeBudgetTest, TokensCapAtBurst) {
  HedgeBudget budget(nullptr, 0.5, 3);
  for (int i = 0; i < 1000; ++i) budget.OnRead();
  int granted = 0;
  while (budget.TryAcquire()) ++granted;
  EXPECT_EQ(granted, 3);
  budget.OnRead();
  EXPECT_FALSE(budget.TryAcquire());  // 0.5 token
  budget.OnRead();
  EXPECT_TRUE(budget.TryAcquire());
}

TEST(HedgeBudgetTest, OnReadsCountsLikeThatManyOnRead) {
  HedgeBudget one_by_one(nullptr, 0.25, 3), at_once(nullptr, 0.25, 3);
  while (one_by_one.TryAcquire()) {
  }
  while (at_once.TryAcquire()) {
  }
  for (int i = 0; i < 7; ++i) one_by_one.OnRead();
  at_once.OnReads(7);
  at_once.OnReads(0);
  EXPECT_EQ(at_once.stats().reads, one_by_one.stats().reads);
  EXPECT_DOUBLE_EQ(at_once.stats().tokens, one_by_one.stats().tokens);
  EXPECT_DOUBLE_EQ(at_once.stats().tokens, 1.75);
  at_once.OnReads(100);
  EXPECT_DOUBLE_EQ(at_once.stats().tokens, 3);  // capped at the burst
}

TEST(HedgeBudgetTest, ZeroRatioAllowsOnlyTheInitialBurst) {
  HedgeBudget budget(nullptr, 0.0, 1);
  EXPECT_TRUE(budget.TryAcquire());
  for (int i = 0; i < 100; ++i) budget.OnRead();
  EXPECT_FALSE(budget.TryAcquire());
}

TEST(HedgeDelayTest, UsesNodeQuantileThenGlobalThenMin) {
  FakeClock clock;
  LatencyTracker t(&clock);
  EXPECT_EQ(HedgeDelay(t, "a"), absl::Milliseconds(1));  // nothing known
  for (int i = 0; i < 100; ++i) t.Record("a", absl::Milliseconds(20));
  EXPECT_NEAR(absl::ToDoubleMilliseconds(HedgeDelay(t, "a")), 20, 2.6);
  // Unknown node: the process-wide p95.
  EXPECT_NEAR(absl::ToDoubleMilliseconds(HedgeDelay(t, "b")), 20, 2.6);
  // Fast node: never below `min`.
  for (int i = 0; i < 100; ++i) t.Record("c", absl::Microseconds(10));
  EXPECT_EQ(HedgeDelay(t, "c"), absl::Milliseconds(1));
  EXPECT_EQ(HedgeDelay(t, "c", 0.95, absl::Microseconds(1)),
            t.Quantile("c", 0.95));
}

TEST(HedgeDelayTest, ColdPriorHoldsUntilTheProcessKnowsEnough) {
  FakeClock clock;
  LatencyTracker t(&clock);
  const absl::Duration cold = absl::Milliseconds(75);
  // Nothing known: the prior, not `min` (a new process would hedge every
  // first read at once).
  EXPECT_EQ(HedgeDelay(t, "a", 0.95, absl::Milliseconds(1), 10, cold), cold);
  // A few fast answers do not lower it; a slow one raises it.
  for (int i = 0; i < 5; ++i) t.Record("b", absl::Milliseconds(2));
  EXPECT_EQ(HedgeDelay(t, "a", 0.95, absl::Milliseconds(1), 10, cold), cold);
  t.Record("b", absl::Milliseconds(300));
  EXPECT_GE(HedgeDelay(t, "a", 0.95, absl::Milliseconds(1), 10, cold),
            absl::Milliseconds(200));
  // Once the process-wide window has min_samples, it rules as before.
  for (int i = 0; i < 200; ++i) t.Record("b", absl::Milliseconds(2));
  EXPECT_NEAR(absl::ToDoubleMilliseconds(
                  HedgeDelay(t, "a", 0.95, absl::Milliseconds(1), 10, cold)),
              2, 0.6);  // histogram buckets: within ~25%
  // And a node's own samples as before.
  for (int i = 0; i < 20; ++i) t.Record("a", absl::Milliseconds(1));
  EXPECT_LE(HedgeDelay(t, "a", 0.95, absl::Milliseconds(1), 10, cold),
            absl::Milliseconds(2));
}

TEST(HedgeDelayTest, ASlowNodeIsHedgedAtTheProcessWideQuantile) {
  FakeClock clock;
  LatencyTracker t(&clock);
  for (int i = 0; i < 1000; ++i) t.Record("fast", absl::Milliseconds(20));
  for (int i = 0; i < 30; ++i) t.Record("slow", absl::Milliseconds(400));
  // The slow node's own p95 is 400 ms; 97% of all reads took 20 ms.
  EXPECT_NEAR(absl::ToDoubleMilliseconds(t.Quantile("slow", 0.95)), 400, 55);
  // The process-wide p95 (histogram buckets: within ~25%), not 400 ms.
  EXPECT_GE(HedgeDelay(t, "slow"), absl::Milliseconds(18));
  EXPECT_LE(HedgeDelay(t, "slow"), absl::Milliseconds(30));
  EXPECT_LE(HedgeDelay(t, "fast"), absl::Milliseconds(30));
}

TEST(HedgingAllowedTest, Rule) {
  FakeClock clock;
  LatencyTracker t(&clock);
  const std::vector<NodeId> ab = {"a", "b"};
  EXPECT_FALSE(HedgingAllowed(t, std::vector<NodeId>{"a"}));  // nowhere to go
  EXPECT_TRUE(HedgingAllowed(t, ab));                         // nothing known
  // The process mostly sees 1 ms reads from other nodes.
  for (int i = 0; i < 1000; ++i) t.Record("x", absl::Milliseconds(1));
  for (int i = 0; i < 20; ++i) t.Record("a", absl::Milliseconds(50));
  EXPECT_TRUE(HedgingAllowed(t, ab));  // b unknown: may be fast
  for (int i = 0; i < 5; ++i) t.Record("b", absl::Milliseconds(50));
  EXPECT_TRUE(HedgingAllowed(t, ab));  // b has too few samples
  for (int i = 0; i < 20; ++i) t.Record("b", absl::Milliseconds(50));
  EXPECT_FALSE(HedgingAllowed(t, ab));  // both p50 > 3 x global p95
  EXPECT_TRUE(HedgingAllowed(t, std::vector<NodeId>{"a", "x"}));
  EXPECT_TRUE(HedgingAllowed(t, ab, {.slow_factor = 100}));
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
