// LayoutCache over MemoryKv: deterministic unit tests of the cache rules.
// The same behaviours against a real etcd: layout_cache_etcd_test.cc.
#include "namespace/layout_cache.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/cached_layout.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"

namespace rangefs {
namespace ns {
namespace {

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

// Polls `cond` for up to 30 s: the bound only ends a wait that would never
// end, so it holds on a loaded machine.
template <typename F>
bool Eventually(F cond) {
  absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return cond();
}

class LayoutCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = NewKvStore(&kv_, {.cluster = "c", .clock = &clock_});
    v1::NodeRecord n;
    n.set_id("n1");
    n.set_export_path("/e");
    ASSERT_THAT(store_->AddNode(n), IsOk());
    auto cache =
        LayoutCache::Open(&kv_, {.cluster = "c",
                                 .max_staleness = absl::Seconds(30),
                                 .maintenance_period = absl::Milliseconds(5),
                                 .clock = &clock_});
    ASSERT_THAT(cache, IsOk());
    cache_ = std::move(*cache);
  }
  MemoryKv kv_;
  FakeClock clock_;
  std::unique_ptr<NamespaceStore> store_;
  std::unique_ptr<LayoutCache> cache_;
};

TEST_F(LayoutCacheTest, ListKeepsWhatItListsAndTheWatchKeepsItCurrent) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(store_->CreateFile(absl::StrCat("/d/f", i), Layout(10 + i)),
                IsOk());
  }
  ASSERT_THAT(store_->CreateFile("/e/x", Layout(1)), IsOk());
  etcdserverpb::TxnRequest poison;  // a record that fails the gate
  auto* put = poison.add_success()->mutable_request_put();
  put->set_key("/rangefs/v1/c/files/d/bad");
  put->set_value("\x08\xff junk");
  ASSERT_THAT(kv_.Txn(poison), IsOk());
  auto listed = cache_->List("/d");
  ASSERT_THAT(listed, IsOk());
  ASSERT_EQ(listed->size(), 6u);
  EXPECT_EQ((*listed)[0].path, "/d/bad");
  EXPECT_THAT((*listed)[0].invalid, HasSubstr("/rangefs/v1/c/files/d/bad"));
  EXPECT_EQ((*listed)[1].layout.size(), 10u);
  LayoutCacheStats s = cache_->stats();
  EXPECT_EQ(s.listed, 5u);  // the valid ones
  EXPECT_EQ(s.entries, 5u);
  for (int i = 0; i < 5; ++i) {
    auto l = cache_->Lookup(absl::StrCat("/d/f", i));
    ASSERT_THAT(l, IsOk());
    EXPECT_EQ((*l)->header.size(), 10u + i);
  }
  s = cache_->stats();
  EXPECT_EQ(s.cold_lookups, 0u);
  EXPECT_EQ(s.hits, 5u);
  // A change after the listing reaches the kept entry through the watch.
  auto cur = store_->GetFile("/d/f2");
  ASSERT_THAT(cur, IsOk());
  auto r = store_->ReplaceLayout("/d/f2", Layout(99), cur->mod_revision);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(cache_->WaitForRevision(r->mod_revision, absl::Seconds(30)),
              IsOk());
  auto f2 = cache_->Lookup("/d/f2");
  ASSERT_THAT(f2, IsOk());
  EXPECT_EQ((*f2)->header.size(), 99u);
  EXPECT_EQ(cache_->stats().cold_lookups, 0u);
}

TEST_F(LayoutCacheTest, IndexedLayoutsMapReadsAndStayHot) {
  // 500 extents of 1000 bytes, object per extent.
  v1::FileLayout big;
  big.set_size(500 * 1000);
  big.set_state(v1::READY);
  for (int i = 0; i < 500; ++i) {
    v1::Extent* e = big.add_extents();
    e->set_offset(i * 1000);
    e->set_length(1000);
    v1::Replica* r = e->add_replicas();
    r->set_node_id("n1");
    r->set_object(absl::StrCat("o", i));
  }
  ASSERT_THAT(store_->CreateFile("/big", big), IsOk());
  ASSERT_THAT(cache_->Preload("/"), IsOk());
  auto l = cache_->Lookup("/big");
  ASSERT_THAT(l, IsOk());
  EXPECT_EQ((*l)->header.extents_size(), 0);
  EXPECT_EQ((*l)->index.size(), 500u);
  absl::StatusOr<MappedRange> m = MapRange(**l, 123456, 2000, 0);
  ASSERT_THAT(m, IsOk());
  ASSERT_EQ(m->pieces.size(), 3u);  // extents 123, 124, 125
  EXPECT_EQ(m->pieces[0].unit, 123u);
  EXPECT_EQ(m->pieces[0].object_delta, 456u);
  EXPECT_EQ(m->pieces[0].replicas->Get(0).object(), "o123");
  EXPECT_EQ(m->pieces[2].length, 456u);
  EXPECT_EQ(m->pieces[2].replicas->Get(0).object(), "o125");
  // Decoded once: later lookups share it (hot), even after `l` is dropped.
  const CachedLayout* first = l->get();
  l = absl::InternalError("dropped");
  for (int i = 0; i < 10; ++i) {
    auto again = cache_->Lookup("/big");
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(again->get(), first);
  }
  EXPECT_EQ(cache_->stats().parses, 1u);
}

TEST_F(LayoutCacheTest, ListKeepsAtMostMaxEntries) {
  auto small = LayoutCache::Open(&kv_, {.cluster = "c", .max_entries = 3});
  ASSERT_THAT(small, IsOk());
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(store_->CreateFile(absl::StrCat("/m/f", i), Layout(1)), IsOk());
  }
  auto listed = (*small)->List("/m");
  ASSERT_THAT(listed, IsOk());
  EXPECT_EQ(listed->size(), 5u);  // listed all the same
  LayoutCacheStats s = (*small)->stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.listed, 3u);
  EXPECT_EQ(s.listed_skipped, 2u);
}

TEST_F(LayoutCacheTest, ColdLookupThenHit) {
  ASSERT_THAT(store_->CreateFile("/a", Layout(10)), IsOk());
  auto a = cache_->Lookup("/a");
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->header.size(), 10u);
  auto again = cache_->Lookup("/a");
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(a->get(), again->get());  // Same immutable snapshot.
  LayoutCacheStats s = cache_->stats();
  EXPECT_EQ(s.cold_lookups, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_THAT(cache_->Lookup("/missing"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(cache_->Lookup("bad"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(LayoutCacheTest, WatchReplacesAndDropsEntries) {
  auto created = store_->CreateFile("/a", Layout(10));
  ASSERT_THAT(created, IsOk());
  auto old = cache_->Lookup("/a");
  ASSERT_THAT(old, IsOk());
  auto replaced =
      store_->ReplaceLayout("/a", Layout(20), created->mod_revision);
  ASSERT_THAT(replaced, IsOk());
  ASSERT_THAT(
      cache_->WaitForRevision(replaced->mod_revision, absl::Seconds(30)),
      IsOk());
  auto now = cache_->Lookup("/a");
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ((*now)->header.size(), 20u);
  EXPECT_EQ((*old)->header.size(), 10u);  // Old snapshot unchanged.
  EXPECT_EQ(cache_->stats().cold_lookups, 1u);
  ASSERT_THAT(store_->DeleteFile("/a", 0), IsOk());
  ASSERT_TRUE(Eventually([&] { return cache_->stats().invalidations == 1; }));
  EXPECT_THAT(cache_->Lookup("/a"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(LayoutCacheTest, ConcurrentColdLookupsShareOneRead) {
  ASSERT_THAT(store_->CreateFile("/a", Layout(10)), IsOk());
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] { EXPECT_THAT(cache_->Lookup("/a"), IsOk()); });
  }
  for (auto& t : threads) t.join();
  LayoutCacheStats s = cache_->stats();
  EXPECT_EQ(s.cold_lookups + s.shared_lookups + s.hits, 8u);
  EXPECT_GE(s.cold_lookups, 1u);
  // Whatever the interleaving, every later lookup is a hit.
  ASSERT_THAT(cache_->Lookup("/a"), IsOk());
  EXPECT_EQ(cache_->stats().cold_lookups, s.cold_lookups);
}

TEST_F(LayoutCacheTest, ServesStaleWithinBoundWhileStoreIsDown) {
  ASSERT_THAT(store_->CreateFile("/a", Layout(10)), IsOk());
  ASSERT_THAT(cache_->Lookup("/a"), IsOk());
  kv_.SetAvailable(false);
  ASSERT_TRUE(Eventually([&] { return !cache_->stats().watch_connected; }));
  EXPECT_THAT(cache_->Lookup("/a"), IsOk());
  EXPECT_EQ(cache_->stats().stale_serves, 1u);
  EXPECT_THAT(cache_->Lookup("/cold"),
              StatusIs(absl::StatusCode::kUnavailable));
  clock_.Advance(absl::Seconds(31));
  EXPECT_THAT(cache_->Lookup("/a"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("stale")));
  EXPECT_EQ(cache_->stats().stale_rejections, 1u);
  kv_.SetAvailable(true);
  ASSERT_TRUE(Eventually([&] { return cache_->stats().watch_connected; }));
  EXPECT_THAT(cache_->Lookup("/a"), IsOk());
}

TEST_F(LayoutCacheTest, CompactionCancelTriggersRelist) {
  auto a = store_->CreateFile("/a", Layout(10));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(store_->CreateFile("/b", Layout(5)), IsOk());
  ASSERT_THAT(cache_->Lookup("/a"), IsOk());
  ASSERT_THAT(cache_->Lookup("/b"), IsOk());
  // Changes the cache never sees as events, then the watch is cancelled.
  kv_.CancelWatchesCompacted();
  auto r = store_->ReplaceLayout("/a", Layout(99), a->mod_revision);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(store_->DeleteFile("/b", 0), IsOk());
  ASSERT_TRUE(Eventually([&] { return cache_->stats().relists >= 1; }));
  auto now = cache_->Lookup("/a");
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ((*now)->header.size(), 99u);
  EXPECT_THAT(cache_->Lookup("/b"), StatusIs(absl::StatusCode::kNotFound));
  // And the new watch works.
  auto r2 = store_->ReplaceLayout("/a", Layout(7), r->mod_revision);
  ASSERT_THAT(r2, IsOk());
  ASSERT_THAT(cache_->WaitForRevision(r2->mod_revision, absl::Seconds(30)),
              IsOk());
  EXPECT_EQ((*cache_->Lookup("/a"))->header.size(), 7u);
}

TEST_F(LayoutCacheTest, SubscribersShareTheWatchAndHearOfLostEventsLast) {
  ASSERT_THAT(store_->CreateFile("/d/a", Layout(10)), IsOk());
  std::vector<std::string> events;
  absl::Mutex mu;
  int64_t lost_at = 0;
  auto sub = cache_->Subscribe([&](const KvWatchUpdate& u) {
    absl::MutexLock l(&mu);
    if (u.compacted) {
      lost_at = u.compact_revision;
      return;
    }
    for (const KvEvent& e : u.events) events.push_back(e.kv.key);
  });
  EXPECT_EQ(kv_.open_watches(), 1);  // the cache's; no second watch
  ASSERT_THAT(store_->CreateFile("/d/b", Layout(5)), IsOk());
  {
    absl::MutexLock l(&mu);
    EXPECT_THAT(events, ::testing::ElementsAre(Keys("c").File("/d/b")));
  }
  // Scan: one paged read, every record, at one revision.
  std::vector<std::string> scanned;
  auto rev = cache_->Scan("/d", /*keep=*/true,
                          [&](const std::vector<KvEntry>& page, int64_t) {
                            for (const KvEntry& e : page) {
                              scanned.push_back(e.key);
                            }
                          });
  ASSERT_THAT(rev, IsOk());
  EXPECT_EQ(*rev, kv_.revision());
  EXPECT_EQ(scanned.size(), 2u);
  EXPECT_EQ(cache_->stats().listed, 2u);
  // A compaction reaches the subscriber once the cache watches again.
  kv_.CancelWatchesCompacted();
  ASSERT_TRUE(Eventually([&] {
    absl::MutexLock l(&mu);
    return lost_at > 0;
  }));
  EXPECT_EQ(cache_->open_watches(), 1);
  EXPECT_EQ(kv_.open_watches(), 1);
  ASSERT_THAT(store_->CreateFile("/d/c", Layout(5)), IsOk());
  {
    absl::MutexLock l(&mu);
    EXPECT_EQ(events.back(), Keys("c").File("/d/c"));
  }
  sub.reset();
  ASSERT_THAT(store_->CreateFile("/d/e", Layout(5)), IsOk());
  absl::MutexLock l(&mu);
  EXPECT_EQ(events.back(), Keys("c").File("/d/c"));
}

TEST_F(LayoutCacheTest, PinnedLookupsAreExactThenOutOfRange) {
  auto a = store_->CreateFile("/a", Layout(10));
  ASSERT_THAT(a, IsOk());
  auto b = store_->ReplaceLayout("/a", Layout(20), a->mod_revision);
  ASSERT_THAT(b, IsOk());
  auto pinned = cache_->LookupAt("/a", a->mod_revision);
  ASSERT_THAT(pinned, IsOk());
  EXPECT_EQ((*pinned)->header.size(), 10u);
  EXPECT_THAT(cache_->LookupAt("/a", a->mod_revision - 1),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_THAT(kv_.Compact(b->mod_revision), IsOk());
  EXPECT_THAT(cache_->LookupAt("/a", a->mod_revision - 1),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("compacted")));
}

TEST_F(LayoutCacheTest, PreloadFillsCache) {
  for (int i = 0; i < 30; ++i) {
    ASSERT_THAT(store_->CreateFile("/d/" + std::to_string(i), Layout(i + 1)),
                IsOk());
  }
  auto n = cache_->Preload("/d");
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, 30u);
  ASSERT_THAT(cache_->Lookup("/d/7"), IsOk());
  EXPECT_EQ(cache_->stats().cold_lookups, 0u);
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
