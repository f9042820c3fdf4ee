#include "loadbalancer/least_loaded.h"

#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

constexpr int kPicks = 20000;

std::vector<Candidate> Nodes(int n, absl::Duration latency) {
  std::vector<Candidate> c(n);
  for (int i = 0; i < n; ++i) {
    c[i].node = "n" + std::to_string(i);
    c[i].ewma_latency = latency;
  }
  return c;
}

std::vector<int> Distribution(const std::vector<Candidate>& c,
                              const LeastLoadedOptions& options = {},
                              uint64_t seed = 42) {
  auto policy = NewLeastLoadedPolicy(options);
  std::mt19937_64 bitgen(seed);
  auto picker = policy->NewPicker(bitgen);
  std::vector<int> hits(c.size(), 0);
  for (int i = 0; i < kPicks; ++i) ++hits[picker->Pick(c)];
  return hits;
}

TEST(LeastLoadedTest, NameIsLeastLoaded) {
  EXPECT_EQ(NewLeastLoadedPolicy()->name(), "least_loaded");
}

TEST(LeastLoadedTest, EqualReplicasShareEvenly) {
  std::vector<int> hits = Distribution(Nodes(4, absl::Milliseconds(1)));
  for (int h : hits) EXPECT_NEAR(h, kPicks / 4, kPicks / 40);
}

TEST(LeastLoadedTest, AvoidsTenTimesSlowReplicaButStillUsesIt) {
  std::vector<Candidate> c = Nodes(3, absl::Milliseconds(1));
  c[1].ewma_latency = absl::Milliseconds(10);
  std::vector<int> hits = Distribution(c);
  // Only exploration (1%, a third of it on this replica) reaches it.
  EXPECT_GT(hits[1], 0);
  EXPECT_LT(hits[1], kPicks / 50);
  EXPECT_NEAR(hits[0], hits[2], kPicks / 20);
}

TEST(LeastLoadedTest, SlowReplicaGetsTrafficOnceOthersAreBusy) {
  // Fast replicas with 20 outstanding bytes cost (20+1)*1ms > (0+1)*10ms.
  std::vector<Candidate> c = Nodes(3, absl::Milliseconds(1));
  c[1].ewma_latency = absl::Milliseconds(10);
  c[0].outstanding_bytes = 20;
  c[2].outstanding_bytes = 20;
  std::vector<int> hits = Distribution(c);
  EXPECT_GT(hits[1], kPicks / 2);
}

TEST(LeastLoadedTest, AvoidsHeavilyLoadedReplicaButStillUsesIt) {
  std::vector<Candidate> c = Nodes(3, absl::Milliseconds(1));
  c[2].outstanding_bytes = 64 << 20;
  c[2].inflight = 16;
  std::vector<int> hits = Distribution(c);
  EXPECT_GT(hits[2], 0);
  EXPECT_LT(hits[2], kPicks / 50);
}

TEST(LeastLoadedTest, InflightBreaksTies) {
  std::vector<Candidate> c = Nodes(2, absl::Milliseconds(1));
  c[0].inflight = 5;
  LeastLoadedOptions no_explore;
  no_explore.explore_probability = 0;
  std::vector<int> hits = Distribution(c, no_explore);
  EXPECT_EQ(hits[0], 0);
  EXPECT_EQ(hits[1], kPicks);
}

TEST(LeastLoadedTest, UnknownLatencyIsNeutral) {
  // Unknown is costed as the mean of the known (1ms and 10ms -> 5.5ms):
  // preferred over the slow replica, avoided against the fast one.
  std::vector<Candidate> c = Nodes(3, absl::Milliseconds(1));
  c[1].ewma_latency = absl::Milliseconds(10);
  c[2].ewma_latency = absl::ZeroDuration();
  LeastLoadedOptions no_explore;
  no_explore.explore_probability = 0;
  std::vector<int> hits = Distribution(c, no_explore);
  EXPECT_EQ(hits[1], 0);
  // Fast wins both its pairs (2/3), unknown wins only against slow (1/3).
  EXPECT_NEAR(hits[0], 2 * kPicks / 3, kPicks / 30);
  EXPECT_NEAR(hits[2], kPicks / 3, kPicks / 30);

  // All unknown: even.
  std::vector<int> even =
      Distribution(Nodes(3, absl::ZeroDuration()), no_explore);
  for (int h : even) EXPECT_NEAR(h, kPicks / 3, kPicks / 30);
}

TEST(LeastLoadedTest, LatencyFloorMakesTinyDifferencesEqual) {
  std::vector<Candidate> c = Nodes(2, absl::Microseconds(5));
  c[1].ewma_latency = absl::Microseconds(20);  // both below the 50us floor
  std::vector<int> hits = Distribution(c);
  EXPECT_NEAR(hits[0], kPicks / 2, kPicks / 20);
}

TEST(LeastLoadedTest, SingleCandidate) {
  absl::InsecureBitGen bitgen(std::seed_seq{1});
  std::vector<Candidate> c = Nodes(1, absl::ZeroDuration());
  EXPECT_EQ(PickLeastLoaded(c, bitgen), 0u);
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
