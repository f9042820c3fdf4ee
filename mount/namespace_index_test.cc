// NamespaceIndex over MemoryKv, fed by a LayoutCache's watch (watch
// callbacks run synchronously on the writing thread, so every change is
// applied when the write returns).
#include "mount/namespace_index.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/keys.h"
#include "namespace/layout_cache.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"

namespace rangefs {
namespace mount {
namespace {

namespace v1 = ::rangefs::v1;
using Kind = IndexChange::Kind;
using ::testing::ElementsAre;
using ::testing::Pair;

class NamespaceIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = ns::NewKvStore(&kv_);
    for (const char* id : {"n0", "n1"}) {
      v1::NodeRecord r;
      r.set_id(id);
      r.add_addresses("127.0.0.1:1");
      r.set_export_path("/export");
      ASSERT_THAT(store_->AddNode(r), IsOk());
    }
    auto cache = ns::LayoutCache::Open(&kv_, {});
    ASSERT_THAT(cache, IsOk());
    cache_ = *std::move(cache);
  }

  // One extent on n0 with `crc` (or none), or a 2-column striped layout.
  static v1::FileLayout Layout(uint64_t size, bool has_crc, uint32_t crc,
                               bool striped = false,
                               v1::FileState state = v1::READY) {
    v1::FileLayout l;
    l.set_size(size);
    l.set_state(state);
    if (striped) {
      l.mutable_striped()->set_stripe_unit(1 << 20);
      for (const char* n : {"n0", "n1"}) {
        auto* r = l.mutable_striped()->add_targets()->add_replicas();
        r->set_node_id(n);
        r->set_object(absl::StrCat("o/", n, "/", crc));
      }
      return l;
    }
    if (size == 0) return l;
    v1::Extent* e = l.add_extents();
    e->set_length(size);
    e->set_has_crc32c(has_crc);
    e->set_crc32c(crc);
    v1::Replica* r = e->add_replicas();
    r->set_node_id("n0");
    r->set_object(absl::StrCat("o/", crc));
    return l;
  }

  void Create(const std::string& path, uint64_t size = 10) {
    ASSERT_THAT(store_->CreateFile(path, Layout(size, true, 7)), IsOk());
  }

  std::unique_ptr<NamespaceIndex> Open(NamespaceIndexOptions o = {}) {
    auto index = NamespaceIndex::Open(
        &kv_, cache_.get(), o, [this](absl::Span<const IndexChange> c) {
          changes_.insert(changes_.end(), c.begin(), c.end());
        });
    EXPECT_THAT(index, IsOk());
    return index.ok() ? *std::move(index) : nullptr;
  }

  std::vector<std::pair<std::string, EntryKind>> Names(NamespaceIndex& index,
                                                       const std::string& dir) {
    std::vector<std::pair<std::string, EntryKind>> out;
    auto list = index.List(dir);
    EXPECT_THAT(list, IsOk());
    if (!list.ok()) return out;
    for (const DirEntry& e : *list) out.emplace_back(e.name, e.kind);
    return out;
  }

  std::vector<std::pair<std::string, Kind>> TakeChanges() {
    std::vector<std::pair<std::string, Kind>> out;
    for (const IndexChange& c : changes_) out.emplace_back(c.path, c.kind);
    changes_.clear();
    return out;
  }

  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::unique_ptr<ns::LayoutCache> cache_;
  std::vector<IndexChange> changes_;
};

TEST_F(NamespaceIndexTest, DirectoriesAreImpliedByPaths) {
  Create("/a/b/c");
  Create("/a/d", 123);
  Create("/e");
  auto index = Open();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->Find("/").kind, EntryKind::kDir);
  EXPECT_EQ(index->Find("/a").kind, EntryKind::kDir);
  EXPECT_EQ(index->Find("/a/b").kind, EntryKind::kDir);
  IndexEntry d = index->Find("/a/d");
  EXPECT_EQ(d.kind, EntryKind::kFile);
  EXPECT_EQ(d.meta.size, 123u);
  EXPECT_EQ(d.meta.generation, 1u);
  EXPECT_EQ(d.meta.content.content_generation, 1u);
  EXPECT_EQ(d.meta.content.file_id, d.meta.file_id);
  EXPECT_EQ(index->Find("/a/x").kind, EntryKind::kNone);
  EXPECT_EQ(index->Find("/a/b/c/d").kind, EntryKind::kNone);
  EXPECT_THAT(Names(*index, "/"), ElementsAre(Pair("a", EntryKind::kDir),
                                              Pair("e", EntryKind::kFile)));
  EXPECT_THAT(Names(*index, "/a"), ElementsAre(Pair("b", EntryKind::kDir),
                                               Pair("d", EntryKind::kFile)));
  EXPECT_THAT(index->List("/e"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(index->List("/nope"), StatusIs(absl::StatusCode::kNotFound));
  NamespaceIndexStats s = index->stats();
  EXPECT_EQ(s.files, 3u);
  EXPECT_EQ(s.total_bytes, 10u + 123u + 10u);
  EXPECT_TRUE(s.watch_connected);
}

TEST_F(NamespaceIndexTest, SubtreeIsTheRoot) {
  Create("/a/b/c");
  Create("/a/d");
  Create("/ab");  // same prefix, outside /a
  NamespaceIndexOptions o;
  o.dir = "/a";
  auto index = Open(o);
  ASSERT_NE(index, nullptr);
  EXPECT_THAT(Names(*index, "/"), ElementsAre(Pair("b", EntryKind::kDir),
                                              Pair("d", EntryKind::kFile)));
  EXPECT_EQ(index->Find("/b/c").kind, EntryKind::kFile);
  EXPECT_EQ(index->NamespacePath("/b/c"), "/a/b/c");
  EXPECT_EQ(index->NamespacePath("/"), "/a");
  Create("/ab2");
  EXPECT_TRUE(TakeChanges().empty());
  Create("/a/new/f");
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/new", Kind::kDirAdded),
                                         Pair("/new/f", Kind::kFileAdded)));
}

TEST_F(NamespaceIndexTest, WatchReportsAddsAndRemovesWithTheirDirectories) {
  Create("/keep/f");
  auto index = Open();
  ASSERT_NE(index, nullptr);
  Create("/x/y/z");
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/x/y", Kind::kDirAdded),
                                         Pair("/x", Kind::kDirAdded),
                                         Pair("/x/y/z", Kind::kFileAdded)));
  EXPECT_EQ(index->Find("/x/y/z").kind, EntryKind::kFile);
  Create("/keep/g");
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/keep/g", Kind::kFileAdded)));
  const uint64_t epoch = index->epoch();
  ASSERT_THAT(store_->DeleteFile("/x/y/z", 0), IsOk());
  EXPECT_GT(index->epoch(), epoch);
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/x/y/z", Kind::kFileRemoved),
                                         Pair("/x/y", Kind::kDirRemoved),
                                         Pair("/x", Kind::kDirRemoved)));
  EXPECT_EQ(index->Find("/x").kind, EntryKind::kNone);
  ASSERT_THAT(store_->DeleteFile("/keep/g", 0), IsOk());
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/keep/g", Kind::kFileRemoved)));
  ASSERT_THAT(store_->RenameFile("/keep/f", "/moved", 0), IsOk());
  EXPECT_EQ(index->Find("/moved").kind, EntryKind::kFile);
  EXPECT_EQ(index->Find("/keep").kind, EntryKind::kNone);
}

TEST_F(NamespaceIndexTest, ALayoutChangeKeepsTheBytesAnOverwriteDoesNot) {
  ASSERT_THAT(store_->CreateFile("/f", Layout(100, true, 7)), IsOk());
  ASSERT_THAT(store_->CreateFile("/s", Layout(100, false, 0, true)), IsOk());
  auto index = Open();
  ASSERT_NE(index, nullptr);
  // Replicas moved (the keeper's ReplaceLayout): the same bytes.
  auto f = store_->GetFile("/f");
  ASSERT_THAT(f, IsOk());
  v1::FileLayout moved = Layout(100, true, 7);
  moved.mutable_extents(0)->mutable_replicas(0)->set_node_id("n1");
  ASSERT_THAT(store_->ReplaceLayout("/f", moved, f->mod_revision), IsOk());
  IndexEntry e = index->Find("/f");
  EXPECT_EQ(e.meta.generation, 2u);
  EXPECT_EQ(e.meta.content.content_generation, 1u);
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/f", Kind::kFileChanged)));
  // A different CRC: new content, whatever the writer said.
  f = store_->GetFile("/f");
  ASSERT_THAT(
      store_->ReplaceLayout("/f", Layout(100, true, 8), f->mod_revision),
      IsOk());
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/f", Kind::kFileReplaced)));
  // Striped layouts carry no CRCs: a column moved to another node is the
  // same bytes (it used to end every open handle with ESTALE) ...
  auto s = store_->GetFile("/s");
  ASSERT_THAT(s, IsOk());
  v1::FileLayout column_moved = Layout(100, false, 0, true);
  column_moved.mutable_striped()
      ->mutable_targets(0)
      ->mutable_replicas(0)
      ->set_node_id("n1");
  ASSERT_THAT(store_->ReplaceLayout("/s", column_moved, s->mod_revision),
              IsOk());
  EXPECT_EQ(index->Find("/s").meta.content.content_generation, 1u);
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/s", Kind::kFileChanged)));
  // ... and an overwrite of the same size is new bytes.
  s = store_->GetFile("/s");
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(
      store_->OverwriteFile("/s", Layout(100, false, 0, true), s->mod_revision),
      IsOk());
  EXPECT_EQ(index->Find("/s").meta.content.content_generation, 3u);
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/s", Kind::kFileReplaced)));
}

TEST_F(NamespaceIndexTest, SharesTheLayoutCachesWatch) {
  Create("/a");
  auto index = Open();
  ASSERT_NE(index, nullptr);
  auto second = Open();
  ASSERT_NE(second, nullptr);
  // Two indexes and the cache: one watch of the namespace in the process.
  EXPECT_EQ(kv_.open_watches(), 1);
  EXPECT_EQ(cache_->open_watches(), 1);
  Create("/b");
  EXPECT_EQ(index->Find("/b").kind, EntryKind::kFile);
  EXPECT_EQ(second->Find("/b").kind, EntryKind::kFile);
}

TEST_F(NamespaceIndexTest, ImportingFilesAppearWhenReady) {
  ASSERT_THAT(
      store_->CreateFile("/imp", Layout(10, true, 1, false, v1::IMPORTING)),
      IsOk());
  auto index = Open();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->Find("/imp").kind, EntryKind::kNone);
  EXPECT_THAT(Names(*index, "/"), ::testing::IsEmpty());
  auto f = store_->GetFile("/imp");
  ASSERT_THAT(f, IsOk());
  ASSERT_THAT(
      store_->ReplaceLayout("/imp", Layout(10, true, 1), f->mod_revision),
      IsOk());
  EXPECT_EQ(index->Find("/imp").kind, EntryKind::kFile);
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/imp", Kind::kFileAdded)));
}

TEST_F(NamespaceIndexTest, BadRecordsShowAsInvalidFilesBadKeysAreSkipped) {
  Create("/good");
  ns::Keys keys;
  etcdserverpb::TxnRequest txn;
  auto put = [&](const std::string& key, const std::string& value) {
    auto* p = txn.add_success()->mutable_request_put();
    p->set_key(key);
    p->set_value(value);
  };
  put(keys.File("/garbage"), "\xff\xff not a layout");
  put(keys.FilesRoot() + "/a//b", Layout(1, true, 1).SerializeAsString());
  put(keys.FilesRoot() + "/ctl\x01", Layout(1, true, 1).SerializeAsString());
  ASSERT_THAT(kv_.Txn(txn), IsOk());
  auto index = Open();
  ASSERT_NE(index, nullptr);
  IndexEntry g = index->Find("/garbage");
  EXPECT_EQ(g.kind, EntryKind::kFile);
  EXPECT_THAT(g.meta.invalid, ::testing::HasSubstr(keys.File("/garbage")));
  EXPECT_EQ(index->Find("/good").kind, EntryKind::kFile);
  EXPECT_EQ(index->Find("/a").kind, EntryKind::kNone);
  EXPECT_EQ(index->stats().skipped_keys, 2u);
  EXPECT_THAT(Names(*index, "/"), ElementsAre(Pair("garbage", EntryKind::kFile),
                                              Pair("good", EntryKind::kFile)));
}

TEST_F(NamespaceIndexTest, AFileThatIsAlsoADirectoryShowsInsideIt) {
  // The store refuses a file below a file; an older version or a hand
  // wrote one straight into etcd.
  Create("/a");
  etcdserverpb::TxnRequest txn;
  auto* p = txn.add_success()->mutable_request_put();
  p->set_key(ns::Keys().File("/a/b"));
  p->set_value(Layout(10, true, 7).SerializeAsString());
  ASSERT_THAT(kv_.Txn(txn), IsOk());
  auto index = Open();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->Find("/a").kind, EntryKind::kDir);
  EXPECT_THAT(Names(*index, "/"), ElementsAre(Pair("a", EntryKind::kDir)));
  // Both sides show: the file's bytes inside the directory.
  EXPECT_THAT(Names(*index, "/a"),
              ElementsAre(Pair(".rangefs-file", EntryKind::kFile),
                          Pair("b", EntryKind::kFile)));
  IndexEntry shadowed = index->Find("/a/.rangefs-file");
  EXPECT_EQ(shadowed.kind, EntryKind::kFile);
  EXPECT_EQ(shadowed.meta.size, 10u);
  EXPECT_EQ(index->FilePath("/a/.rangefs-file"), "/a");
  EXPECT_EQ(index->FilePath("/a/b"), "/a/b");
  EXPECT_EQ(index->Find("/a/b/.rangefs-file").kind, EntryKind::kNone);
  ASSERT_THAT(store_->DeleteFile("/a/b", 0), IsOk());
  EXPECT_EQ(index->Find("/a").kind, EntryKind::kFile);
  EXPECT_EQ(index->Find("/a/.rangefs-file").kind, EntryKind::kNone);
  EXPECT_EQ(index->FilePath("/a/.rangefs-file"), "/a/.rangefs-file");
}

TEST_F(NamespaceIndexTest, PinnedRevisionNeverChanges) {
  Create("/old");
  auto rev = store_->CurrentRevision();
  ASSERT_THAT(rev, IsOk());
  Create("/new");
  ASSERT_THAT(store_->DeleteFile("/old", 0), IsOk());
  NamespaceIndexOptions o;
  o.revision = *rev;
  auto index = Open(o);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->Find("/old").kind, EntryKind::kFile);
  EXPECT_EQ(index->Find("/new").kind, EntryKind::kNone);
  Create("/newer");
  EXPECT_TRUE(TakeChanges().empty());
  EXPECT_EQ(index->Find("/newer").kind, EntryKind::kNone);
  EXPECT_TRUE(index->stats().pinned);
  ASSERT_THAT(kv_.Compact(kv_.revision()), IsOk());
  EXPECT_THAT(NamespaceIndex::Open(&kv_, nullptr, o),
              StatusIs(absl::StatusCode::kOutOfRange));
}

TEST_F(NamespaceIndexTest, CompactionRelistsAndReportsTheDifference) {
  Create("/a");
  Create("/b");
  auto index = Open();
  ASSERT_NE(index, nullptr);
  kv_.CancelWatchesCompacted();
  // Polled: the relist runs on the watch's thread. The bound is a safety
  // net (it takes milliseconds).
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (index->stats().relists == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(index->stats().relists, 1u);
  EXPECT_TRUE(TakeChanges().empty());  // nothing changed meanwhile
  Create("/c");                        // seen by the new watch
  EXPECT_EQ(index->Find("/c").kind, EntryKind::kFile);
  EXPECT_THAT(TakeChanges(), ElementsAre(Pair("/c", Kind::kFileAdded)));
}

TEST_F(NamespaceIndexTest, ServesTheLastTreeWhileEtcdIsDown) {
  Create("/a/f");
  auto index = Open();
  ASSERT_NE(index, nullptr);
  kv_.SetAvailable(false);
  EXPECT_EQ(index->Find("/a/f").kind, EntryKind::kFile);
  EXPECT_THAT(Names(*index, "/a"), ElementsAre(Pair("f", EntryKind::kFile)));
  EXPECT_THAT(NamespaceIndex::Open(&kv_, cache_.get(), {}),
              StatusIs(absl::StatusCode::kUnavailable));
  kv_.SetAvailable(true);
}

TEST_F(NamespaceIndexTest, WaitForRevision) {
  auto index = Open();
  ASSERT_NE(index, nullptr);
  Create("/a");
  auto rev = store_->CurrentRevision();
  ASSERT_THAT(rev, IsOk());
  // Applied when the write returned; the bound is a safety net.
  EXPECT_THAT(index->WaitForRevision(*rev, absl::Seconds(60)), IsOk());
  EXPECT_THAT(index->WaitForRevision(*rev + 100, absl::Milliseconds(20)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(NamespaceIndexTest, RejectsBadOptions) {
  NamespaceIndexOptions o;
  o.dir = "relative";
  EXPECT_THAT(NamespaceIndex::Open(&kv_, cache_.get(), o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  o.dir = "/";
  o.revision = -1;
  EXPECT_THAT(NamespaceIndex::Open(&kv_, cache_.get(), o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  o.revision = 0;  // a live index follows the cache's watch
  EXPECT_THAT(NamespaceIndex::Open(&kv_, nullptr, o),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
