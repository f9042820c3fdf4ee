#include "namespace/tree_clash.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace ns {
namespace {

using ::testing::HasSubstr;

std::vector<TreeClash> Find(const std::vector<std::string>& paths) {
  TreeClashFinder f;
  for (const std::string& p : paths) f.Add(p);
  return f.Clashes();
}

TEST(TreeClashTest, ATreeHasNone) {
  EXPECT_TRUE(Find({"/a/b", "/a/c", "/a/b-x", "/a/bc/d", "/ab"}).empty());
}

TEST(TreeClashTest, FindsAFileThatIsAlsoADirectory) {
  // Listing order interleaves a sibling ("/d/pq-x" sorts between "/d/pq"
  // and "/d/pq/...") and a deeper clash.
  auto c = Find(
      {"/d/pq", "/d/pq-x", "/d/pq/part-0", "/d/pq/part-1", "/x/y/z/w", "/x"});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].file, "/d/pq");
  EXPECT_EQ(c[0].below, "/d/pq/part-0");
  EXPECT_EQ(c[0].files_below, 2u);
  EXPECT_EQ(c[1].file, "/x");
  EXPECT_EQ(c[1].below, "/x/y/z/w");
  EXPECT_THAT(DescribeTreeClash(c[0]),
              HasSubstr("file /d/pq is also a directory: 2 file(s) below it"));
}

TEST(TreeClashTest, DuplicatesCountOnce) {
  auto c = Find({"/a", "/a/b", "/a/b", "/a"});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].files_below, 1u);
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
