// LayoutCache against a real etcd (1 and 3 members): watch propagation,
// compaction during a watch, revision pinning, stale serving while every
// member is down, and recovery.
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/layout_cache.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"

namespace rangefs {
namespace ns {
namespace {

using ::rangefs::testing::EtcdCluster;
using ::testing::HasSubstr;

v1::FileLayout Layout(uint64_t size) {
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY);
  v1::Extent* e = l.add_extents();
  e->set_length(size);
  v1::Replica* r = e->add_replicas();
  r->set_node_id("n1");
  r->set_object("o");
  return l;
}

// Polls `cond` until it holds or `limit` passes. The bound only ends a wait
// that would never end: generous enough for a loaded machine.
template <typename F>
bool Eventually(F cond, absl::Duration limit = absl::Seconds(60)) {
  absl::Time deadline = absl::Now() + limit;
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return cond();
}

class LayoutCacheEtcdTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    auto etcd = EtcdCluster::Start({.members = GetParam()});
    ASSERT_THAT(etcd, IsOk());
    etcd_ = std::move(*etcd);
    // Separate clients for the writer (admin) and the reader (job).
    for (auto* c : {&admin_client_, &job_client_}) {
      auto client = etcd::EtcdClient::Open(
          {.endpoints = etcd_->endpoints(), .call_timeout = absl::Seconds(10)});
      ASSERT_THAT(client, IsOk());
      *c = std::move(*client);
    }
    admin_kv_ = NewEtcdKv(admin_client_.get());
    job_kv_ = NewEtcdKv(job_client_.get());
    store_ = NewKvStore(admin_kv_.get(), {.cluster = "c"});
    v1::NodeRecord n;
    n.set_id("n1");
    n.set_export_path("/e");
    ASSERT_THAT(store_->AddNode(n), IsOk());
    auto cache = LayoutCache::Open(
        job_kv_.get(), {.cluster = "c",
                        .max_staleness = absl::Seconds(60),
                        .maintenance_period = absl::Milliseconds(20)});
    ASSERT_THAT(cache, IsOk());
    cache_ = std::move(*cache);
  }
  void TearDown() override {
    cache_.reset();
    store_.reset();
    job_kv_.reset();
    admin_kv_.reset();
    job_client_.reset();
    admin_client_.reset();
    etcd_.reset();
  }
  // Replaces /a's layout (expected at `rev`) with Layout(size), retrying
  // while etcd elects or restarts. A replace whose reply was lost may have
  // happened all the same: then /a already holds the new layout, past `rev`.
  absl::StatusOr<FileEntry> ReplaceEventually(int64_t rev, uint64_t size) {
    absl::StatusOr<FileEntry> b = absl::UnknownError("not tried");
    Eventually([&] {
      b = store_->ReplaceLayout("/a", Layout(size), rev);
      if (b.ok()) return true;
      auto now = store_->GetFile("/a");
      if (now.ok() && now->mod_revision > rev && now->layout.size() == size) {
        b = *std::move(now);
        return true;
      }
      return false;
    });
    return b;
  }

  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> admin_client_, job_client_;
  std::unique_ptr<KvBackend> admin_kv_, job_kv_;
  std::unique_ptr<NamespaceStore> store_;
  std::unique_ptr<LayoutCache> cache_;
};

TEST_P(LayoutCacheEtcdTest, WatchPropagatesLayoutChanges) {
  auto a = store_->CreateFile("/a", Layout(10));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(cache_->Lookup("/a"), IsOk());
  auto b = store_->ReplaceLayout("/a", Layout(20), a->mod_revision);
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(cache_->WaitForRevision(b->mod_revision, absl::Seconds(60)),
              IsOk());
  EXPECT_EQ((*cache_->Lookup("/a"))->header.size(), 20u);
  EXPECT_EQ(cache_->stats().cold_lookups, 1u);
  ASSERT_THAT(store_->DeleteFile("/a", 0), IsOk());
  ASSERT_TRUE(Eventually([&] { return cache_->stats().invalidations == 1; }));
  EXPECT_THAT(cache_->Lookup("/a"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(LayoutCacheEtcdTest, CompactionDuringWatchAndPinning) {
  auto a = store_->CreateFile("/a", Layout(10));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(cache_->Lookup("/a"), IsOk());
  auto b = store_->ReplaceLayout("/a", Layout(20), a->mod_revision);
  ASSERT_THAT(b, IsOk());
  // Pinned at the first revision: the exact old layout.
  auto pinned = cache_->LookupAt("/a", a->mod_revision);
  ASSERT_THAT(pinned, IsOk());
  EXPECT_EQ((*pinned)->header.size(), 10u);
  ASSERT_THAT(admin_client_->Compact(b->mod_revision), IsOk());
  // The live watch survives the compaction and keeps propagating.
  auto c = store_->ReplaceLayout("/a", Layout(30), b->mod_revision);
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(cache_->WaitForRevision(c->mod_revision, absl::Seconds(60)),
              IsOk());
  EXPECT_EQ((*cache_->Lookup("/a"))->header.size(), 30u);
  // A new pin below the compaction point is refused clearly.
  EXPECT_THAT(cache_->LookupAt("/a", a->mod_revision - 1),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("compacted")));
}

TEST_P(LayoutCacheEtcdTest, StaleServeWhileAllMembersDownThenRecovery) {
  auto a = store_->CreateFile("/a", Layout(10));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(cache_->Lookup("/a"), IsOk());
  for (int i = 0; i < etcd_->size(); ++i) {
    ASSERT_THAT(etcd_->KillMember(i), IsOk());
  }
  ASSERT_TRUE(Eventually([&] { return !cache_->stats().watch_connected; }));
  auto stale = cache_->Lookup("/a");
  ASSERT_THAT(stale, IsOk());
  EXPECT_EQ((*stale)->header.size(), 10u);
  EXPECT_GE(cache_->stats().stale_serves, 1u);
  absl::Time t0 = absl::Now();
  EXPECT_THAT(cache_->Lookup("/cold"), ::testing::Not(IsOk()));
  // No hang: connections are refused at once (idle: milliseconds).
  const absl::Duration took = absl::Now() - t0;
  EXPECT_LT(took, absl::Seconds(30)) << "took " << absl::FormatDuration(took);
  ASSERT_THAT(etcd_->RestartAll(), IsOk());
  // The watch resumes; a change made after recovery reaches the cache.
  absl::StatusOr<FileEntry> b = ReplaceEventually(a->mod_revision, 40);
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(cache_->WaitForRevision(b->mod_revision, absl::Seconds(60)),
              IsOk());
  EXPECT_EQ((*cache_->Lookup("/a"))->header.size(), 40u);
  EXPECT_TRUE(Eventually([&] { return cache_->stats().watch_connected; }));
}

TEST_P(LayoutCacheEtcdTest, MemberKilledMidWatch) {
  if (GetParam() < 3) GTEST_SKIP() << "needs 3 members";
  auto a = store_->CreateFile("/a", Layout(10));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(cache_->Lookup("/a"), IsOk());
  int64_t rev = a->mod_revision;
  for (int victim = 0; victim < 2; ++victim) {
    ASSERT_THAT(etcd_->KillMember(victim), IsOk());
    absl::StatusOr<FileEntry> b = ReplaceEventually(rev, 100 + victim);
    ASSERT_THAT(b, IsOk());
    rev = b->mod_revision;
    ASSERT_THAT(cache_->WaitForRevision(rev, absl::Seconds(60)), IsOk());
    EXPECT_EQ((*cache_->Lookup("/a"))->header.size(), 100u + victim);
    ASSERT_THAT(etcd_->RestartMember(victim), IsOk());
  }
}

INSTANTIATE_TEST_SUITE_P(Members, LayoutCacheEtcdTest, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::to_string(i.param) + "member";
                         });

}  // namespace
}  // namespace ns
}  // namespace rangefs
