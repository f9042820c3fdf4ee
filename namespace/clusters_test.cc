#include "namespace/clusters.h"

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/keys.h"
#include "namespace/memory_kv.h"

namespace rangefs {
namespace ns {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The value of an OK StatusOr, or `fallback` (the test fails on the status).
template <typename T>
T ValueOr(absl::StatusOr<T> s, T fallback) {
  EXPECT_THAT(s, IsOk());
  return s.ok() ? *std::move(s) : fallback;
}

void Put(MemoryKv& kv, const std::string& key) {
  etcdserverpb::TxnRequest txn;
  auto* p = txn.add_success()->mutable_request_put();
  p->set_key(key);
  p->set_value("x");
  ASSERT_THAT(kv.Txn(txn), IsOk());
}

TEST(ClustersTest, ListsEveryClusterOnce) {
  MemoryKv kv;
  EXPECT_THAT(ValueOr<std::vector<std::string>>(ListClusters(kv), {"error"}),
              ::testing::IsEmpty());
  Put(kv, Keys("local").Node("n0"));
  Put(kv, Keys("local").File("/a"));
  Put(kv, Keys("local").File("/b"));
  Put(kv, Keys("prod").NextFileId());
  Put(kv, "/rangefs/v1/stray");  // not a cluster's key
  Put(kv, "/other/key");
  EXPECT_THAT(ValueOr<std::vector<std::string>>(ListClusters(kv), {}),
              ElementsAre("local", "prod"));
  EXPECT_THAT(ValueOr<std::vector<std::string>>(ListClusters(kv, 1), {}),
              ElementsAre("local"));
  EXPECT_EQ(Keys("local").root(), "/rangefs/v1/local/");
}

TEST(ClustersTest, AnEmptyClusterNamesTheOnesThatExist) {
  MemoryKv kv;
  auto none = EmptyClusterMessage(kv, "default", "127.0.0.1:2379");
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT(*none, HasSubstr("no cluster there has any record"));
  Put(kv, Keys("local").Node("n0"));
  auto m = EmptyClusterMessage(kv, "default", "127.0.0.1:2379");
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(*m,
            "cluster \"default\" at 127.0.0.1:2379 has no nodes and no files "
            "(clusters there: local); give --cluster or $RANGEFS_CLUSTER");
  EXPECT_EQ(
      ValueOr(EmptyClusterMessage(kv, "local", "e"), std::string("error")), "");
  Put(kv, Keys("filesonly").File("/f"));
  EXPECT_EQ(
      ValueOr(EmptyClusterMessage(kv, "filesonly", "e"), std::string("error")),
      "");
  kv.SetAvailable(false);
  EXPECT_THAT(EmptyClusterMessage(kv, "x", "e"),
              StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
