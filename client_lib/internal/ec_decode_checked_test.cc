#include "client_lib/internal/ec_decode_checked.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "base/crc32c.h"
#include "ec/codec.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

constexpr int kK = 6;
constexpr int kM = 3;

// An RS(6,3) row of `len`-byte cells: random data, encoded parity.
struct Row {
  explicit Row(size_t len) : cells(kK + kM, std::string(len, '\0')) {
    std::mt19937 rng(7);
    for (int t = 0; t < kK; ++t) {
      for (char& c : cells[t]) c = static_cast<char>(rng());
    }
    codec =
        *ec::NewCodec({.kind = ec::CodecKind::kRsCauchyGf8, .k = kK, .m = kM});
    std::vector<absl::Span<const char>> data;
    std::vector<absl::Span<char>> parity;
    for (int t = 0; t < kK; ++t) data.emplace_back(cells[t]);
    for (int t = kK; t < kK + kM; ++t) parity.emplace_back(&cells[t][0], len);
    EXPECT_TRUE(codec->Encode(data, parity).ok());
  }
  // The cells a rebuild of `lost` decodes from: all but it and parity 1, 2.
  std::vector<const char*> Sources(int lost) const {
    std::vector<const char*> s(kK + kM, nullptr);
    for (int t = 0; t < kK + 1; ++t) {
      if (t != lost) s[t] = cells[t].data();
    }
    return s;
  }
  std::vector<std::string> cells;
  std::unique_ptr<ec::Codec> codec;
};

uint32_t Crc(const std::string& s) {
  return Crc32cExtend(0, s.data(), s.size());
}

TEST(EcDecodeCheckedTest, SlicedDecodeRebuildsTheCellAndChecksItsCrc) {
  // 3 slices and a partial one; a slice of 1 byte; one slice for it all.
  const size_t len = 3 * 4096 + 100;
  const Row row(len);
  for (size_t slice : {size_t{4096}, size_t{1}, len, kEcDecodeSlice}) {
    std::string out(len, '\0');
    bool crc_ok = false;
    ASSERT_TRUE(DecodeChecked(*row.codec, row.Sources(2), 2, out.data(), len,
                              /*check=*/true, Crc(row.cells[2]), &crc_ok, slice)
                    .ok());
    EXPECT_TRUE(crc_ok) << slice;
    EXPECT_TRUE(out == row.cells[2]) << slice;
  }
}

TEST(EcDecodeCheckedTest, AWrongSourceInAnySliceFailsTheCheck) {
  const size_t len = 3 * 4096;
  for (size_t at : {size_t{10}, size_t{4096 + 5}, len - 1}) {
    Row row(len);
    const uint32_t crc = Crc(row.cells[0]);
    row.cells[4][at] ^= 1;  // a survivor's byte wrong (unverified read)
    std::string out(len, '\0');
    bool crc_ok = true;
    ASSERT_TRUE(DecodeChecked(*row.codec, row.Sources(0), 0, out.data(), len,
                              /*check=*/true, crc, &crc_ok, 4096)
                    .ok());
    EXPECT_FALSE(crc_ok) << "byte " << at;
  }
}

TEST(EcDecodeCheckedTest, WithoutACheckTheResultIsNotJudged) {
  const size_t len = 5000;
  const Row row(len);
  std::string out(len, '\0');
  bool crc_ok = false;
  ASSERT_TRUE(DecodeChecked(*row.codec, row.Sources(5), 5, out.data(), len,
                            /*check=*/false, /*crc=*/0, &crc_ok, 4096)
                  .ok());
  EXPECT_TRUE(crc_ok);
  EXPECT_TRUE(out == row.cells[5]);
}

TEST(EcDecodeCheckedTest, TheCodecsRefusalIsReturned) {
  const size_t len = 4096;
  const Row row(len);
  std::vector<const char*> few(kK + kM, nullptr);
  few[1] = row.cells[1].data();  // 1 cell of the 6 needed
  std::string out(len, '\0');
  bool crc_ok = true;
  EXPECT_FALSE(DecodeChecked(*row.codec, few, 0, out.data(), len,
                             /*check=*/true, 0, &crc_ok)
                   .ok());
  EXPECT_FALSE(crc_ok);
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
