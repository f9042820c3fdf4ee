#include "namespace/etcd/key_range.h"

#include <string>

#include "gtest/gtest.h"

namespace rangefs {
namespace etcd {
namespace {

TEST(PrefixRangeEndTest, Examples) {
  EXPECT_EQ(PrefixRangeEnd("a/"), "a0");
  EXPECT_EQ(PrefixRangeEnd("/rangefs/v1/"), "/rangefs/v10");
  EXPECT_EQ(PrefixRangeEnd("a\xff"), "b");
  EXPECT_EQ(PrefixRangeEnd("a\xff\xff"), "b");
  EXPECT_EQ(PrefixRangeEnd("\xff\xff"), std::string(1, '\0'));
  EXPECT_EQ(PrefixRangeEnd(""), std::string(1, '\0'));
}

}  // namespace
}  // namespace etcd
}  // namespace rangefs
