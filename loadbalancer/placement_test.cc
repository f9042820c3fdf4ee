#include "loadbalancer/placement.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kTiB = uint64_t{1} << 40;

std::vector<PlacementNode> Nodes(int n, int zones = 1) {
  std::vector<PlacementNode> v(n);
  for (int i = 0; i < n; ++i) {
    v[i].id = "n" + std::to_string(i);
    v[i].zone = "z" + std::to_string(i % zones);
    v[i].free_bytes = kTiB;
  }
  return v;
}

using Layout = std::vector<std::vector<NodeId>>;

std::map<NodeId, int> PerNode(const Layout& l) {
  std::map<NodeId, int> m;
  for (const auto& t : l) {
    for (const NodeId& n : t) ++m[n];
  }
  return m;
}

std::map<std::pair<NodeId, NodeId>, int> Pairs(const Layout& l) {
  std::map<std::pair<NodeId, NodeId>, int> m;
  for (const auto& t : l) {
    for (size_t i = 0; i < t.size(); ++i) {
      for (size_t j = i + 1; j < t.size(); ++j) {
        ++m[std::minmax(t[i], t[j])];
      }
    }
  }
  return m;
}

void ExpectDistinctWithinTargets(const Layout& l, int width, int replicas) {
  ASSERT_EQ(static_cast<int>(l.size()), width);
  for (const auto& t : l) {
    ASSERT_EQ(static_cast<int>(t.size()), replicas);
    EXPECT_EQ(std::set<NodeId>(t.begin(), t.end()).size(), t.size());
  }
}

TEST(PlacementTest, FourNodesTwoReplicasWidthTwelveIsEvenAndSpread) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 bitgen(seed);
    absl::StatusOr<Layout> l = PlaceStripes(Nodes(4), 12, 2, bitgen);
    ASSERT_THAT(l, IsOk());
    ExpectDistinctWithinTargets(*l, 12, 2);
    std::map<NodeId, int> per_node = PerNode(*l);
    ASSERT_EQ(per_node.size(), 4u);
    for (const auto& [node, n] : per_node) {
      EXPECT_GE(n, 5) << node << " seed " << seed;
      EXPECT_LE(n, 7) << node << " seed " << seed;
    }
    // 6 possible pairs share 12 targets: each pair 2 +- 1.
    auto pairs = Pairs(*l);
    EXPECT_EQ(pairs.size(), 6u) << "seed " << seed;
    for (const auto& [pair, n] : pairs) {
      EXPECT_GE(n, 1) << pair.first << "," << pair.second;
      EXPECT_LE(n, 3) << pair.first << "," << pair.second;
    }
  }
}

TEST(PlacementTest, LargerClusterSpreadsPartners) {
  std::mt19937_64 bitgen(5);
  absl::StatusOr<Layout> l = PlaceStripes(Nodes(8), 56, 3, bitgen);
  ASSERT_THAT(l, IsOk());
  ExpectDistinctWithinTargets(*l, 56, 3);
  for (const auto& [node, n] : PerNode(*l)) {
    EXPECT_NEAR(n, 21, 1) << node;  // 168 slots / 8
  }
  // 56 targets x 3 pairs = 168 pair uses over 28 pairs: 6 each on average.
  auto pairs = Pairs(*l);
  EXPECT_EQ(pairs.size(), 28u);
  for (const auto& [pair, n] : pairs) {
    EXPECT_GE(n, 3) << pair.first << "," << pair.second;
    EXPECT_LE(n, 9) << pair.first << "," << pair.second;
  }
}

TEST(PlacementTest, DistinctZonesWhenEnoughZones) {
  std::mt19937_64 bitgen(9);
  std::vector<PlacementNode> nodes = Nodes(6, /*zones=*/3);
  absl::StatusOr<Layout> l = PlaceStripes(nodes, 30, 3, bitgen);
  ASSERT_THAT(l, IsOk());
  ExpectDistinctWithinTargets(*l, 30, 3);
  std::map<NodeId, std::string> zone_of;
  for (const auto& n : nodes) zone_of[n.id] = n.zone;
  for (const auto& t : *l) {
    std::set<std::string> zones;
    for (const NodeId& n : t) zones.insert(zone_of[n]);
    EXPECT_EQ(zones.size(), 3u);
  }
  for (const auto& [node, n] : PerNode(*l)) EXPECT_NEAR(n, 15, 1) << node;
}

TEST(PlacementTest, FewerZonesThanReplicasSpreadsZones) {
  std::mt19937_64 bitgen(9);
  std::vector<PlacementNode> nodes = Nodes(6, /*zones=*/2);
  absl::StatusOr<Layout> l = PlaceStripes(nodes, 20, 3, bitgen);
  ASSERT_THAT(l, IsOk());
  ExpectDistinctWithinTargets(*l, 20, 3);
  std::map<NodeId, std::string> zone_of;
  for (const auto& n : nodes) zone_of[n.id] = n.zone;
  for (const auto& t : *l) {
    std::set<std::string> zones;
    for (const NodeId& n : t) zones.insert(zone_of[n]);
    EXPECT_EQ(zones.size(), 2u);  // never all three in one zone
  }
}

TEST(PlacementTest, OnlyLiveActiveNonFullNodes) {
  std::vector<PlacementNode> nodes = Nodes(6);
  nodes[0].live = false;
  nodes[1].admin = AdminState::kDraining;
  nodes[2].admin = AdminState::kDisabled;
  nodes[3].free_bytes = 0;
  std::mt19937_64 bitgen(1);
  absl::StatusOr<Layout> l = PlaceStripes(nodes, 10, 2, bitgen);
  ASSERT_THAT(l, IsOk());
  for (const auto& t : *l) {
    EXPECT_THAT(t, ::testing::UnorderedElementsAre("n4", "n5"));
  }
}

TEST(PlacementTest, FavoursFreeCapacity) {
  std::vector<PlacementNode> nodes = Nodes(5);
  nodes[0].free_bytes = 2 * kTiB;  // share 2/6 of 60 slots = 20
  std::mt19937_64 bitgen(4);
  absl::StatusOr<Layout> l = PlaceStripes(nodes, 30, 2, bitgen);
  ASSERT_THAT(l, IsOk());
  ExpectDistinctWithinTargets(*l, 30, 2);
  std::map<NodeId, int> per_node = PerNode(*l);
  EXPECT_NEAR(per_node["n0"], 20, 1);
  for (int i = 1; i < 5; ++i) {
    EXPECT_NEAR(per_node["n" + std::to_string(i)], 10, 1);
  }
}

TEST(PlacementTest, SingleReplicaAndExactlyEnoughNodes) {
  std::mt19937_64 bitgen(2);
  absl::StatusOr<Layout> one = PlaceStripes(Nodes(3), 9, 1, bitgen);
  ASSERT_THAT(one, IsOk());
  for (const auto& [node, n] : PerNode(*one)) EXPECT_EQ(n, 3) << node;
  absl::StatusOr<Layout> all = PlaceStripes(Nodes(3), 4, 3, bitgen);
  ASSERT_THAT(all, IsOk());
  ExpectDistinctWithinTargets(*all, 4, 3);
}

TEST(PlacementTest, Errors) {
  std::mt19937_64 bitgen(1);
  EXPECT_THAT(PlaceStripes(Nodes(4), 0, 2, bitgen),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("width")));
  EXPECT_THAT(
      PlaceStripes(Nodes(4), 4, 0, bitgen),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replicas")));
  std::vector<PlacementNode> dup = Nodes(3);
  dup[2].id = "n0";
  EXPECT_THAT(PlaceStripes(dup, 4, 2, bitgen),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n0")));

  std::vector<PlacementNode> nodes = Nodes(4);
  nodes[0].live = false;
  nodes[1].admin = AdminState::kDisabled;
  EXPECT_THAT(PlaceStripes(nodes, 4, 3, bitgen),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("need 3 eligible")));
  EXPECT_THAT(PlaceStripes({}, 4, 1, bitgen),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("have 0 of 0")));
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
