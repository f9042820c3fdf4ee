#include "namespace/ec_layout.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "namespace/layout.h"

namespace rangefs {
namespace ns {
namespace {

// RS(k+m) over `size` bytes, cell `unit`; column t on node nt, object ct.
v1::FileLayout Coded(uint64_t size, uint64_t unit, int k, int m) {
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY_EC);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(static_cast<uint32_t>(unit));
  v1::StripedLayout* s = l.mutable_striped();
  s->set_stripe_unit(unit);
  s->mutable_erasure()->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  s->mutable_erasure()->set_data_columns(static_cast<uint32_t>(k));
  s->mutable_erasure()->set_parity_columns(static_cast<uint32_t>(m));
  for (int t = 0; t < k + m; ++t) {
    v1::Replica* r = s->add_targets()->add_replicas();
    r->set_node_id("n" + std::to_string(t));
    r->set_object("f/c" + std::to_string(t));
    r->set_object_offset(t == k ? 1000 : 0);  // parity 0 starts at 1000
  }
  return l;
}

TEST(EcLayoutTest, GeometryAndCellAddressing) {
  // 6+3, cell 10: a row is 60 bytes; 125 bytes = 2 full rows + 5 bytes.
  const v1::FileLayout l = Coded(125, 10, 6, 3);
  ASSERT_TRUE(ValidateLayout(l).ok()) << ValidateLayout(l);
  EXPECT_TRUE(IsErasureCoded(l));
  EXPECT_TRUE(IsReady(l));
  EXPECT_EQ(DataColumnCount(l.striped()), 6);
  const EcGeometry g = EcGeometryOf(l);
  EXPECT_EQ(g.k, 6);
  EXPECT_EQ(g.m, 3);
  EXPECT_EQ(g.cell, 10u);
  EXPECT_EQ(g.rows, 3u);
  CellAddress a = LocateCell(g, 0);
  EXPECT_EQ(a.row, 0u);
  EXPECT_EQ(a.column, 0);
  EXPECT_EQ(a.offset_in_cell, 0u);
  a = LocateCell(g, 59);
  EXPECT_EQ(a.row, 0u);
  EXPECT_EQ(a.column, 5);
  EXPECT_EQ(a.offset_in_cell, 9u);
  a = LocateCell(g, 73);
  EXPECT_EQ(a.row, 1u);
  EXPECT_EQ(a.column, 1);
  EXPECT_EQ(a.offset_in_cell, 3u);
  a = LocateCell(g, 124);
  EXPECT_EQ(a.row, 2u);
  EXPECT_EQ(a.column, 0);
  EXPECT_EQ(a.offset_in_cell, 4u);
  // The last row holds 5 bytes in column 0 and nothing in 1..5.
  EXPECT_EQ(DataCellBytes(g, 1, 5), 10u);
  EXPECT_EQ(DataCellBytes(g, 2, 0), 5u);
  EXPECT_EQ(DataCellBytes(g, 2, 1), 0u);
  EXPECT_EQ(EcColumnBytes(g, 0), 25u);
  EXPECT_EQ(EcColumnBytes(g, 1), 20u);
  EXPECT_EQ(EcColumnBytes(g, 6), 30u);  // parity: full cells, every row
  EXPECT_EQ(EcColumnBytes(g, 8), 30u);
  // Data columns sum to the file; parity is rows x cell per column.
  uint64_t data = 0;
  for (int t = 0; t < g.k; ++t) data += EcColumnBytes(g, t);
  EXPECT_EQ(data, 125u);
}

TEST(EcLayoutTest, ParityAndCellChecksumObjects) {
  const v1::FileLayout l = Coded(125, 10, 6, 3);
  const EcGeometry g = EcGeometryOf(l);
  EXPECT_EQ(ParityReplica(l, 0).node_id(), "n6");
  EXPECT_EQ(ParityReplica(l, 2).object(), "f/c8");
  EXPECT_EQ(DataReplica(l, 5).node_id(), "n5");
  EXPECT_EQ(CellObjectOffset(ParityReplica(l, 0), g, 2), 1020u);
  EXPECT_EQ(CellObjectOffset(ParityReplica(l, 1), g, 2), 20u);
  EXPECT_EQ(EcCellsObject("f/c6"), "f/c6.cells");
  EXPECT_EQ(EcCellsOffset(g, 0), 0u);
  EXPECT_EQ(EcCellsOffset(g, 2), 2u * 9 * 4);
  EXPECT_EQ(EcCellsBytes(g), 3u * 9 * 4);
}

TEST(EcLayoutTest, MapRangeReadsDataColumnsOnly) {
  const v1::FileLayout l = Coded(125, 10, 6, 3);
  const std::vector<Piece> pieces = MapRange(l, 0, 125, 0);
  ASSERT_EQ(pieces.size(), 13u);  // 12 full cells + 5 bytes
  uint64_t covered = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    EXPECT_LT(p.unit, 6u) << "piece " << i << " maps onto a parity column";
    const CellAddress a = LocateCell(EcGeometryOf(l), p.offset);
    EXPECT_EQ(p.unit, static_cast<uint32_t>(a.column));
    EXPECT_EQ(p.object_delta, a.row * 10 + a.offset_in_cell);
    EXPECT_EQ((*p.replicas)[0].object(), "f/c" + std::to_string(a.column));
    covered += p.length;
  }
  EXPECT_EQ(covered, 125u);
  // Byte 73 is row 1, column 1, 3 into the cell.
  const std::vector<Piece> one = MapRange(l, 73, 1, 0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].unit, 1u);
  EXPECT_EQ(one[0].object_delta, 13u);
}

TEST(EcLayoutTest, PlainLayoutsAreNotCoded) {
  v1::FileLayout l = Coded(125, 10, 6, 3);
  l.mutable_striped()->clear_erasure();
  l.set_state(v1::READY);
  EXPECT_FALSE(IsErasureCoded(l));
  EXPECT_EQ(DataColumnCount(l.striped()), 9);
  EXPECT_EQ(EcGeometryOf(l).k, 0);
  EXPECT_TRUE(ValidateErasureCode(l).ok());
  l.set_state(v1::IMPORTING);
  EXPECT_FALSE(IsReady(l));
}

TEST(EcLayoutTest, EncodesCellCrcsLittleEndian) {
  const std::vector<uint32_t> crcs = {0x04030201u, 0xa0b0c0d0u};
  EXPECT_EQ(EncodeEcCellCrcs(crcs),
            std::string("\x01\x02\x03\x04\xd0\xc0\xb0\xa0", 8));
  EXPECT_EQ(EncodeEcCellCrcs({}), "");
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
