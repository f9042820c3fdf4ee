#include "namespace/cached_layout.h"

#include <random>
#include <string>
#include <vector>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/layout.h"

namespace rangefs {
namespace ns {
namespace {

using ::testing::HasSubstr;

constexpr char kKey[] = "/rangefs/v1/c/files/f";

// A valid layout of `lengths.size()` extents with those lengths.
v1::FileLayout Extents(const std::vector<uint64_t>& lengths) {
  v1::FileLayout l;
  l.set_file_id(7);
  l.set_generation(3);
  l.set_state(v1::READY);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(1 << 20);
  uint64_t off = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    v1::Extent* e = l.add_extents();
    e->set_offset(off);
    e->set_length(lengths[i]);
    e->set_has_crc32c(true);
    e->set_crc32c(static_cast<uint32_t>(i * 2654435761u));
    for (int r = 0; r < 2; ++r) {
      v1::Replica* rep = e->add_replicas();
      rep->set_node_id("node-" + std::to_string((i + r) % 5));
      rep->set_object("f/00000000deadbeef/e" + std::to_string(i));
      rep->set_object_offset(i * 7);
    }
    off += lengths[i];
  }
  l.set_size(off);
  return l;
}

std::shared_ptr<const CachedLayout> Decode(const std::string& bytes) {
  auto c = DecodeCachedLayout("/f", kKey,
                              std::make_shared<const std::string>(bytes), 5);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : nullptr;
}

// Both mappings give the same pieces, replicas included.
void ExpectSameMapping(const v1::FileLayout& full, const CachedLayout& c,
                       uint64_t offset, uint64_t length, uint64_t max_piece) {
  SCOPED_TRACE(testing::Message() << "offset " << offset << " length " << length
                                  << " max_piece " << max_piece);
  std::vector<Piece> want = MapRange(full, offset, length, max_piece);
  absl::StatusOr<MappedRange> got = MapRange(c, offset, length, max_piece);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->pieces.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Piece& a = want[i];
    const Piece& b = got->pieces[i];
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.length, b.length);
    EXPECT_EQ(a.unit, b.unit);
    EXPECT_EQ(a.object_delta, b.object_delta);
    ASSERT_EQ(a.replicas->size(), b.replicas->size());
    for (int r = 0; r < a.replicas->size(); ++r) {
      EXPECT_EQ(a.replicas->Get(r).SerializeAsString(),
                b.replicas->Get(r).SerializeAsString());
    }
  }
}

TEST(CachedLayoutTest, HeaderWithoutExtentsAndFullLayoutRoundTrips) {
  const v1::FileLayout full = Extents({10, 20, 30});
  auto c = Decode(full.SerializeAsString());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->path, "/f");
  EXPECT_EQ(c->mod_revision, 5);
  EXPECT_EQ(c->header.extents_size(), 0);
  EXPECT_EQ(c->header.size(), 60u);
  EXPECT_EQ(c->header.generation(), 3u);
  EXPECT_EQ(c->index.size(), 3u);
  EXPECT_EQ(FullLayout(*c).SerializeAsString(), full.SerializeAsString());
}

TEST(CachedLayoutTest, RandomRangesMapAsTheFullLayoutDoes) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 20; ++round) {
    std::vector<uint64_t> lengths(1 + rng() % 300);
    for (uint64_t& n : lengths) n = 1 + rng() % 5000;
    const v1::FileLayout full = Extents(lengths);
    auto c = Decode(full.SerializeAsString());
    ASSERT_NE(c, nullptr);
    for (int i = 0; i < 200; ++i) {
      const uint64_t offset = rng() % (full.size() + 10);
      const uint64_t length = rng() % 3 == 0 ? rng() : rng() % 20000;
      const uint64_t max_piece = rng() % 2 == 0 ? 0 : 1 + rng() % 3000;
      ExpectSameMapping(full, *c, offset, length, max_piece);
    }
    ExpectSameMapping(full, *c, 0, full.size(), 0);
    ExpectSameMapping(full, *c, full.size() - 1, 1, 0);
  }
}

TEST(CachedLayoutTest, PiecesPointIntoOnlyTheTouchedExtents) {
  const v1::FileLayout full = Extents({100, 100, 100, 100});
  auto c = Decode(full.SerializeAsString());
  ASSERT_NE(c, nullptr);
  absl::StatusOr<MappedRange> m = MapRange(*c, 150, 100, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_NE(m->extents, nullptr);
  EXPECT_EQ(m->extents->extents_size(), 2);  // extents 1 and 2
  ASSERT_EQ(m->pieces.size(), 2u);
  EXPECT_EQ(m->pieces[0].unit, 1u);
  EXPECT_EQ(m->pieces[1].unit, 2u);
}

TEST(CachedLayoutTest, ExtentsInterleavedWithOtherFieldsAreIndexed) {
  // Parsing concatenated encodings merges them: header fields after the
  // extents on the wire, as another writer may order them.
  const v1::FileLayout full = Extents({10, 20, 30});
  v1::FileLayout extents_only;
  *extents_only.mutable_extents() = full.extents();
  v1::FileLayout header = full;
  header.clear_extents();
  const std::string bytes =
      extents_only.SerializeAsString() + header.SerializeAsString();
  auto c = Decode(bytes);
  ASSERT_NE(c, nullptr);
  for (uint64_t off = 0; off < 62; ++off) {
    ExpectSameMapping(full, *c, off, 7, 3);
  }
}

TEST(CachedLayoutTest, StripedAndEmptyLayoutsMapFromTheHeader) {
  v1::FileLayout s;
  s.set_state(v1::READY);
  s.set_size(10 << 20);
  s.mutable_striped()->set_stripe_unit(1 << 20);
  for (int t = 0; t < 3; ++t) {
    v1::Replica* r = s.mutable_striped()->add_targets()->add_replicas();
    r->set_node_id("n" + std::to_string(t));
    r->set_object("o" + std::to_string(t));
  }
  auto c = Decode(s.SerializeAsString());
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->index.empty());
  ExpectSameMapping(s, *c, 123, 5 << 20, 1 << 19);

  v1::FileLayout empty;
  empty.set_state(v1::READY);
  auto e = Decode(empty.SerializeAsString());
  ASSERT_NE(e, nullptr);
  absl::StatusOr<MappedRange> m = MapRange(*e, 0, 100, 0);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->pieces.empty());
}

TEST(CachedLayoutTest, InvalidRecordsFailTheGateNamingTheKey) {
  v1::FileLayout gap = Extents({10, 20});
  gap.mutable_extents(1)->set_offset(11);  // a hole at byte 10
  auto c = DecodeCachedLayout(
      "/f", kKey, std::make_shared<const std::string>(gap.SerializeAsString()),
      1);
  EXPECT_THAT(c.status(), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(kKey));

  auto garbage = DecodeCachedLayout(
      "/f", kKey, std::make_shared<const std::string>("\xff\xff\xff"), 1);
  EXPECT_THAT(garbage.status(), StatusIs(absl::StatusCode::kDataLoss));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
