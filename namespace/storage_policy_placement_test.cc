#include "namespace/storage_policy_placement.h"

#include <string>
#include <vector>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace ns {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

NodeEntry Node(const std::string& id, const std::string& rack = "",
               v1::AdminState state = v1::ACTIVE) {
  NodeEntry e;
  e.record.set_id(id);
  e.record.set_zone("z");
  e.record.set_rack(rack);
  e.record.set_admin_state(state);
  return e;
}

LiveEntry Live(const std::string& id,
               v1::LiveRecord::Health h = v1::LiveRecord::HEALTHY) {
  LiveEntry e;
  e.record.set_node_id(id);
  e.record.set_health(h);
  return e;
}

TEST(StoragePolicyPlacementTest, CountsLiveActiveNodesOnly) {
  std::vector<NodeEntry> nodes = {Node("n1"), Node("n2"),
                                  Node("n3"), Node("n4", "", v1::DRAINING),
                                  Node("n5"), Node("n6")};
  nodes[5].invalid = "bad record";
  std::vector<LiveEntry> live = {
      Live("n1"), Live("n2", v1::LiveRecord::DEGRADED),
      Live("n3", v1::LiveRecord::UNHEALTHY), Live("n4"), Live("n6")};
  // n3 unhealthy, n4 draining, n5 no live record, n6 invalid.
  PlacementCapacity c = CountPlacementCapacity(nodes, live);
  EXPECT_THAT(c.live_nodes, ElementsAre("n1", "n2"));
  EXPECT_FALSE(c.racks_known);
  EXPECT_THAT(CheckGoalPlaceable(LayoutGoal::Replicas(2), c), IsOk());
  EXPECT_THAT(CheckGoalPlaceable(LayoutGoal::Replicas(3), c),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("replicas=3 needs 3 live ACTIVE nodes"),
                             HasSubstr("has 2 (n1, n2)"))));
  EXPECT_THAT(CheckGoalPlaceable(LayoutGoal::Ec(2, 1), c),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("ec=2+1 needs 3 live ACTIVE nodes")));
}

TEST(StoragePolicyPlacementTest, RacksLimitErasureCodesWhereRecordsHaveThem) {
  std::vector<NodeEntry> nodes = {Node("a1", "r1"), Node("a2", "r1"),
                                  Node("b1", "r2"), Node("c1", "r3"),
                                  Node("d1", "")};
  std::vector<LiveEntry> live;
  for (const NodeEntry& n : nodes) live.push_back(Live(n.record.id()));
  PlacementCapacity c = CountPlacementCapacity(nodes, live);
  EXPECT_TRUE(c.racks_known);
  // d1 carries no rack: a domain of its own.
  EXPECT_THAT(c.domains,
              ElementsAre("(node d1, no rack)", "z/r1", "z/r2", "z/r3"));
  EXPECT_THAT(CheckGoalPlaceable(LayoutGoal::Ec(3, 1), c), IsOk());
  EXPECT_THAT(CheckGoalPlaceable(LayoutGoal::Ec(3, 2), c),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("ec=3+2 needs 5 distinct racks"),
                             HasSubstr("are in 4 (zone/rack:"))));
  // Replicas are judged by nodes alone.
  EXPECT_THAT(CheckGoalPlaceable(LayoutGoal::Replicas(5), c), IsOk());
}

TEST(StoragePolicyPlacementTest, NoRacksNoRackRule) {
  std::vector<NodeEntry> nodes = {Node("n1"), Node("n2"), Node("n3")};
  std::vector<LiveEntry> live = {Live("n1"), Live("n2"), Live("n3")};
  PlacementCapacity c = CountPlacementCapacity(nodes, live);
  EXPECT_TRUE(c.domains.empty());
  EXPECT_THAT(CheckGoalPlaceable(LayoutGoal::Ec(2, 1), c), IsOk());
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
