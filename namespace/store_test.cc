// NamespaceStore logic over MemoryKv (unit tests); the same operations run
// against a real etcd in namespace/etcd_store_test.cc.
#include "namespace/store.h"

#include <thread>

#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"
#include "namespace/store_test_suite.h"

namespace rangefs {
namespace ns {
namespace {

class MemoryStoreTest : public StoreTestSuite {
 protected:
  void SetUp() override {
    kv_ = std::make_unique<MemoryKv>();
    store_ = NewKvStore(kv_.get(), {.cluster = "t", .clock = &clock_});
  }
  std::unique_ptr<MemoryKv> kv_;
  FakeClock clock_;
};

RANGEFS_STORE_TESTS(MemoryStoreTest)

TEST_F(MemoryStoreTest, UnavailableBackendSaysSo) {
  kv_->SetAvailable(false);
  EXPECT_THAT(store_->GetFile("/a"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(store_->CreateFile("/a", OneExtent(10, {"n1"})),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(MemoryStoreTest, RevisionPinningAndCompaction) {
  AddNodes();
  auto created = store_->CreateFile("/p", OneExtent(10, {"n1"}));
  ASSERT_THAT(created, IsOk());
  int64_t r1 = created->mod_revision;
  auto replaced = store_->ReplaceLayout("/p", OneExtent(20, {"n2"}), r1);
  ASSERT_THAT(replaced, IsOk());
  auto old = store_->GetFile("/p", r1);
  ASSERT_THAT(old, IsOk());
  EXPECT_EQ(old->layout.size(), 10u);
  EXPECT_EQ(store_->GetFile("/p")->layout.size(), 20u);
  ASSERT_THAT(kv_->Compact(replaced->mod_revision), IsOk());
  EXPECT_THAT(store_->GetFile("/p", r1),
              StatusIs(absl::StatusCode::kOutOfRange,
                       ::testing::HasSubstr("no longer available")));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
