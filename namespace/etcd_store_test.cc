// NamespaceStore against a real etcd: the shared behaviour suite, plus what
// only a real cluster shows (member loss mid-test, compaction, etcd down).
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/kv.h"
#include "namespace/store.h"
#include "namespace/store_test_suite.h"
#include "tests/testing/etcd_cluster.h"

namespace rangefs {
namespace ns {
namespace {

using ::rangefs::testing::EtcdCluster;
using ::testing::HasSubstr;

class EtcdStoreTest : public StoreTestSuite {
 protected:
  static int Members() { return 1; }
  void StartWith(int members) {
    auto etcd = EtcdCluster::Start({.members = members});
    ASSERT_THAT(etcd, IsOk());
    etcd_ = std::move(*etcd);
    // A write on a loaded machine may take seconds (etcd syncs to disk): a
    // timed-out write fails, its effect unknown, so the timeout is generous.
    auto client = etcd::EtcdClient::Open(
        {.endpoints = etcd_->endpoints(), .call_timeout = absl::Seconds(10)});
    ASSERT_THAT(client, IsOk());
    client_ = std::move(*client);
    kv_ = NewEtcdKv(client_.get());
    store_ = NewKvStore(kv_.get(), {.cluster = "it"});
  }
  void SetUp() override { StartWith(1); }
  void TearDown() override {
    store_.reset();
    kv_.reset();
    client_.reset();
    etcd_.reset();
  }
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<KvBackend> kv_;
};

RANGEFS_STORE_TESTS(EtcdStoreTest)

TEST_F(EtcdStoreTest, RevisionPinningThenCompaction) {
  AddNodes(2);
  auto a = store_->CreateFile("/p", OneExtent(10, {"n1"}));
  ASSERT_THAT(a, IsOk());
  auto b = store_->ReplaceLayout("/p", OneExtent(30, {"n2"}), a->mod_revision);
  ASSERT_THAT(b, IsOk());
  auto old = store_->GetFile("/p", a->mod_revision);
  ASSERT_THAT(old, IsOk());
  EXPECT_EQ(old->layout.size(), 10u);
  ASSERT_THAT(client_->Compact(b->mod_revision), IsOk());
  EXPECT_THAT(store_->GetFile("/p", a->mod_revision),
              StatusIs(absl::StatusCode::kOutOfRange,
                       HasSubstr("no longer available")));
  EXPECT_EQ(store_->GetFile("/p")->layout.size(), 30u);
}

// ForEachRangePage (kv.h) over a real etcd: pages at one revision, the
// keys of later writes and other prefixes left out.
TEST_F(EtcdStoreTest, ForEachRangePagePagesAtOneRevision) {
  int64_t rev = 0;
  for (int i = 0; i < 25; ++i) {
    auto r = client_->Put(absl::StrCat("/p/k", 100 + i), absl::StrCat("v", i));
    ASSERT_THAT(r, IsOk());
    rev = *r;
  }
  ASSERT_THAT(client_->Put("/q/outside", "x"), IsOk());
  for (int i = 25; i < 30; ++i) {
    ASSERT_THAT(client_->Put(absl::StrCat("/p/k", 100 + i), "later"), IsOk());
  }
  std::vector<KvEntry> all;
  std::vector<int64_t> revisions;
  auto keep = [&](std::vector<KvEntry>& page, int64_t at) {
    revisions.push_back(at);
    for (KvEntry& e : page) all.push_back(std::move(e));
    return absl::OkStatus();
  };
  auto at_rev =
      ForEachRangePage(*kv_, "/p/", PrefixRangeEnd("/p/"), rev, 7, keep);
  ASSERT_THAT(at_rev, IsOk());
  EXPECT_EQ(*at_rev, rev);
  EXPECT_THAT(revisions, ::testing::ElementsAre(rev, rev, rev, rev));
  ASSERT_EQ(all.size(), 25u);
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(all[i].key, absl::StrCat("/p/k", 100 + i));
    EXPECT_EQ(all[i].value, absl::StrCat("v", i));
  }
  all.clear();
  auto latest =
      ForEachRangePage(*kv_, "/p/", PrefixRangeEnd("/p/"), 0, 7, keep);
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(all.size(), 30u);
  EXPECT_GT(*latest, rev);
}

TEST_F(EtcdStoreTest, DeadEtcdGivesClearErrorNotHang) {
  AddNodes(1);
  ASSERT_THAT(etcd_->KillMember(0), IsOk());
  absl::Time start = absl::Now();
  auto r = store_->GetFile("/x");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status()) ||
              absl::IsDeadlineExceeded(r.status()))
      << r.status();
  EXPECT_THAT(store_->CreateFile("/x", OneExtent(1, {"n1"})),
              ::testing::Not(IsOk()));
  // Connections are refused at once (idle: milliseconds); 30 s only tells
  // a hang from a loaded machine.
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(30)) << "took " << absl::FormatDuration(took);
  ASSERT_THAT(etcd_->RestartMember(0), IsOk());
  // Recovers once etcd is back (polled: the client reconnects on its own
  // schedule).
  absl::Status s;
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  do {
    s = store_->CreateFile("/x", OneExtent(1, {"n1"})).status();
    if (s.ok()) break;
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < give_up);
  EXPECT_THAT(s, IsOk());
}

class EtcdStoreClusterTest : public EtcdStoreTest {
 protected:
  void SetUp() override { StartWith(3); }
};

TEST_F(EtcdStoreClusterTest, SurvivesMemberKillMidTest) {
  AddNodes(2);
  auto a = store_->CreateFile("/m/a", OneExtent(10, {"n1", "n2"}));
  ASSERT_THAT(a, IsOk());
  auto leader = etcd_->LeaderIndex();
  ASSERT_THAT(leader, IsOk());
  ASSERT_THAT(etcd_->KillMember(*leader), IsOk());
  // Every store operation keeps working through the surviving members
  // (after at most one election).
  // Polled until the election is over (idle ~1 s), for up to 60 s. A
  // create whose reply was lost may have happened: ALREADY_EXISTS then.
  absl::StatusOr<FileEntry> b;
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  do {
    b = store_->CreateFile("/m/b", OneExtent(5, {"n2"}));
    if (b.ok() || absl::IsAlreadyExists(b.status())) break;
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < give_up);
  ASSERT_TRUE(b.ok() || absl::IsAlreadyExists(b.status())) << b.status();
  auto got = store_->GetFile("/m/a");
  ASSERT_THAT(got, IsOk());
  ASSERT_THAT(
      store_->ReplaceLayout("/m/a", OneExtent(20, {"n1"}), got->mod_revision),
      IsOk());
  ASSERT_THAT(store_->RenameFile("/m/a", "/m/c", 0), IsOk());
  ASSERT_THAT(store_->SetNodeState("n1", v1::DRAINING), IsOk());
  auto list = store_->ListFiles({.dir = "/m"});
  ASSERT_THAT(list, IsOk());
  EXPECT_EQ(list->files.size(), 2u);
  ASSERT_THAT(store_->DeleteFile("/m/c", 0), IsOk());
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
