#include "loadbalancer/sticky.h"

#include <map>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

std::vector<Candidate> Nodes(int n) {
  std::vector<Candidate> c(n);
  for (int i = 0; i < n; ++i) {
    c[i].node = "node-" + std::to_string(i);
    c[i].ewma_latency = absl::Milliseconds(1);
  }
  return c;
}

TEST(StickyTest, NameIsSticky) {
  EXPECT_EQ(NewStickyPolicy()->name(), "sticky");
}

TEST(StickyTest, StableForAStreamKey) {
  auto policy = NewStickyPolicy();
  std::mt19937_64 bitgen(7);
  std::vector<Candidate> c = Nodes(4);
  for (uint64_t key = 1; key <= 50; ++key) {
    auto picker = policy->NewPicker(bitgen);
    const size_t first = picker->Pick(c, key);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(policy->NewPicker(bitgen)->Pick(c, key), first) << key;
      EXPECT_EQ(picker->Pick(c, key), first) << key;
    }
  }
}

TEST(StickyTest, KeysSpreadOverReplicas) {
  auto policy = NewStickyPolicy();
  std::mt19937_64 bitgen(7);
  auto picker = policy->NewPicker(bitgen);
  std::vector<Candidate> c = Nodes(4);
  std::vector<int> hits(4, 0);
  for (uint64_t key = 1; key <= 4000; ++key) ++hits[picker->Pick(c, key)];
  for (int h : hits) EXPECT_NEAR(h, 1000, 150);
}

TEST(StickyTest, IndependentOfCandidateOrder) {
  std::vector<Candidate> c = Nodes(5);
  std::vector<Candidate> reversed(c.rbegin(), c.rend());
  for (uint64_t key = 1; key <= 200; ++key) {
    EXPECT_EQ(c[PreferredReplica(c, key)].node,
              reversed[PreferredReplica(reversed, key)].node);
  }
}

TEST(StickyTest, OtherKeysStayWhenOneReplicaDisappears) {
  auto policy = NewStickyPolicy();
  std::mt19937_64 bitgen(7);
  auto picker = policy->NewPicker(bitgen);
  std::vector<Candidate> all = Nodes(4);
  std::vector<Candidate> without2 = {all[0], all[1], all[3]};
  int moved = 0;
  for (uint64_t key = 1; key <= 2000; ++key) {
    const std::string before = all[picker->Pick(all, key)].node;
    const std::string after = without2[picker->Pick(without2, key)].node;
    if (before == "node-2") {
      ++moved;
      EXPECT_NE(after, "node-2");
    } else {
      EXPECT_EQ(after, before) << "key " << key;
    }
  }
  EXPECT_NEAR(moved, 500, 100);
}

TEST(StickyTest, FallsBackToLeastLoadedWhenPreferredIsOverloaded) {
  auto policy = NewStickyPolicy();
  std::mt19937_64 bitgen(7);
  auto picker = policy->NewPicker(bitgen);
  std::vector<Candidate> c = Nodes(3);
  const uint64_t key = 12345;
  const size_t preferred = PreferredReplica(c, key);

  // At the limit (2 * 1 + 4 = 6) it stays.
  for (Candidate& x : c) x.inflight = 1;
  c[preferred].inflight = 6;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(picker->Pick(c, key), preferred);

  // Above it, least_loaded decides; make the preferred one expensive too.
  c[preferred].inflight = 7;
  c[preferred].outstanding_bytes = 7 << 20;
  int stayed = 0;
  for (int i = 0; i < 1000; ++i) stayed += picker->Pick(c, key) == preferred;
  EXPECT_LT(stayed, 50);  // exploration only
}

TEST(StickyTest, NoStreamKeyMeansLeastLoaded) {
  auto policy = NewStickyPolicy();
  std::mt19937_64 bitgen(7);
  auto picker = policy->NewPicker(bitgen);
  std::vector<Candidate> c = Nodes(3);
  c[0].ewma_latency = absl::Milliseconds(10);
  std::vector<int> hits(3, 0);
  for (int i = 0; i < 3000; ++i) ++hits[picker->Pick(c, 0)];
  EXPECT_LT(hits[0], 100);
  EXPECT_NEAR(hits[1], hits[2], 300);
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
