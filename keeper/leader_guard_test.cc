// LeaderGuard::ReplaceLayout keeps NamespaceStore::ReplaceLayout's whole
// contract (it is the store's ReplaceLayoutIf with the leader compare), over
// MemoryKv. The leader compare itself runs against a real etcd in
// tests/integration/keeper_test.cc (AKeeperWithoutTheLeaderLeaseCannotWrite).
#include "keeper/leader_guard.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"

namespace rangefs {
namespace keeper {
namespace {

class LeaderGuardTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = ns::NewKvStore(&kv_, {.cluster = "t"}); }

  void AddNode(const std::string& id) {
    v1::NodeRecord n;
    n.set_id(id);
    n.add_addresses("127.0.0.1:1");
    n.set_export_path("/srv/" + id);
    ASSERT_THAT(store_->AddNode(n), IsOk());
  }

  // `extents` 1-byte extents, extent i on node "n<i>" (zero-padded).
  static v1::FileLayout Spread(int extents) {
    v1::FileLayout l;
    l.set_state(v1::READY);
    l.set_size(extents);
    for (int i = 0; i < extents; ++i) {
      v1::Extent* e = l.add_extents();
      e->set_offset(i);
      e->set_length(1);
      v1::Replica* r = e->add_replicas();
      r->set_node_id(Id(i));
      r->set_object("obj");
      r->set_object_offset(i);
    }
    return l;
  }
  static std::string Id(int i) {
    return absl::StrCat("n", i < 10 ? "00" : i < 100 ? "0" : "", i);
  }

  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  // ReplaceLayout of an unguarded keeper never calls etcd.
  LeaderGuard guard_{nullptr, "leader", nullptr};
};

TEST_F(LeaderGuardTest, EveryReferencedNodeIsCheckedNotOnlyTheFirst100) {
  constexpr int kNodes = 102;
  for (int i = 0; i < kNodes; ++i) AddNode(Id(i));
  auto f = store_->CreateFile("/wide", Spread(kNodes));
  ASSERT_THAT(f, IsOk());
  // The last node (beyond the 100 compared in the transaction) goes.
  ASSERT_THAT(store_->SetNodeState(Id(kNodes - 1), v1::DISABLED), IsOk());
  ASSERT_THAT(store_->RemoveNode(Id(kNodes - 1)), IsOk());
  v1::FileLayout next = Spread(kNodes);
  next.mutable_extents(0)->mutable_replicas(0)->set_object("other");
  EXPECT_THAT(guard_.ReplaceLayout(store_.get(), *f, next),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::HasSubstr(Id(kNodes - 1))));
  EXPECT_EQ(store_->GetFile("/wide")->mod_revision, f->mod_revision);
}

TEST_F(LeaderGuardTest, PathAndLayoutAreValidated) {
  AddNode(Id(0));
  // A path the store would never write: no record at a bad key.
  ns::FileEntry bad;
  bad.path = "/a/../b";
  EXPECT_THAT(guard_.ReplaceLayout(store_.get(), bad, Spread(1)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string root = store_->keys().FilesRoot();
  auto all = kv_.Range(root, ns::PrefixRangeEnd(root), 0, 0);
  ASSERT_THAT(all, IsOk());
  EXPECT_TRUE(all->kvs.empty());
  auto f = store_->CreateFile("/a", Spread(1));
  ASSERT_THAT(f, IsOk());
  v1::FileLayout empty_slot = Spread(1);
  empty_slot.mutable_extents(0)->clear_replicas();
  EXPECT_THAT(guard_.ReplaceLayout(store_.get(), *f, empty_slot),
              StatusIs(absl::StatusCode::kInvalidArgument));
  auto r = guard_.ReplaceLayout(store_.get(), *f, Spread(1));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->layout.generation(), f->layout.generation() + 1);
  EXPECT_EQ(r->layout.file_id(), f->layout.file_id());
}

TEST_F(LeaderGuardTest, NoLeaseNoWrite) {
  AddNode(Id(0));
  auto f = store_->CreateFile("/a", Spread(1));
  ASSERT_THAT(f, IsOk());
  LeaderGuard gone(nullptr, "leader", [] { return int64_t{0}; });
  EXPECT_TRUE(
      IsNotLeader(gone.ReplaceLayout(store_.get(), *f, Spread(1)).status()));
  EXPECT_EQ(store_->GetFile("/a")->mod_revision, f->mod_revision);
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
