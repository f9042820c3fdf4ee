// ForEachRangePage over MemoryKv: pages in key order, one revision for the
// whole walk, empty ranges, adaptive page sizes, errors.
#include "namespace/kv.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"

namespace rangefs {
namespace ns {
namespace {

using ::testing::ElementsAre;

class ForEachRangePageTest : public ::testing::Test {
 protected:
  int64_t Put(const std::string& key, const std::string& value) {
    etcdserverpb::TxnRequest txn;
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    absl::StatusOr<etcdserverpb::TxnResponse> r = kv_.Txn(txn);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? r->header().revision() : 0;
  }

  // Walks /p/ and records what each page held.
  absl::StatusOr<int64_t> Walk(int64_t revision, int64_t page_size) {
    return ForEachRangePage(
        kv_, "/p/", PrefixRangeEnd("/p/"), revision, page_size,
        [&](std::vector<KvEntry>& page, int64_t at) {
          sizes_.push_back(static_cast<int64_t>(page.size()));
          revisions_.push_back(at);
          for (KvEntry& e : page) {
            keys_.push_back(e.key);
            values_.push_back(std::move(e.value));
          }
          return absl::OkStatus();
        });
  }

  MemoryKv kv_;
  std::vector<int64_t> sizes_, revisions_;
  std::vector<std::string> keys_, values_;
};

TEST_F(ForEachRangePageTest, PagesCoverTheRangeInKeyOrder) {
  Put("/o", "before");
  for (int i = 0; i < 25; ++i) Put(absl::StrCat("/p/k", 100 + i), "v");
  const int64_t rev = Put("/q/outside", "after");
  absl::StatusOr<int64_t> at = Walk(0, 7);
  ASSERT_THAT(at, IsOk());
  EXPECT_EQ(*at, rev);
  EXPECT_THAT(sizes_, ElementsAre(7, 7, 7, 4));
  EXPECT_THAT(revisions_, ElementsAre(rev, rev, rev, rev));
  ASSERT_EQ(keys_.size(), 25u);
  for (int i = 0; i < 25; ++i)
    EXPECT_EQ(keys_[i], absl::StrCat("/p/k", 100 + i));
}

TEST_F(ForEachRangePageTest, ExactMultipleOfThePageSize) {
  for (int i = 0; i < 14; ++i) Put(absl::StrCat("/p/k", 100 + i), "v");
  ASSERT_THAT(Walk(0, 7), IsOk());
  EXPECT_EQ(keys_.size(), 14u);
  EXPECT_EQ(keys_.back(), "/p/k113");
}

TEST_F(ForEachRangePageTest, EmptyRangeCallsNothingAndGivesTheRevision) {
  const int64_t rev = Put("/q/x", "v");
  absl::StatusOr<int64_t> at = Walk(0, 7);
  ASSERT_THAT(at, IsOk());
  EXPECT_EQ(*at, rev);
  EXPECT_TRUE(sizes_.empty());
}

TEST_F(ForEachRangePageTest, ReadsAtTheRevisionGiven) {
  int64_t rev = 0;
  for (int i = 0; i < 25; ++i) rev = Put(absl::StrCat("/p/k", 100 + i), "old");
  for (int i = 0; i < 30; ++i) Put(absl::StrCat("/p/k", 100 + i), "new");
  absl::StatusOr<int64_t> at = Walk(rev, 7);
  ASSERT_THAT(at, IsOk());
  EXPECT_EQ(*at, rev);
  ASSERT_EQ(keys_.size(), 25u);
  for (const std::string& v : values_) EXPECT_EQ(v, "old");
}

TEST_F(ForEachRangePageTest, TheFirstPagesRevisionPinsTheRest) {
  for (int i = 0; i < 10; ++i) Put(absl::StrCat("/p/k", 100 + i), "old");
  int pages = 0;
  absl::StatusOr<int64_t> at =
      ForEachRangePage(kv_, "/p/", PrefixRangeEnd("/p/"), 0, 4,
                       [&](std::vector<KvEntry>& page, int64_t) {
                         for (KvEntry& e : page) values_.push_back(e.value);
                         if (++pages == 1) {
                           // Written behind the walk: later pages must not show
                           // them.
                           for (int i = 0; i < 10; ++i) {
                             Put(absl::StrCat("/p/k", 100 + i), "new");
                           }
                           Put("/p/k999", "new");
                         }
                         return absl::OkStatus();
                       });
  ASSERT_THAT(at, IsOk());
  EXPECT_LT(*at, kv_.revision());
  ASSERT_EQ(values_.size(), 10u);
  for (const std::string& v : values_) EXPECT_EQ(v, "old");
}

TEST_F(ForEachRangePageTest, AdaptivePagesStartAtAThousandThenGrow) {
  for (int i = 0; i < 2500; ++i) Put(absl::StrCat("/p/k", 10000 + i), "v");
  ASSERT_THAT(Walk(0, 0), IsOk());
  // Small records: the second page is NextPageSize's largest (10,000).
  EXPECT_THAT(sizes_, ElementsAre(1000, 1500));
}

TEST_F(ForEachRangePageTest, ACallbackErrorStopsTheWalk) {
  for (int i = 0; i < 25; ++i) Put(absl::StrCat("/p/k", 100 + i), "v");
  int pages = 0;
  absl::StatusOr<int64_t> at =
      ForEachRangePage(kv_, "/p/", PrefixRangeEnd("/p/"), 0, 7,
                       [&](std::vector<KvEntry>&, int64_t) {
                         return ++pages == 2 ? absl::DataLossError("bad page")
                                             : absl::OkStatus();
                       });
  EXPECT_THAT(at, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_EQ(pages, 2);
}

TEST_F(ForEachRangePageTest, BackendErrorsComeBackAsTheyAre) {
  Put("/p/a", "v");
  const int64_t rev = Put("/p/b", "v");
  Put("/p/c", "v");
  ASSERT_THAT(kv_.Compact(rev + 1), IsOk());
  EXPECT_THAT(Walk(rev, 7), StatusIs(absl::StatusCode::kOutOfRange));
  kv_.SetAvailable(false);
  EXPECT_THAT(Walk(0, 7), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(sizes_.empty());
}

TEST_F(ForEachRangePageTest, RejectsABadPageSize) {
  EXPECT_THAT(Walk(0, -1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Walk(0, 10001), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
