#include "ingest/ec_rows.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "ec/codec.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace ingest {
namespace {

constexpr uint64_t kCell = 4096;

// Parity column j of `data` coded independently, row by row.
std::string ExpectedParity(const std::string& data, const ec::Codec& codec,
                           const ns::EcGeometry& g, int j) {
  std::string out;
  for (uint64_t r = 0; r < g.rows; ++r) {
    std::vector<std::string> cells(static_cast<size_t>(g.k),
                                   std::string(kCell, '\0'));
    std::vector<absl::Span<const char>> in;
    for (int c = 0; c < g.k; ++c) {
      const uint64_t at = (r * static_cast<uint64_t>(g.k) + c) * kCell;
      if (at < data.size()) {
        data.copy(cells[c].data(), std::min<uint64_t>(kCell, data.size() - at),
                  at);
      }
      in.emplace_back(cells[c].data(), kCell);
    }
    std::vector<std::string> parity(static_cast<size_t>(g.m),
                                    std::string(kCell, '\0'));
    std::vector<absl::Span<char>> outs;
    for (std::string& p : parity) outs.emplace_back(p.data(), p.size());
    EXPECT_TRUE(codec.Encode(in, outs).ok());
    out += parity[static_cast<size_t>(j)];
  }
  return out;
}

class EcRowsTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(EcRowsTest, ParityColumnsAndCellCrcsMatchTheCodec) {
  const uint64_t size = GetParam();
  auto dir = testing::ScopedTempDir::Make("ec_rows");
  ASSERT_THAT(dir, IsOk());
  const std::string path = dir->path() + "/f";
  std::string data(size, '\0');
  std::mt19937 gen(static_cast<unsigned>(size));
  for (char& ch : data) ch = static_cast<char>(gen());
  std::ofstream(path, std::ios::binary) << data;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  absl::StatusOr<std::unique_ptr<ec::Codec>> codec =
      ec::NewCodec({.k = 6, .m = 3});
  ASSERT_THAT(codec, IsOk());
  ns::EcGeometry g{.k = 6, .m = 3, .cell = kCell, .size = size};
  g.rows = (size + 6 * kCell - 1) / (6 * kCell);
  ParityRows rows(fd, path, g, **codec);
  for (int j = 0; j < 3; ++j) {
    ParityColumnReader reader(rows, j);
    std::string got;
    std::vector<char> buf(1000);  // not a divisor of the cell
    for (;;) {
      absl::StatusOr<size_t> n = reader.Read(absl::MakeSpan(buf));
      ASSERT_THAT(n, IsOk());
      if (*n == 0) break;
      got.append(buf.data(), *n);
    }
    EXPECT_EQ(got.size(), g.rows * kCell);
    EXPECT_TRUE(got == ExpectedParity(data, **codec, g, j)) << "column " << j;
  }
  absl::StatusOr<std::string> cells = rows.CellsObject();
  ASSERT_THAT(cells, IsOk());
  ASSERT_EQ(cells->size(), g.rows * 9 * 4);
  for (uint64_t r = 0; r < g.rows; ++r) {
    for (int c = 0; c < 6; ++c) {
      const uint64_t at = (r * 6 + c) * kCell;
      const std::string cell =
          at < size ? data.substr(at, std::min<uint64_t>(kCell, size - at))
                    : "";
      uint32_t stored = 0;
      for (int b = 0; b < 4; ++b) {
        stored |=
            uint32_t{static_cast<unsigned char>((*cells)[(r * 9 + c) * 4 + b])}
            << (8 * b);
      }
      EXPECT_EQ(stored, Crc32c(cell)) << "row " << r << " cell " << c;
    }
  }
  close(fd);
}

INSTANTIATE_TEST_SUITE_P(EdgeSizes, EcRowsTest,
                         ::testing::Values(1, kCell - 1, kCell + 1,
                                           6 * kCell - 1, 6 * kCell,
                                           6 * kCell + 1, 20 * 6 * kCell + 77));

TEST(EcRowsCellsTest, RefusesBeforeEveryRowWasCoded) {
  absl::StatusOr<std::unique_ptr<ec::Codec>> codec =
      ec::NewCodec({.k = 2, .m = 1});
  ASSERT_THAT(codec, IsOk());
  ParityRows rows(-1, "none",
                  {.k = 2, .m = 1, .cell = kCell, .size = 10, .rows = 1},
                  **codec);
  EXPECT_THAT(rows.CellsObject().status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace ingest
}  // namespace rangefs
