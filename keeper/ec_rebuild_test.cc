// The shape of the keeper's RebuildEcColumn requests (pure): survivors,
// the rows per call, and ranges that together carry the whole CRC table of
// a file far past what one message may hold, each well under the agent's
// receive limit and its per-call cap. The rebuild itself, over real
// agents, is in storage_node/ec_rebuilder_test.cc and
// tests/integration/ec_repair_test.cc.
#include "keeper/ec_rebuild.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace keeper {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kCell = 6 << 20;
// Past the agent's old cap: one call of the whole table held at most
// 1048576 CRCs, 116508 rows of RS(6,3).
constexpr uint64_t kRows = 116509;

v1::FileLayout Coded(uint64_t rows) {
  v1::FileLayout l;
  l.set_size(rows * 6 * kCell - 5);
  l.set_state(v1::READY_EC);
  v1::StripedLayout* s = l.mutable_striped();
  s->set_stripe_unit(kCell);
  s->mutable_erasure()->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  s->mutable_erasure()->set_data_columns(6);
  s->mutable_erasure()->set_parity_columns(3);
  for (int t = 0; t < 9; ++t) {
    v1::Replica* r = s->add_targets()->add_replicas();
    r->set_node_id(absl::StrCat("n", t));
    r->set_object(absl::StrCat("f/c", t));
  }
  return l;
}

CellCrcTable Table(uint64_t rows) {
  CellCrcTable t;
  t.k = 6;
  t.m = 3;
  for (uint64_t i = 0; i < rows * 9; ++i) {
    t.crcs.push_back(static_cast<uint32_t>(i * 2654435761u));
  }
  return t;
}

std::string Address(const std::string& node) { return node + ":1"; }

TEST(EcRebuildTest, RowsPerCallKeepsMessagesSmall) {
  ns::EcGeometry g = ns::EcGeometryOf(Coded(kRows));
  // 6 MiB cells: bounded by the column bytes per call (4 GiB).
  EXPECT_EQ(RowsPerCall(g, {}), kRebuildBytesPerCall / kCell);
  // 4 KiB cells: bounded by the CRCs per call.
  g.cell = 4096;
  EXPECT_EQ(RowsPerCall(g, {}), kRebuildCrcsPerCall / 9);
  EXPECT_LE(RowsPerCall(g, {}) * 9, uint64_t{1} << 20);  // the agent's cap
  EXPECT_EQ(RowsPerCall(g, {.rows_per_call = 2}), 2u);
}

TEST(EcRebuildTest, RangesCarryAFileTablePastTheOldCap) {
  const v1::FileLayout l = Coded(kRows);
  const CellCrcTable crcs = Table(kRows);
  const EcColumnRepair c{.column = 7, .object = "f/c7", .target_node = "n9"};
  auto base = RebuildRequest(l, crcs, c, {2}, Address, {});
  ASSERT_THAT(base, IsOk());
  EXPECT_EQ(base->cell_crc32c_size(), 0);
  EXPECT_TRUE(base->overwrite());
  ASSERT_EQ(base->survivors_size(), 7);  // not 2 (unusable), not 7 (lost)
  EXPECT_EQ(base->survivors(2).column(), 3);
  EXPECT_EQ(base->survivors(2).address(), "n3:1");

  // The keeper's loop (RebuildColumn) over ranges of RowsPerCall rows.
  const uint64_t per_call = RowsPerCall(ns::EcGeometryOf(l), {});
  uint64_t first = 0, calls = 0;
  size_t at = 0;  // next CRC of the table
  do {
    const uint64_t count = std::min(per_call, kRows - first);
    const node::RebuildEcColumnRequest r =
        RangeRequest(*base, crcs, first, count, 99);
    ++calls;
    EXPECT_EQ(r.first_row(), first);
    EXPECT_EQ(r.row_count(), count);
    EXPECT_EQ(r.rebuild_id(), 99u);
    ASSERT_EQ(static_cast<uint64_t>(r.cell_crc32c_size()), count * 9);
    for (uint32_t v : r.cell_crc32c()) ASSERT_EQ(v, crcs.crcs[at++]);
    EXPECT_LT(r.ByteSizeLong(), size_t{2} << 20);  // agent receives 8 MiB
    first += count;
  } while (first < kRows);
  EXPECT_EQ(at, crcs.crcs.size());  // every CRC sent once, in order
  EXPECT_EQ(calls, (kRows + per_call - 1) / per_call);
  EXPECT_GT(crcs.crcs.size(), size_t{1} << 20);  // the old one-call cap
}

TEST(EcRebuildTest, RangeRequestToTheEnd) {
  const v1::FileLayout l = Coded(5);
  const CellCrcTable crcs = Table(5);
  const EcColumnRepair c{.column = 0, .object = "f/c0", .target_node = "n9"};
  auto base = RebuildRequest(l, crcs, c, {}, Address, {});
  ASSERT_THAT(base, IsOk());
  const node::RebuildEcColumnRequest r = RangeRequest(*base, crcs, 3, 0, 4);
  EXPECT_FALSE(r.has_row_count());
  EXPECT_EQ(r.cell_crc32c_size(), 2 * 9);
  EXPECT_EQ(r.cell_crc32c(0), crcs.crcs[3 * 9]);
}

TEST(EcRebuildTest, RefusesATableOfTheWrongSize) {
  const v1::FileLayout l = Coded(5);
  CellCrcTable crcs = Table(5);
  crcs.crcs.pop_back();
  const EcColumnRepair c{.column = 0, .object = "f/c0", .target_node = "n9"};
  EXPECT_THAT(RebuildRequest(l, crcs, c, {}, Address, {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("44 entries; 5 rows of 9 cells need 45")));
  EXPECT_THAT(RebuildRequest(l, CellCrcTable{}, c, {}, Address, {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no readable .cells object")));
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
