#include "namespace/content_id.h"

#include "gtest/gtest.h"

namespace rangefs {
namespace ns {
namespace {

v1::FileLayout Striped(uint64_t file_id, uint64_t size, uint64_t content_gen,
                       const char* node) {
  v1::FileLayout l;
  l.set_file_id(file_id);
  l.set_generation(content_gen + 4);
  l.set_content_generation(content_gen);
  l.set_size(size);
  l.set_state(v1::READY);
  l.mutable_striped()->set_stripe_unit(1 << 20);
  l.mutable_striped()->add_targets()->add_replicas()->set_node_id(node);
  return l;
}

v1::FileLayout Extents(uint64_t content_gen, bool with_crc, uint32_t crc,
                       const char* node) {
  v1::FileLayout l;
  l.set_file_id(9);
  l.set_generation(content_gen + 1);
  l.set_content_generation(content_gen);
  l.set_size(100);
  l.set_state(v1::READY);
  v1::Extent* e = l.add_extents();
  e->set_length(100);
  e->add_replicas()->set_node_id(node);
  e->set_has_crc32c(with_crc);
  e->set_crc32c(crc);
  return l;
}

TEST(ContentIdTest, AStripedFilesReplicaMoveKeepsItsBytes) {
  // The keeper moved column 0 from node a to node b: generation changed,
  // content generation kept.
  v1::FileLayout before = Striped(7, 5 << 20, 1, "a");
  v1::FileLayout after = Striped(7, 5 << 20, 1, "b");
  after.set_generation(before.generation() + 1);
  EXPECT_TRUE(SameBytes(ContentIdOf(before), ContentIdOf(after)));
}

TEST(ContentIdTest, AnOverwriteOfTheSameSizeIsNewBytes) {
  EXPECT_FALSE(SameBytes(ContentIdOf(Striped(7, 5 << 20, 1, "a")),
                         ContentIdOf(Striped(7, 5 << 20, 6, "a"))));
}

TEST(ContentIdTest, FileIdOrSizeChangeIsNewBytes) {
  const ContentId a = ContentIdOf(Striped(7, 5 << 20, 1, "a"));
  EXPECT_FALSE(SameBytes(a, ContentIdOf(Striped(8, 5 << 20, 1, "a"))));
  EXPECT_FALSE(SameBytes(a, ContentIdOf(Striped(7, 4 << 20, 1, "a"))));
}

TEST(ContentIdTest, DifferingCrcsAreNewBytesUnknownCrcsAreNot) {
  const ContentId a = ContentIdOf(Extents(1, true, 11, "a"));
  EXPECT_TRUE(SameBytes(a, ContentIdOf(Extents(1, true, 11, "b"))));
  EXPECT_FALSE(SameBytes(a, ContentIdOf(Extents(1, true, 12, "a"))));
  EXPECT_TRUE(SameBytes(a, ContentIdOf(Extents(1, false, 0, "b"))));
}

TEST(ContentIdTest, ALayoutThatIsNotReadyIsNeverTheSame) {
  v1::FileLayout importing = Striped(7, 5 << 20, 1, "a");
  importing.set_state(v1::IMPORTING);
  const ContentId a = ContentIdOf(Striped(7, 5 << 20, 1, "a"));
  EXPECT_FALSE(SameBytes(a, ContentIdOf(importing)));
  EXPECT_FALSE(SameBytes(ContentIdOf(importing), a));
}

TEST(ContentIdTest, RecordsWithoutContentGenerationsCompareTheRest) {
  EXPECT_TRUE(SameBytes(ContentIdOf(Striped(7, 5 << 20, 0, "a")),
                        ContentIdOf(Striped(7, 5 << 20, 0, "b"))));
  EXPECT_FALSE(SameBytes(ContentIdOf(Extents(0, true, 1, "a")),
                         ContentIdOf(Extents(0, true, 2, "a"))));
}

TEST(ContentIdTest, DescribeNamesEveryPart) {
  EXPECT_EQ(DescribeContent(ContentIdOf(Striped(7, 10, 3, "a"))),
            "file_id 7, size 10, content generation 3");
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
