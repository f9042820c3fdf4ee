#include "repair/ec_cells.h"

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_test_layout.h"

namespace rangefs {
namespace keeper {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int kK = 3, kM = 2;
constexpr uint64_t kCell = 64;

// An RS(3,2) file of `size` bytes, its objects in memory as fsck and the
// keeper would read them through the agents.
class EcCellsTest : public ::testing::Test {
 protected:
  void Build(uint64_t size) {
    codec_ = *ec::NewCodec({.k = kK, .m = kM});
    std::mt19937 gen(7);
    data_.resize(size);
    for (char& c : data_) c = static_cast<char>(gen());
    layout_ = ns::EcTestLayout(kK, kM, kCell, size, "f/c");
    g_ = ns::EcGeometryOf(layout_);
    std::vector<std::string> cols(kK + kM);
    std::string cells;
    for (uint64_t row = 0; row < g_.rows; ++row) {
      std::vector<std::string> in(kK, std::string(kCell, '\0'));
      std::vector<absl::Span<const char>> spans;
      std::vector<uint32_t> crcs;
      for (int c = 0; c < kK; ++c) {
        const uint64_t n = ns::DataCellBytes(g_, row, c);
        if (n > 0) data_.copy(in[c].data(), n, (row * kK + c) * kCell);
        cols[c].append(in[c].data(), n);
        crcs.push_back(Crc32c(absl::string_view(in[c].data(), n)));
        spans.emplace_back(in[c].data(), kCell);
      }
      std::vector<std::string> par(kM, std::string(kCell, '\0'));
      std::vector<absl::Span<char>> outs;
      for (std::string& p : par) outs.emplace_back(p.data(), p.size());
      ASSERT_THAT(codec_->Encode(spans, outs), IsOk());
      for (int j = 0; j < kM; ++j) {
        cols[kK + j] += par[j];
        crcs.push_back(Crc32c(par[j]));
      }
      for (uint32_t v : crcs) {
        for (int b = 0; b < 4; ++b)
          cells.push_back(static_cast<char>(v >> (8 * b)));
      }
    }
    for (int t = 0; t < kK + kM; ++t) {
      objects_[{absl::StrCat("n", t), absl::StrCat("f/c", t)}] = cols[t];
      if (t >= kK) {
        objects_[{absl::StrCat("n", t), absl::StrCat("f/c", t, ".cells")}] =
            cells;
      }
    }
  }

  ObjectReader Reader() {
    return [this](const std::string& node, const std::string& object,
                  uint64_t offset,
                  absl::Span<char> dst) -> absl::StatusOr<size_t> {
      auto it = objects_.find({node, object});
      if (it == objects_.end()) return absl::NotFoundError(object);
      const std::string& b = it->second;
      if (offset >= b.size()) return size_t{0};
      const size_t n = std::min<uint64_t>(dst.size(), b.size() - offset);
      b.copy(dst.data(), n, offset);
      return n;
    };
  }

  std::string& Object(int t) {
    return objects_[{absl::StrCat("n", t), absl::StrCat("f/c", t)}];
  }

  std::unique_ptr<ec::Codec> codec_;
  std::string data_;
  v1::FileLayout layout_;
  ns::EcGeometry g_;
  std::map<std::pair<std::string, std::string>, std::string> objects_;
};

TEST_F(EcCellsTest, CleanRowsAreHealthy) {
  Build(4 * kK * kCell + 70);  // 4 full rows and a partial one
  const CellCrcTable crcs = ReadCellCrcs(Reader(), layout_);
  ASSERT_FALSE(crcs.empty());
  EXPECT_THAT(crcs.problems, ElementsAre("", ""));
  const std::string stored = objects_[{"n3", "f/c3.cells"}];
  EXPECT_TRUE(CellsObjectBytes(crcs) == stored);
  for (uint64_t row = 0; row < g_.rows; ++row) {
    RowHealth h =
        CheckRow(*codec_, g_, row, ReadRow(Reader(), layout_, row), crcs);
    EXPECT_THAT(h.lost, IsEmpty()) << row;
    EXPECT_THAT(h.corrupt, IsEmpty()) << row;
    EXPECT_EQ(h.survivors, kK + kM);
  }
}

TEST_F(EcCellsTest, CorruptAndMissingCellsAreNamed) {
  Build(3 * kK * kCell);
  Object(1)[kCell + 5] ^= 1;       // data column 1, row 1
  Object(kK + 1)[2 * kCell] ^= 1;  // parity column 1, row 2
  objects_.erase({"n0", "f/c0"});  // data column 0: every row lost
  const CellCrcTable crcs = ReadCellCrcs(Reader(), layout_);
  RowHealth r1 = CheckRow(*codec_, g_, 1, ReadRow(Reader(), layout_, 1), crcs);
  EXPECT_THAT(r1.lost, ElementsAre(0));
  EXPECT_THAT(r1.corrupt, ElementsAre(1));
  EXPECT_THAT(r1.why[0], HasSubstr("missing"));
  EXPECT_EQ(r1.survivors, 3);
  RowHealth r2 = CheckRow(*codec_, g_, 2, ReadRow(Reader(), layout_, 2), crcs);
  EXPECT_THAT(r2.corrupt, ElementsAre(kK + 1));
}

TEST_F(EcCellsTest, ParityDifferingFromTheCodecIsCaughtWithoutCrcs) {
  Build(2 * kK * kCell);
  Object(kK)[3] ^= 0x40;
  objects_.erase({"n3", "f/c3.cells"});
  objects_.erase({"n4", "f/c4.cells"});
  const CellCrcTable crcs = ReadCellCrcs(Reader(), layout_);
  EXPECT_TRUE(crcs.empty());
  RowHealth h = CheckRow(*codec_, g_, 0, ReadRow(Reader(), layout_, 0), crcs);
  EXPECT_THAT(h.corrupt, ElementsAre(kK));
  EXPECT_THAT(h.why[kK], HasSubstr("recomputed"));
}

TEST_F(EcCellsTest, CellCrcsAreRecomputedWhenEveryCellsObjectIsLost) {
  Build(3 * kK * kCell + kCell + 9);
  const CellCrcTable stored = ReadCellCrcs(Reader(), layout_);
  objects_.erase({"n3", "f/c3.cells"});
  objects_.erase({"n4", "f/c4.cells"});
  objects_.erase({"n4", "f/c4"});
  auto fresh = ComputeCellCrcs(Reader(), *codec_, layout_, {kK + 1});
  ASSERT_THAT(fresh, IsOk());
  EXPECT_EQ(fresh->crcs, stored.crcs);
  auto got =
      RebuildCell(Reader(), *codec_, layout_, *fresh, 1, kK + 1, {kK + 1});
  ASSERT_THAT(got, IsOk());
  objects_.erase({"n0", "f/c0"});
  EXPECT_THAT(ComputeCellCrcs(Reader(), *codec_, layout_, {0, kK + 1}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(EcCellsTest, DisagreeingCellsObjectIsOutvoted) {
  Build(2 * kK * kCell);
  objects_[{"n4", "f/c4.cells"}][0] ^= 1;
  const CellCrcTable crcs = ReadCellCrcs(Reader(), layout_);
  EXPECT_EQ(crcs.problems[0], "");
  EXPECT_THAT(crcs.problems[1], HasSubstr("checksum mismatch"));
}

TEST_F(EcCellsTest, RebuildsEveryCellAndSkipsACorruptSurvivor) {
  Build(2 * kK * kCell + kCell + 9);
  const CellCrcTable crcs = ReadCellCrcs(Reader(), layout_);
  for (uint64_t row = 0; row < g_.rows; ++row) {
    for (int t = 0; t < kK + kM; ++t) {
      const uint64_t at = row * kCell;
      const uint64_t n = CellStoredBytes(g_, row, t);
      const std::string want = n == 0 ? "" : Object(t).substr(at, n);
      uint64_t read = 0;
      auto got =
          RebuildCell(Reader(), *codec_, layout_, crcs, row, t, {t}, &read);
      ASSERT_THAT(got, IsOk()) << row << " " << t;
      EXPECT_TRUE(*got == want) << row << " " << t;
      EXPECT_LE(read, kK * kCell);
    }
  }
  Object(0)[1] ^= 1;  // a corrupt survivor: another is read instead
  auto got = RebuildCell(Reader(), *codec_, layout_, crcs, 0, 2, {2});
  ASSERT_THAT(got, IsOk());
  EXPECT_TRUE(*got == data_.substr(2 * kCell, kCell));
  objects_.erase({"n1", "f/c1"});
  objects_.erase({"n3", "f/c3"});
  EXPECT_THAT(RebuildCell(Reader(), *codec_, layout_, crcs, 0, 2, {2}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("only 1 good")));
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
