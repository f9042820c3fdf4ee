#include "keeper/convert_rows.h"

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "base/testing/status_matchers.h"
#include "ec/codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "repair/ec_cells.h"

namespace rangefs {
namespace keeper {
namespace {

constexpr uint64_t kCell = 4096;

std::string Random(uint64_t size) {
  std::string s(size, '\0');
  std::mt19937_64 gen(7);
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

std::string Drain(ColumnStream s) {
  std::string out;
  char buf[1000];
  for (;;) {
    auto n = s.Read(absl::MakeSpan(buf, sizeof(buf)));
    EXPECT_THAT(n, IsOk());
    if (!n.ok() || *n == 0) return out;
    out.append(buf, *n);
  }
}

// The columns written from ConvertRows are a valid RS(4, 2) file: the
// shared cell checker (repair/ec_cells.h) finds every row clean and the
// .cells object equal to one it computes itself.
TEST(ConvertRowsTest, ColumnsAndCellsFormACleanCodedFile) {
  const int k = 4, m = 2;
  const std::string file = Random(3 * k * kCell + kCell + 100);  // partial row
  ns::EcGeometry g;
  g.k = k;
  g.m = m;
  g.cell = kCell;
  g.size = file.size();
  g.rows = (g.size + k * kCell - 1) / (k * kCell);
  auto codec = ec::NewCodec({.k = k, .m = m});
  ASSERT_THAT(codec, IsOk());
  std::atomic<int> reads{0};
  ConvertRows rows(g, **codec,
                   [&](uint64_t row, int c) -> absl::StatusOr<std::string> {
                     ++reads;
                     const uint64_t at = (row * k + c) * kCell;
                     return file.substr(at, ns::DataCellBytes(g, row, c));
                   });
  v1::FileLayout l;
  l.set_size(g.size);
  l.set_state(v1::READY_EC);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(kCell);
  auto* s = l.mutable_striped();
  s->set_stripe_unit(kCell);
  s->mutable_erasure()->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  s->mutable_erasure()->set_data_columns(k);
  s->mutable_erasure()->set_parity_columns(m);
  std::map<std::string, std::string> objects;
  for (int t = 0; t < k + m; ++t) {
    auto* r = s->add_targets()->add_replicas();
    r->set_node_id(absl::StrCat("n", t));
    r->set_object(absl::StrCat("c", t));
    objects[r->object()] = Drain(ColumnStream(rows, t));
    EXPECT_EQ(objects[r->object()].size(), ns::EcColumnBytes(g, t)) << t;
  }
  EXPECT_EQ(rows.bytes_read(), file.size());
  // Each row read once: the writers stayed within kCachedRows.
  EXPECT_EQ(reads.load(), 3 * k + 2);  // the last row: one full cell, 100 bytes
  auto cells = rows.CellsObject();
  ASSERT_THAT(cells, IsOk());
  ObjectReader read = [&](const std::string&, const std::string& object,
                          uint64_t offset,
                          absl::Span<char> dst) -> absl::StatusOr<size_t> {
    auto it = objects.find(object);
    if (it == objects.end()) return absl::NotFoundError(object);
    if (offset >= it->second.size()) return size_t{0};
    const size_t n = std::min<size_t>(dst.size(), it->second.size() - offset);
    std::memcpy(dst.data(), it->second.data() + offset, n);
    return n;
  };
  auto fresh = ComputeCellCrcs(read, **codec, l, {});
  ASSERT_THAT(fresh, IsOk());
  EXPECT_EQ(*cells, CellsObjectBytes(*fresh));
  for (int j = 0; j < m; ++j)
    objects[absl::StrCat("c", k + j, ".cells")] = *cells;
  const CellCrcTable crcs = ReadCellCrcs(read, l);
  for (uint64_t r = 0; r < g.rows; ++r) {
    RowHealth h = CheckRow(**codec, g, r, ReadRow(read, l, r), crcs);
    EXPECT_EQ(h.survivors, k + m) << "row " << r;
  }
  // The data columns hold the file's bytes as a plain striping of width k.
  std::string back;
  for (uint64_t r = 0; r < g.rows; ++r) {
    for (int c = 0; c < k; ++c) {
      back += objects[absl::StrCat("c", c)].substr(r * kCell,
                                                   ns::DataCellBytes(g, r, c));
    }
  }
  EXPECT_EQ(back, file);
}

// While the writers take row 0, row 1 is already being read: row 0's
// reads return only once row 1's have started (bounded: the test fails
// after 30 s without the read-ahead instead of hanging).
TEST(ConvertRowsTest, ReadsRowsAheadOfTheWriters) {
  const int k = 2, m = 1;
  const std::string file = Random(3 * k * kCell);
  ns::EcGeometry g{
      .k = k, .m = m, .cell = kCell, .size = file.size(), .rows = 3};
  auto codec = ec::NewCodec({.k = k, .m = m});
  ASSERT_THAT(codec, IsOk());
  absl::Notification row1_started;
  ConvertRows rows(
      g, **codec, [&](uint64_t row, int c) -> absl::StatusOr<std::string> {
        if (row == 1 && c == 0) row1_started.Notify();
        if (row == 0) {
          EXPECT_TRUE(
              row1_started.WaitForNotificationWithTimeout(absl::Seconds(30)));
        }
        return file.substr((row * k + c) * kCell, kCell);
      });
  auto r0 = rows.Row(0);
  ASSERT_THAT(r0, IsOk());
  EXPECT_EQ((*r0)->cells[0], file.substr(0, kCell));
  EXPECT_TRUE(row1_started.HasBeenNotified());
  for (uint64_t r = 1; r < g.rows; ++r) EXPECT_THAT(rows.Row(r), IsOk());
  EXPECT_THAT(rows.CellsObject(), IsOk());
}

TEST(ConvertRowsTest, AShortSourceCellIsDataLoss) {
  ns::EcGeometry g{.k = 2, .m = 1, .cell = kCell, .size = 2 * kCell, .rows = 1};
  auto codec = ec::NewCodec({.k = 2, .m = 1});
  ASSERT_THAT(codec, IsOk());
  ConvertRows rows(g, **codec,
                   [](uint64_t, int) -> absl::StatusOr<std::string> {
                     return std::string(10, 'x');
                   });
  EXPECT_THAT(rows.Row(0).status(), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(rows.CellsObject().status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
