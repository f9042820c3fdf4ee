#include "ingest/follow_policy.h"

#include "base/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace ingest {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1700000000);

ns::StoragePolicy P(std::string dir, ns::LayoutGoal goal, uint64_t min_size = 0,
                    absl::Duration min_age = absl::ZeroDuration()) {
  ns::StoragePolicy p;
  p.dir = std::move(dir);
  p.goal = goal;
  p.min_size = min_size;
  p.min_age = min_age;
  return p;
}

ns::PolicyTable Table() {
  auto t = ns::PolicyTable::FromPolicies(
      {P("/ec", ns::LayoutGoal::Ec(6, 3), 1000),
       P("/ec/hot", ns::LayoutGoal::Replicas(3)),
       P("/aged", ns::LayoutGoal::Ec(4, 2), 0, absl::Hours(1))});
  EXPECT_THAT(t, IsOk());
  return *t;
}

TEST(FollowPolicyTest, EcPolicySetsTheCode) {
  IngestOptions o;
  EXPECT_EQ(FollowPolicy(Table(), "/ec/f", 1000, kNow, o), "/ec");
  EXPECT_EQ(o.ec_data, 6);
  EXPECT_EQ(o.ec_parity, 3);
  EXPECT_EQ(o.replicas, 2);  // for files under ec_min_rows
}

TEST(FollowPolicyTest, ReplicaPolicyClearsAnErasureCode) {
  IngestOptions o;
  o.ec_data = 6;
  o.ec_parity = 3;
  EXPECT_EQ(FollowPolicy(Table(), "/ec/hot/x/f", 5000, kNow, o), "/ec/hot");
  EXPECT_EQ(o.replicas, 3);
  EXPECT_EQ(o.ec_data, 0);
  EXPECT_EQ(o.ec_parity, 0);
}

TEST(FollowPolicyTest, ExemptOrOutsideKeepsThePutsOptions) {
  for (const char* path : {"/ec/small", "/aged/new", "/elsewhere/f"}) {
    IngestOptions o;
    o.replicas = 1;
    EXPECT_EQ(FollowPolicy(Table(), path, 999, kNow, o), "") << path;
    EXPECT_EQ(o.replicas, 1) << path;
    EXPECT_EQ(o.ec_data, 0) << path;
  }
}

}  // namespace
}  // namespace ingest
}  // namespace rangefs
