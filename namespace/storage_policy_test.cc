#include "namespace/storage_policy.h"

#include <string>
#include <vector>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/keys.h"
#include "namespace/memory_kv.h"

namespace rangefs {
namespace ns {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

const absl::Time kNow = absl::FromUnixSeconds(1700000000);

StoragePolicy P(std::string dir, LayoutGoal goal, uint64_t min_size = 0,
                absl::Duration min_age = absl::ZeroDuration()) {
  StoragePolicy p;
  p.dir = std::move(dir);
  p.goal = goal;
  p.min_size = min_size;
  p.min_age = min_age;
  p.set_time = kNow;
  return p;
}

PolicyTable Table(std::vector<StoragePolicy> policies) {
  absl::StatusOr<PolicyTable> t =
      PolicyTable::FromPolicies(std::move(policies));
  EXPECT_THAT(t, IsOk());
  return t.ok() ? *std::move(t) : PolicyTable();
}

std::string NearestDir(const PolicyTable& t, absl::string_view path) {
  const StoragePolicy* p = t.Nearest(path);
  return p == nullptr ? "none" : p->dir;
}

TEST(StoragePolicyTest, NearestAncestorApplies) {
  PolicyTable t = Table({P("/crawl", LayoutGoal::Replicas(3)),
                         P("/crawl/sealed", LayoutGoal::Ec(6, 3)),
                         P("/a/b/c", LayoutGoal::Replicas(1))});
  EXPECT_EQ(NearestDir(t, "/crawl/seg-1"), "/crawl");
  EXPECT_EQ(NearestDir(t, "/crawl/sealed/x/y/seg-1"), "/crawl/sealed");
  EXPECT_EQ(NearestDir(t, "/crawl/sealedx"), "/crawl");  // not a prefix match
  EXPECT_EQ(NearestDir(t, "/crawl2/seg"), "none");
  EXPECT_EQ(NearestDir(t, "/crawl"), "/crawl");  // the dir itself counts
  EXPECT_EQ(NearestDir(t, "/a/b/seg"), "none");
  EXPECT_EQ(NearestDir(t, "/a/b/c/d"), "/a/b/c");
  EXPECT_EQ(NearestDir(t, "/other"), "none");
}

TEST(StoragePolicyTest, RootPolicyCoversEverything) {
  PolicyTable t = Table(
      {P("/", LayoutGoal::Replicas(2)), P("/cold", LayoutGoal::Ec(4, 2))});
  EXPECT_EQ(NearestDir(t, "/x"), "/");
  EXPECT_EQ(NearestDir(t, "/deep/down/f"), "/");
  EXPECT_EQ(NearestDir(t, "/cold/f"), "/cold");
}

TEST(StoragePolicyTest, NoPolicyNoGoal) {
  PolicyTable empty;
  EXPECT_EQ(
      GoalForFile(empty, "/crawl/f", 1 << 30, kNow - absl::Hours(99), kNow),
      std::nullopt);
  PolicyTable t = Table({P("/crawl", LayoutGoal::Ec(6, 3))});
  EXPECT_EQ(GoalForFile(t, "/hot/f", 1 << 30, kNow - absl::Hours(99), kNow),
            std::nullopt);
  EXPECT_EQ(GoalForFile(t, "/crawl/f", 1 << 30, kNow - absl::Hours(99), kNow),
            LayoutGoal::Ec(6, 3));
}

TEST(StoragePolicyTest, MinSizeKeepsSmallFilesAsIngested) {
  PolicyTable t = Table({P("/crawl", LayoutGoal::Ec(6, 3), 1000)});
  PolicyResolution small = ResolvePolicy(t, "/crawl/f", 999, kNow, kNow);
  EXPECT_EQ(small.goal, std::nullopt);
  ASSERT_NE(small.policy, nullptr);
  EXPECT_EQ(small.policy->dir, "/crawl");
  EXPECT_THAT(small.exempt, HasSubstr("below min-size 1000"));
  PolicyResolution big = ResolvePolicy(t, "/crawl/f", 1000, kNow, kNow);
  EXPECT_EQ(big.goal, LayoutGoal::Ec(6, 3));
  EXPECT_EQ(big.exempt, "");
}

TEST(StoragePolicyTest, MinAgeKeepsYoungFilesAsIngested) {
  PolicyTable t =
      Table({P("/crawl", LayoutGoal::Ec(6, 3), 0, absl::Hours(24))});
  PolicyResolution young = ResolvePolicy(
      t, "/crawl/f", 5, kNow - absl::Hours(24) + absl::Seconds(1), kNow);
  EXPECT_EQ(young.goal, std::nullopt);
  EXPECT_THAT(young.exempt, HasSubstr("younger than min-age 24h"));
  EXPECT_EQ(GoalForFile(t, "/crawl/f", 5, kNow - absl::Hours(24), kNow),
            LayoutGoal::Ec(6, 3));
}

TEST(StoragePolicyTest, FromPoliciesRefusesDuplicatesAndBadPolicies) {
  EXPECT_THAT(PolicyTable::FromPolicies({P("/a", LayoutGoal::Replicas(2)),
                                         P("/a", LayoutGoal::Replicas(3))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("two storage policies for /a")));
  EXPECT_THAT(PolicyTable::FromPolicies({P("a/", LayoutGoal::Replicas(2))}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dir")));
  EXPECT_THAT(PolicyTable::FromPolicies({P("/a", LayoutGoal::Replicas(0))}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      PolicyTable::FromPolicies(
          {P("/a", LayoutGoal::Replicas(2), 0, absl::Seconds(-1))}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min-age")));
}

TEST(StoragePolicyTest, RecordRoundTrip) {
  StoragePolicy p = P("/crawl", LayoutGoal::Ec(6, 3), 4096, absl::Hours(2));
  StoragePolicy q = FromRecord("/crawl", ToRecord(p));
  EXPECT_EQ(q.dir, p.dir);
  EXPECT_EQ(q.goal, p.goal);
  EXPECT_EQ(q.min_size, p.min_size);
  EXPECT_EQ(q.min_age, p.min_age);
  EXPECT_EQ(q.set_time, p.set_time);
}

TEST(StoragePolicyTest, PutLoadDeleteSkippingBadRecords) {
  MemoryKv kv;
  Keys keys("c");
  ASSERT_THAT(PutPolicy(kv, keys, P("/crawl", LayoutGoal::Ec(6, 3))), IsOk());
  ASSERT_THAT(PutPolicy(kv, keys, P("/", LayoutGoal::Replicas(2))), IsOk());
  // A record no tool of ours would write: refused by the gate, skipped.
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(keys.Policy("/bad"));
  put->set_value("garbage\xff");
  ASSERT_THAT(kv.Txn(txn), IsOk());
  // A policy put again replaces the old one.
  ASSERT_THAT(PutPolicy(kv, keys, P("/crawl", LayoutGoal::Ec(4, 2))), IsOk());
  EXPECT_THAT(PutPolicy(kv, keys, P("/x", LayoutGoal::Replicas(99))),
              StatusIs(absl::StatusCode::kInvalidArgument));

  absl::StatusOr<PolicyTable> t = LoadPolicies(kv, keys);
  ASSERT_THAT(t, IsOk());
  ASSERT_THAT(t->policies(), SizeIs(2));
  EXPECT_EQ(t->policies()[0].dir, "/");
  EXPECT_EQ(t->policies()[1].dir, "/crawl");
  EXPECT_EQ(t->policies()[1].goal, LayoutGoal::Ec(4, 2));
  EXPECT_THAT(t->invalid(), ElementsAre(HasSubstr(keys.Policy("/bad"))));
  EXPECT_GT(t->revision(), 0);
  EXPECT_EQ(NearestDir(*t, "/bad/f"), "/");

  ASSERT_THAT(DeletePolicy(kv, keys, "/crawl"), IsOk());
  EXPECT_THAT(DeletePolicy(kv, keys, "/crawl"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no storage policy for /crawl")));
  t = LoadPolicies(kv, keys);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(NearestDir(*t, "/crawl/f"), "/");
  // Another cluster's policies are not ours.
  absl::StatusOr<PolicyTable> other = LoadPolicies(kv, Keys("c2"));
  ASSERT_THAT(other, IsOk());
  EXPECT_THAT(other->policies(), SizeIs(0));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
