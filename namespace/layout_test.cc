#include "namespace/layout.h"

#include <string>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/keys.h"

namespace rangefs {
namespace ns {
namespace {

using ::testing::HasSubstr;

v1::Extent MakeExtent(uint64_t off, uint64_t len,
                      std::vector<std::string> nodes) {
  v1::Extent e;
  e.set_offset(off);
  e.set_length(len);
  for (const std::string& n : nodes) {
    v1::Replica* r = e.add_replicas();
    r->set_node_id(n);
    r->set_object("objs/" + std::to_string(off));
    r->set_object_offset(0);
  }
  return e;
}

v1::FileLayout ThreeExtents() {
  v1::FileLayout l;
  l.set_size(300);
  l.set_state(v1::READY);
  *l.add_extents() = MakeExtent(0, 100, {"n1", "n2"});
  *l.add_extents() = MakeExtent(100, 100, {"n2", "n3"});
  *l.add_extents() = MakeExtent(200, 100, {"n3", "n1"});
  return l;
}

NodeKnownFn Known() {
  return [](absl::string_view id) {
    return id == "n1" || id == "n2" || id == "n3";
  };
}

TEST(PathTest, AcceptsNormalizedPaths) {
  EXPECT_THAT(ValidatePath("/a"), IsOk());
  EXPECT_THAT(ValidatePath("/crawl/2026-11/seg-0001.warc"), IsOk());
  EXPECT_THAT(ValidateDir("/"), IsOk());
}

TEST(PathTest, RejectsBadPathsPrecisely) {
  EXPECT_THAT(ValidatePath(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(ValidatePath("a/b"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("not absolute")));
  EXPECT_THAT(ValidatePath("/a//b"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("empty component 1")));
  EXPECT_THAT(ValidatePath("/a/"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("empty component")));
  EXPECT_THAT(
      ValidatePath("/a/../b"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"..\"")));
  EXPECT_THAT(ValidatePath("/a/./b"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\".\"")));
  EXPECT_THAT(ValidatePath(std::string("/a\0b", 4)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("NUL byte at position 2")));
  EXPECT_THAT(ValidatePath("/a\nb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("control character")));
  EXPECT_THAT(ValidatePath("/" + std::string(256, 'x')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("256 bytes (max 255)")));
  std::string long_path;
  while (long_path.size() <= kMaxPathBytes) long_path += "/abcdefgh";
  EXPECT_THAT(
      ValidatePath(long_path),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max 4096")));
  EXPECT_THAT(ValidatePath("/"), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("directory")));
  EXPECT_THAT(
      ValidateObjectPath("/etc/passwd"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute")));
  EXPECT_THAT(ValidateObjectPath("../x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("..")));
}

TEST(NodeTest, ValidatesRecords) {
  v1::NodeRecord n;
  n.set_id("n1");
  n.add_addresses("10.0.0.1:7070");
  n.set_export_path("/srv/rangefs");
  n.set_admin_state(v1::ACTIVE);
  EXPECT_THAT(ValidateNode(n), IsOk());
  n.set_id("n/1");
  EXPECT_THAT(ValidateNode(n), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("position 1")));
  n.set_id("n1");
  n.add_addresses("nohost");
  EXPECT_THAT(ValidateNode(n), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("address 1: \"nohost\"")));
  n.clear_addresses();
  n.set_export_path("relative");
  EXPECT_THAT(ValidateNode(n), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("export path")));
}

TEST(ClusterNameTest, OneKeyComponentOfSafeCharacters) {
  EXPECT_THAT(ValidateClusterName("prod-1.eu_west"), IsOk());
  for (const char* bad : {"", "a/b", "..", ".", "x\x01", "a b"}) {
    EXPECT_THAT(
        ValidateClusterName(bad),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cluster name")))
        << bad;
  }
  EXPECT_THAT(
      ValidateClusterName(std::string(65, 'c')),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max 64")));
}

TEST(LayoutTest, AcceptsValidLayouts) {
  EXPECT_THAT(ValidateLayout(ThreeExtents(), Known()), IsOk());
  v1::FileLayout empty;
  empty.set_state(v1::READY);
  EXPECT_THAT(ValidateLayout(empty), IsOk());
}

TEST(LayoutTest, ContentGenerationIsNotAboveTheGeneration) {
  v1::FileLayout l = ThreeExtents();
  l.set_generation(4);
  l.set_content_generation(4);
  EXPECT_THAT(ValidateLayout(l), IsOk());
  l.set_content_generation(5);
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("content_generation 5 is above its "
                                 "generation 4")));
}

TEST(LayoutTest, Gap) {
  v1::FileLayout l = ThreeExtents();
  l.mutable_extents(1)->set_offset(110);
  l.mutable_extents(1)->set_length(90);
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gap: bytes [100, 110) are not covered")));
}

TEST(LayoutTest, Overlap) {
  v1::FileLayout l = ThreeExtents();
  l.mutable_extents(1)->set_offset(90);
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extent 1 [90, +100) overlaps the previous "
                                 "extent, which ends at 100")));
}

TEST(LayoutTest, Unsorted) {
  v1::FileLayout l = ThreeExtents();
  l.mutable_extents()->SwapElements(1, 2);
  EXPECT_THAT(ValidateLayout(l), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("gap: bytes [100, 200)")));
}

TEST(LayoutTest, CoverageMismatch) {
  v1::FileLayout l = ThreeExtents();
  l.set_size(400);
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extents cover [0, 300) but the file size "
                                 "is 400")));
  l.set_size(250);
  EXPECT_THAT(ValidateLayout(l), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("past the file size 250")));
}

TEST(LayoutTest, DuplicateReplicaNode) {
  v1::FileLayout l = ThreeExtents();
  l.mutable_extents(2)->mutable_replicas(1)->set_node_id("n3");
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extent 2 [200, +100): node \"n3\" holds "
                                 "more than one replica")));
}

TEST(LayoutTest, UnknownNode) {
  v1::FileLayout l = ThreeExtents();
  l.mutable_extents(1)->mutable_replicas(0)->set_node_id("n9");
  EXPECT_THAT(ValidateLayout(l, Known()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("extent 1 [100, +100) replica 0: unknown "
                                 "node \"n9\"")));
}

TEST(LayoutTest, HugeSizesAndOverflow) {
  v1::FileLayout l = ThreeExtents();
  l.set_size(uint64_t{1} << 60);
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exceeds the maximum file size")));
  l = ThreeExtents();
  l.mutable_extents(0)->mutable_replicas(0)->set_object_offset(UINT64_MAX - 5);
  EXPECT_THAT(ValidateLayout(l), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("overflows")));
}

TEST(LayoutTest, BadObjectPathsAndReplicaCounts) {
  v1::FileLayout l = ThreeExtents();
  l.mutable_extents(0)->mutable_replicas(1)->set_object("../../etc/shadow");
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extent 0 [0, +100) replica 1: object path")));
  l = ThreeExtents();
  l.mutable_extents(1)->clear_replicas();
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extent 1 [100, +100) has no replicas")));
  l = ThreeExtents();
  l.mutable_extents(1)->set_length(0);
  EXPECT_THAT(ValidateLayout(l), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("is empty")));
  l = ThreeExtents();
  l.set_state(v1::FILE_STATE_UNSPECIFIED);
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("state")));
}

TEST(LayoutTest, ASlotWhoseEveryReplicaIsLeavingIsRejected) {
  v1::FileLayout l = ThreeExtents();
  l.mutable_extents(1)->mutable_replicas(0)->set_leaving(true);
  EXPECT_THAT(ValidateLayout(l), IsOk());  // one replica stays
  l.mutable_extents(1)->mutable_replicas(1)->set_leaving(true);
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extent 1 [100, +100): every one of its 2 "
                                 "replica(s) is marked leaving")));
  v1::FileLayout s;
  s.set_size(10);
  s.set_state(v1::READY);
  s.mutable_striped()->set_stripe_unit(4);
  for (int t = 0; t < 2; ++t) {
    v1::Replica* r = s.mutable_striped()->add_targets()->add_replicas();
    r->set_node_id("n1");
    r->set_object("c" + std::to_string(t));
  }
  EXPECT_THAT(ValidateLayout(s), IsOk());
  s.mutable_striped()->mutable_targets(1)->mutable_replicas(0)->set_leaving(
      true);
  EXPECT_THAT(ValidateLayout(s),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stripe target 1: every one")));
}

TEST(LayoutTest, ReplacedByNamesANodeOnALeavingReplicaOnly) {
  v1::FileLayout l = ThreeExtents();
  v1::Replica* r = l.mutable_extents(1)->mutable_replicas(0);
  r->set_replaced_by("n9");
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extent 1 [100, +100) replica 0: replaced_by "
                                 "\"n9\" is set on a replica not marked "
                                 "leaving")));
  r->set_leaving(true);
  EXPECT_THAT(ValidateLayout(l), IsOk());
  r->set_replaced_by(std::string("n\0x", 3));
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("replica 0: replaced_by \"n\\000x\"")));
}

v1::FileLayout Striped(uint64_t size, uint64_t unit, int width, int replicas) {
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY);
  l.mutable_striped()->set_stripe_unit(unit);
  for (int t = 0; t < width; ++t) {
    auto* target = l.mutable_striped()->add_targets();
    for (int r = 0; r < replicas; ++r) {
      v1::Replica* rep = target->add_replicas();
      rep->set_node_id("n" + std::to_string((t + r) % 64));
      rep->set_object("f/col" + std::to_string(t));
    }
  }
  return l;
}

TEST(LayoutTest, OneTebibyteStripedFitsEasily) {
  v1::FileLayout l = Striped(uint64_t{1} << 40, 1 << 20, 64, 2);
  EXPECT_THAT(ValidateLayout(l), IsOk());
  EXPECT_LT(l.ByteSizeLong(), 16u * 1024);
}

TEST(LayoutTest, RejectsBothFormsAndOversizedLayouts) {
  v1::FileLayout l = Striped(1000, 100, 2, 1);
  *l.add_extents() = MakeExtent(0, 1000, {"n1"});
  EXPECT_THAT(ValidateLayout(l),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("both")));
  // 1 TiB as explicit 1 MiB extents would be far over etcd's limit.
  v1::FileLayout big;
  big.set_state(v1::READY);
  const uint64_t n = 40000;
  big.set_size(n << 20);
  for (uint64_t i = 0; i < n; ++i) {
    *big.add_extents() = MakeExtent(i << 20, 1 << 20, {"n1", "n2"});
  }
  EXPECT_THAT(ValidateLayout(big), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("use the striped form")));
}

// Reassembles [off, off+len) from pieces and checks against the identity
// "file byte i comes from object byte (object_offset + delta)" mapping.
TEST(MapRangeTest, ExtentsSplitAtEveryBoundary) {
  v1::FileLayout l = ThreeExtents();
  for (uint64_t off = 0; off <= 300; off += 7) {
    for (uint64_t len : {uint64_t{0}, uint64_t{1}, uint64_t{99}, uint64_t{100},
                         uint64_t{101}, uint64_t{1000}}) {
      for (uint64_t max_piece : {uint64_t{0}, uint64_t{13}, uint64_t{100}}) {
        std::vector<Piece> pieces = MapRange(l, off, len, max_piece);
        uint64_t pos = off;
        for (const Piece& p : pieces) {
          ASSERT_EQ(p.offset, pos);
          ASSERT_GT(p.length, 0u);
          if (max_piece) {
            ASSERT_LE(p.length, max_piece);
          }
          const v1::Extent& e = l.extents(p.unit);
          ASSERT_GE(p.offset, e.offset());
          ASSERT_LE(p.offset + p.length, e.offset() + e.length());
          ASSERT_EQ(p.ObjectOffset(e.replicas(0)), p.offset - e.offset());
          pos += p.length;
        }
        ASSERT_EQ(pos,
                  std::min<uint64_t>(
                      300, std::max(off, std::min<uint64_t>(off + len, 300))))
            << off << "+" << len;
      }
    }
  }
}

TEST(MapRangeTest, StripedMapsUnitsToColumns) {
  const uint64_t unit = 10;
  const int width = 3;
  v1::FileLayout l = Striped(95, unit, width, 2);
  std::vector<Piece> pieces = MapRange(l, 0, 95, 0);
  ASSERT_EQ(pieces.size(), 10u);
  for (size_t k = 0; k < pieces.size(); ++k) {
    EXPECT_EQ(pieces[k].offset, k * unit);
    EXPECT_EQ(pieces[k].unit, k % width);
    EXPECT_EQ(pieces[k].object_delta, (k / width) * unit);
  }
  EXPECT_EQ(pieces.back().length, 5u);
  // A read inside unit 4 (column 1, row 1) at +3.
  std::vector<Piece> mid = MapRange(l, 43, 4, 0);
  ASSERT_EQ(mid.size(), 1u);
  EXPECT_EQ(mid[0].unit, 1u);
  EXPECT_EQ(mid[0].object_delta, 13u);
  // Split by max_piece within a unit.
  EXPECT_EQ(MapRange(l, 0, 20, 4).size(), 6u);
}

TEST(KeysTest, RoundTrips) {
  Keys k("prod");
  EXPECT_EQ(k.Node("n1"), "/rangefs/v1/prod/nodes/n1");
  EXPECT_EQ(k.File("/a/b"), "/rangefs/v1/prod/files/a/b");
  EXPECT_EQ(k.FileDirPrefix("/"), "/rangefs/v1/prod/files/");
  EXPECT_EQ(k.FileDirPrefix("/a"), "/rangefs/v1/prod/files/a/");
  std::string out;
  EXPECT_TRUE(k.ParseFile(k.File("/x/y"), &out));
  EXPECT_EQ(out, "/x/y");
  EXPECT_TRUE(k.ParseNode(k.Node("n7"), &out));
  EXPECT_EQ(out, "n7");
  EXPECT_FALSE(k.ParseNode(k.Live("n7"), &out));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
