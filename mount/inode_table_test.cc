#include "mount/inode_table.h"

#include "gtest/gtest.h"

namespace rangefs {
namespace mount {
namespace {

TEST(InodeTableTest, RootIsOneAndNeverForgotten) {
  InodeTable t;
  InodeRef r;
  ASSERT_TRUE(t.Get(kRootInode, &r));
  EXPECT_EQ(r.path, "/");
  EXPECT_TRUE(r.is_dir);
  t.Forget(kRootInode, 100);
  EXPECT_TRUE(t.Get(kRootInode, &r));
  EXPECT_EQ(t.Find("/"), kRootInode);
}

TEST(InodeTableTest, LookupCountsKeepTheNumber) {
  InodeTable t;
  const uint64_t a = t.Acquire("/a", false);
  EXPECT_NE(a, kRootInode);
  EXPECT_EQ(t.Acquire("/a", false), a);  // two references now
  EXPECT_EQ(t.Find("/a"), a);
  t.Forget(a, 1);
  EXPECT_EQ(t.Find("/a"), a);
  t.Forget(a, 1);
  EXPECT_EQ(t.Find("/a"), 0u);
  InodeRef r;
  EXPECT_FALSE(t.Get(a, &r));
  // Not reused.
  EXPECT_NE(t.Acquire("/a", false), a);
  t.Forget(999, 1);  // unknown: ignored
}

TEST(InodeTableTest, KindChangeGetsANewNumber) {
  InodeTable t;
  const uint64_t f = t.Acquire("/x", false);
  const uint64_t d = t.Acquire("/x", true);
  EXPECT_NE(f, d);
  EXPECT_EQ(t.Find("/x"), d);
  InodeRef r;
  ASSERT_TRUE(t.Get(f, &r));  // still valid until the kernel forgets it
  EXPECT_FALSE(r.is_dir);
  t.Forget(f, 1);
  EXPECT_FALSE(t.Get(f, &r));
  EXPECT_EQ(t.Find("/x"), d);  // forgetting the old one leaves the new
  EXPECT_EQ(t.size(), 2u);
}

TEST(InodeTableTest, CacheTagDecidesKeepCache) {
  InodeTable t;
  const uint64_t a = t.Acquire("/a", false);
  // (file_id, size, content generation, crc digest unknown, ready)
  const CacheTag v1{5, 100, 1, 0, true};
  const CacheTag v3{5, 100, 3, 0, true};
  const CacheTag other{6, 100, 3, 0, true};
  EXPECT_FALSE(t.SwapCacheTag(a, v1));  // nothing cached yet
  EXPECT_TRUE(t.SwapCacheTag(a, v1));
  EXPECT_FALSE(t.SwapCacheTag(a, v3));  // new content
  EXPECT_TRUE(t.SwapCacheTag(a, v3));
  EXPECT_FALSE(t.SwapCacheTag(a, other));  // another file
  EXPECT_FALSE(t.SwapCacheTag(12345, other));
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
