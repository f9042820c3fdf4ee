// LoadSubtree over MemoryKv: paging at one revision, the record gate per
// record, sorted lookups (Find, Below).
#include "namespace/subtree_snapshot.h"

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

class SubtreeSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = NewKvStore(&kv_, {.cluster = "c"});
    v1::NodeRecord n;
    n.set_id("n1");
    n.set_export_path("/e");
    ASSERT_THAT(store_->AddNode(n), IsOk());
    for (const char* p : {"/a/x", "/a/y", "/a/sub/z", "/a.b", "/ab/w", "/b"}) {
      ASSERT_THAT(store_->CreateFile(p, Layout(10)), IsOk());
    }
  }
  MemoryKv kv_;
  std::unique_ptr<NamespaceStore> store_;
  const Keys keys_{"c"};
};

TEST_F(SubtreeSnapshotTest, PagesAtOneRevisionAndFindsBelow) {
  auto rev = store_->CurrentRevision();
  ASSERT_THAT(rev, IsOk());
  auto s = LoadSubtree(kv_, keys_, "/a", 0, /*page_size=*/1);
  ASSERT_THAT(s, IsOk());
  ASSERT_EQ(s->files.size(), 3u);  // not /a.b or /ab/w
  EXPECT_EQ(s->revision, *rev);
  EXPECT_EQ(s->bytes, 30u);
  EXPECT_EQ(s->files[0].path, "/a/sub/z");
  EXPECT_NE(s->Find("/a/y"), nullptr);
  EXPECT_EQ(s->Find("/a/q"), nullptr);
  EXPECT_EQ(s->Below("/a/sub"), std::make_pair(size_t{0}, size_t{1}));
  EXPECT_EQ(s->Below("/a"), std::make_pair(size_t{0}, size_t{3}));
  auto all = LoadSubtree(kv_, keys_, "/", 0);
  ASSERT_THAT(all, IsOk());
  EXPECT_EQ(all->files.size(), 6u);
  const auto [first, last] = all->Below("/a");
  EXPECT_EQ(last - first, 3u);

  // Pinned: a file removed later is still there at the old revision.
  ASSERT_THAT(store_->DeleteFile("/a/x", 0), IsOk());
  auto old = LoadSubtree(kv_, keys_, "/a", *rev, 2);
  ASSERT_THAT(old, IsOk());
  EXPECT_NE(old->Find("/a/x"), nullptr);
  auto now = LoadSubtree(kv_, keys_, "/a", 0);
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ(now->Find("/a/x"), nullptr);
}

TEST_F(SubtreeSnapshotTest, BadRecordFailsOnlyItself) {
  etcdserverpb::TxnRequest poison;
  auto* put = poison.add_success()->mutable_request_put();
  put->set_key(keys_.File("/a/bad"));
  put->set_value("\x08\xff junk");
  ASSERT_THAT(kv_.Txn(poison), IsOk());
  auto s = LoadSubtree(kv_, keys_, "/a", 0);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->files.size(), 4u);
  EXPECT_EQ(s->invalid, 1u);
  const SnapshotFile* bad = s->Find("/a/bad");
  ASSERT_NE(bad, nullptr);
  EXPECT_THAT(bad->invalid, HasSubstr(keys_.File("/a/bad")));
  EXPECT_TRUE(bad->layout.empty());
  EXPECT_TRUE(s->Find("/a/x")->invalid.empty());
}

TEST_F(SubtreeSnapshotTest, RejectsBadArguments) {
  EXPECT_THAT(LoadSubtree(kv_, keys_, "a/../b", 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LoadSubtree(kv_, keys_, "/a", -1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LoadSubtree(kv_, keys_, "/a", 0, 10001),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LoadSubtree(kv_, keys_, "/a", 1 << 30),
              StatusIs(absl::StatusCode::kOutOfRange));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
