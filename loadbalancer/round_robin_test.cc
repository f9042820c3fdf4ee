#include "loadbalancer/round_robin.h"

#include <map>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

std::vector<Candidate> Nodes(int n) {
  std::vector<Candidate> c(n);
  for (int i = 0; i < n; ++i) c[i].node = "n" + std::to_string(i);
  return c;
}

TEST(RoundRobinTest, NameIsRoundRobin) {
  EXPECT_EQ(NewRoundRobinPolicy()->name(), "round_robin");
}

TEST(RoundRobinTest, DistributesEvenlyAndIgnoresLoad) {
  auto policy = NewRoundRobinPolicy();
  absl::InsecureBitGen bitgen(std::seed_seq{1});
  auto picker = policy->NewPicker(bitgen);
  std::vector<Candidate> c = Nodes(3);
  c[0].inflight = 100;  // ignored
  c[1].ewma_latency = absl::Seconds(1);
  std::map<size_t, int> hits;
  for (int i = 0; i < 3000; ++i) ++hits[picker->Pick(c)];
  ASSERT_EQ(hits.size(), 3u);
  for (const auto& [idx, n] : hits) EXPECT_EQ(n, 1000) << "index " << idx;
}

TEST(RoundRobinTest, PickersOfOnePolicyShareTheRotation) {
  auto policy = NewRoundRobinPolicy();
  absl::InsecureBitGen bitgen(std::seed_seq{1});
  std::vector<Candidate> c = Nodes(4);
  std::vector<int> hits(4, 0);
  // One pick per batch: a fresh Picker each time must still rotate.
  for (int i = 0; i < 400; ++i) ++hits[policy->NewPicker(bitgen)->Pick(c)];
  for (int h : hits) EXPECT_EQ(h, 100);
}

TEST(RoundRobinTest, SingleCandidate) {
  auto policy = NewRoundRobinPolicy();
  absl::InsecureBitGen bitgen(std::seed_seq{1});
  auto picker = policy->NewPicker(bitgen);
  std::vector<Candidate> c = Nodes(1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(picker->Pick(c), 0u);
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
