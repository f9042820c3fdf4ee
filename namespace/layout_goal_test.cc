// File: layout_goal_test.cc
#include "namespace/layout_goal.h"

#include "gtest/gtest.h"

namespace rangefs {
namespace ns {
namespace {

v1::FileLayout Extents(int replicas) {
  v1::FileLayout l;
  v1::Extent* e = l.add_extents();
  for (int i = 0; i < replicas; ++i) e->add_replicas()->set_node_id("n");
  l.set_state(v1::READY);
  return l;
}

v1::FileLayout Ec(int k, int m) {
  v1::FileLayout l;
  v1::StripedLayout* s = l.mutable_striped();
  s->mutable_erasure()->set_data_columns(k);
  s->mutable_erasure()->set_parity_columns(m);
  for (int i = 0; i < k + m; ++i) s->add_targets()->add_replicas();
  l.set_state(v1::READY_EC);
  return l;
}

TEST(LayoutGoalTest, ParsesWhatItPrints) {
  for (const LayoutGoal& g : {LayoutGoal::Replicas(2), LayoutGoal::Ec(6, 3)}) {
    absl::StatusOr<LayoutGoal> back = ParseLayoutGoal(g.ToString());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, g);
  }
}

TEST(LayoutGoalTest, RefusesBadText) {
  for (const char* bad : {"", "replicas=0", "replicas=17", "ec=6", "ec=0+3",
                          "ec=6+0", "ec=30+3", "copies=2", "replicas=x"}) {
    EXPECT_FALSE(ParseLayoutGoal(bad).ok()) << bad;
  }
}

TEST(LayoutGoalTest, ReplicaCountMustMatchExactly) {
  EXPECT_TRUE(LayoutMeetsGoal(Extents(2), LayoutGoal::Replicas(2)));
  EXPECT_FALSE(LayoutMeetsGoal(Extents(3), LayoutGoal::Replicas(2)));
  EXPECT_FALSE(LayoutMeetsGoal(Extents(1), LayoutGoal::Replicas(2)));
  v1::FileLayout leaving = Extents(2);
  leaving.mutable_extents(0)->mutable_replicas(1)->set_leaving(true);
  EXPECT_FALSE(LayoutMeetsGoal(leaving, LayoutGoal::Replicas(2)));
}

TEST(LayoutGoalTest, ErasureCodeMustMatchKAndM) {
  EXPECT_TRUE(LayoutMeetsGoal(Ec(6, 3), LayoutGoal::Ec(6, 3)));
  EXPECT_FALSE(LayoutMeetsGoal(Ec(4, 2), LayoutGoal::Ec(6, 3)));
  EXPECT_FALSE(LayoutMeetsGoal(Ec(6, 3), LayoutGoal::Replicas(1)));
  EXPECT_FALSE(LayoutMeetsGoal(Extents(1), LayoutGoal::Ec(6, 3)));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
