#include "ec/codec.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "ec/naive_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace ec {
namespace {

using ::testing::HasSubstr;

// One row: k data cells of random bytes, then m parity cells.
struct Row {
  std::vector<std::string> cells;
};

Row RandomRow(int k, int m, size_t len, uint32_t seed) {
  std::mt19937 rng(seed);
  Row row;
  for (int i = 0; i < k + m; ++i) {
    std::string cell(len, '\0');
    if (i < k) {
      for (char& c : cell) c = static_cast<char>(rng());
    }
    row.cells.push_back(std::move(cell));
  }
  return row;
}

absl::Status EncodeRow(const Codec& codec, Row& row) {
  std::vector<absl::Span<const char>> data;
  std::vector<absl::Span<char>> parity;
  for (int i = 0; i < codec.k() + codec.m(); ++i) {
    if (i < codec.k()) {
      data.emplace_back(row.cells[i]);
    } else {
      parity.emplace_back(&row.cells[i][0], row.cells[i].size());
    }
  }
  return codec.Encode(data, parity);
}

std::unique_ptr<Codec> MustMake(
    const std::function<
        absl::StatusOr<std::unique_ptr<Codec>>(const CodecSpec&)>& factory,
    int k, int m) {
  absl::StatusOr<std::unique_ptr<Codec>> codec = factory({.k = k, .m = m});
  EXPECT_THAT(codec, IsOk());
  return codec.ok() ? *std::move(codec) : nullptr;
}

// Drops the cells in `lost` from `row`, rebuilds them with `codec`
// (wanted in the order given) and checks the bytes.
void ExpectRebuilds(const Codec& codec, const Row& row,
                    const std::vector<int>& lost) {
  std::vector<const char*> cells;
  for (const std::string& c : row.cells) cells.push_back(c.data());
  for (int i : lost) cells[i] = nullptr;
  const size_t len = row.cells[0].size();
  std::vector<std::string> outs(lost.size(), std::string(len, '\x5a'));
  std::vector<char*> out;
  for (std::string& o : outs) out.push_back(&o[0]);
  ASSERT_THAT(codec.Decode(cells, lost, out, len), IsOk());
  for (size_t j = 0; j < lost.size(); ++j) {
    ASSERT_EQ(outs[j], row.cells[lost[j]])
        << "cell " << lost[j] << " of pattern "
        << ::testing::PrintToString(lost);
  }
}

// Every way to choose `count` of `n` cells, in lexicographic order.
void ForEachCombination(int n, int count,
                        const std::function<void(const std::vector<int>&)>& f,
                        std::vector<int> prefix = {}) {
  if (static_cast<int>(prefix.size()) == count) {
    f(prefix);
    return;
  }
  for (int i = prefix.empty() ? 0 : prefix.back() + 1; i < n; ++i) {
    prefix.push_back(i);
    ForEachCombination(n, count, f, prefix);
    prefix.pop_back();
  }
}

using Factory = absl::StatusOr<std::unique_ptr<Codec>> (*)(const CodecSpec&);

class CodecTest : public ::testing::TestWithParam<Factory> {};

INSTANTIATE_TEST_SUITE_P(Implementations, CodecTest,
                         ::testing::Values(&NewCodec, &NewNaiveCodec),
                         [](const ::testing::TestParamInfo<Factory>& info) {
                           return info.index == 0 ? std::string("Isal")
                                                  : std::string("Naive");
                         });

TEST(CodecParity, IsalAndNaiveComputeTheSameParity) {
  const std::vector<std::pair<int, int>> shapes = {
      {1, 1}, {2, 1}, {4, 2}, {6, 3}, {10, 4}, {12, 4}, {16, 16}, {28, 4}};
  const std::vector<size_t> lens = {
      0, 1, 2, 31, 32, 33, 4095, 4096, 4097, 65535, (1u << 20) + 3};
  uint32_t seed = 1;
  for (auto [k, m] : shapes) {
    std::unique_ptr<Codec> isal = MustMake(&NewCodec, k, m);
    std::unique_ptr<Codec> naive = MustMake(&NewNaiveCodec, k, m);
    ASSERT_TRUE(isal && naive);
    for (size_t len : lens) {
      if (len > 65536 && k * m > 18) continue;  // the naive loop is slow
      Row a = RandomRow(k, m, len, seed++);
      Row b = a;
      ASSERT_THAT(EncodeRow(*isal, a), IsOk());
      ASSERT_THAT(EncodeRow(*naive, b), IsOk());
      for (int p = k; p < k + m; ++p) {
        ASSERT_EQ(a.cells[p], b.cells[p])
            << "RS(" << k << "," << m << ") len " << len << " parity " << p;
      }
    }
  }
}

// FORMAT (codec.h): these bytes are on disk. If this test fails, the
// matrix, the field or the cell order changed: that is a format change and
// needs a new CodecKind, not a new golden vector.
TEST_P(CodecTest, GoldenParityRs63) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row;
  for (int i = 0; i < 9; ++i) {
    std::string cell(8, '\0');
    for (int j = 0; j < 8; ++j) {
      cell[j] = i < 6 ? static_cast<char>(i * 37 + j * 11 + 1) : 0;
    }
    row.cells.push_back(cell);
  }
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  std::string hex;
  for (int p = 6; p < 9; ++p) {
    for (char c : row.cells[p]) {
      absl::StrAppend(
          &hex, absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    }
    if (p < 8) hex += " ";
  }
  // Also computed independently (shift-and-add GF(2^8) multiplication, rows
  // 1 / (i ^ j)) when this vector was written.
  EXPECT_EQ(hex, "d46de1da9bfea7ad 65a77d2218102dff d994bfe457290c4a");
}

TEST_P(CodecTest, Rs63EveryPatternOfUpToThreeLostCells) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(6, 3, 4099, 63);
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  int patterns = 0;
  for (int lost = 1; lost <= 3; ++lost) {
    ForEachCombination(9, lost, [&](const std::vector<int>& cells) {
      ExpectRebuilds(*codec, row, cells);
      ++patterns;
    });
  }
  EXPECT_EQ(patterns, 9 + 36 + 84);
}

TEST_P(CodecTest, Rs104RandomPatterns) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 10, 4);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(10, 4, 1000, 104);
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  std::mt19937 rng(104);
  for (int round = 0; round < 200; ++round) {
    std::vector<int> all(14);
    for (int i = 0; i < 14; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    // 1..4 lost, listed in a random order (outputs follow that order).
    all.resize(1 + rng() % 4);
    ExpectRebuilds(*codec, row, all);
  }
}

TEST_P(CodecTest, RebuildsFromAnyExtraPresentCells) {
  // More than k present: any k of them are enough, the result is the same.
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(6, 3, 777, 7);
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  ExpectRebuilds(*codec, row, {0});
  ExpectRebuilds(*codec, row, {8});
  ExpectRebuilds(*codec, row, {8, 0});
}

// A PassRunner runs the pass over the bytes (a decode through it rebuilds
// the same bytes); one that says the pass was cut off makes the decode
// DATA_LOSS.
int passes_run = 0;
bool RunPass(absl::FunctionRef<void()> pass) {
  ++passes_run;
  pass();
  return true;
}
bool CutPass(absl::FunctionRef<void()>) { return false; }

TEST_P(CodecTest, DecodeRunsItsPassThroughTheRunnerGiven) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(6, 3, 4096, 11);
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  std::vector<const char*> cells;
  for (const std::string& c : row.cells) cells.push_back(c.data());
  cells[2] = nullptr;
  std::string out(4096, '\0');
  char* const outs[] = {&out[0]};
  passes_run = 0;
  ASSERT_THAT(codec->Decode(cells, {2}, outs, out.size(), RunPass), IsOk());
  EXPECT_EQ(passes_run, 1);
  EXPECT_TRUE(out == row.cells[2]);
  EXPECT_THAT(codec->Decode(cells, {2}, outs, out.size(), CutPass),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut off")));
}

TEST_P(CodecTest, FewerThanKPresentIsAClearError) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(6, 3, 64, 5);
  std::vector<const char*> cells;
  for (const std::string& c : row.cells) cells.push_back(c.data());
  cells[0] = cells[3] = cells[5] = cells[7] = nullptr;
  std::string a(64, 'a'), b(64, 'b'), c(64, 'c'), d(64, 'd');
  std::vector<char*> out = {&a[0], &b[0], &c[0], &d[0]};
  EXPECT_THAT(codec->Decode(cells, {0, 3, 5, 7}, out, 64),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("5 cells present, RS(6,3) needs 6")));
  EXPECT_EQ(a, std::string(64, 'a'));  // nothing written
}

TEST_P(CodecTest, RejectsBadDecodeArguments) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(6, 3, 16, 9);
  std::vector<const char*> cells;
  for (const std::string& c : row.cells) cells.push_back(c.data());
  cells[2] = nullptr;
  std::string o(16, 'o'), p(16, 'p');
  char* one[] = {&o[0]};
  char* two[] = {&o[0], &p[0]};
  const auto invalid = [](absl::string_view what) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
  };
  EXPECT_THAT(codec->Decode(cells, {3}, one, 16), invalid("cell 3 is present"));
  EXPECT_THAT(codec->Decode(cells, {9}, one, 16), invalid("not in [0, 9)"));
  EXPECT_THAT(codec->Decode(cells, {-1}, one, 16), invalid("not in [0, 9)"));
  EXPECT_THAT(codec->Decode(cells, {2, 2}, two, 16), invalid("listed twice"));
  EXPECT_THAT(codec->Decode(cells, {2}, two, 16), invalid("2 outputs"));
  EXPECT_THAT(codec->Decode(absl::MakeSpan(cells).subspan(1), {2}, one, 16),
              invalid("8 cells"));
  char* null_out[] = {nullptr};
  EXPECT_THAT(codec->Decode(cells, {2}, null_out, 16), invalid("no output"));
  EXPECT_THAT(codec->Decode(cells, {2}, one, kMaxCellBytes + 1),
              invalid("at most"));
  // Nothing to do is fine.
  EXPECT_THAT(codec->Decode(cells, {}, {}, 16), IsOk());
  EXPECT_THAT(codec->Decode(cells, {2}, one, 0), IsOk());
  EXPECT_EQ(o, std::string(16, 'o'));
}

TEST_P(CodecTest, RejectsBadEncodeArguments) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 2, 1);
  ASSERT_NE(codec, nullptr);
  std::string d0(8, 'x'), d1(7, 'y'), p(8, 'p'), q(8, 'q');
  std::vector<absl::Span<const char>> data = {d0, d1};
  std::vector<absl::Span<char>> parity = {absl::MakeSpan(&p[0], p.size())};
  EXPECT_THAT(codec->Encode(data, parity),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cell 1 has 7 bytes, cell 0 has 8")));
  data[1] = d0;
  std::vector<absl::Span<char>> two = {absl::MakeSpan(&p[0], p.size()),
                                       absl::MakeSpan(&q[0], q.size())};
  EXPECT_THAT(codec->Encode(data, two),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("2 data and 2 parity cells for RS(2,1)")));
  EXPECT_EQ(p, std::string(8, 'p'));
  EXPECT_THAT(codec->Encode(data, parity), IsOk());
  EXPECT_NE(p, std::string(8, 'p'));
}

TEST(CodecSpecTest, Caps) {
  EXPECT_THAT(ValidateCodecSpec({.k = 6, .m = 3}), IsOk());
  EXPECT_THAT(ValidateCodecSpec({.k = 1, .m = 1}), IsOk());
  EXPECT_THAT(ValidateCodecSpec({.k = 28, .m = 4}), IsOk());
  EXPECT_THAT(ValidateCodecSpec({.k = 0, .m = 3}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("k = 0")));
  EXPECT_THAT(ValidateCodecSpec({.k = 6, .m = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("m = 0")));
  EXPECT_THAT(
      ValidateCodecSpec({.k = 29, .m = 4}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 32")));
  EXPECT_THAT(
      ValidateCodecSpec({.k = 2147483647, .m = 2147483647}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 32")));
  EXPECT_THAT(
      ValidateCodecSpec({.kind = static_cast<CodecKind>(7), .k = 6, .m = 3}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("unknown codec kind 7")));
  EXPECT_THAT(NewCodec({.k = 0, .m = 3}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(NewNaiveCodec({.k = 33, .m = 1}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_P(CodecTest, DecodeTablesAreCachedPerPattern) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(6, 3, 100, 11);
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  ExpectRebuilds(*codec, row, {1, 7});
  EXPECT_EQ(codec->decode_cache_stats().misses, 1u);
  EXPECT_EQ(codec->decode_cache_stats().hits, 0u);
  ExpectRebuilds(*codec, row, {1, 7});
  ExpectRebuilds(*codec, row, {7, 1});  // same pattern, other order
  EXPECT_EQ(codec->decode_cache_stats().hits, 2u);
  EXPECT_EQ(codec->decode_cache_stats().misses, 1u);
  ExpectRebuilds(*codec, row, {1});  // another pattern
  EXPECT_EQ(codec->decode_cache_stats().misses, 2u);
  EXPECT_EQ(codec->decode_cache_stats().entries, 2u);
}

TEST(DecodeCacheBound, KeepsAtMostTheCapOfPatterns) {
  std::unique_ptr<Codec> codec = MustMake(&NewCodec, 10, 4);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(10, 4, 64, 12);
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  size_t patterns = 0;
  for (int lost = 1; lost <= 4; ++lost) {
    ForEachCombination(14, lost, [&](const std::vector<int>& cells) {
      ExpectRebuilds(*codec, row, cells);
      ++patterns;
    });
  }
  ASSERT_GT(patterns, kDecodeCacheEntries);
  const DecodeCacheStats stats = codec->decode_cache_stats();
  EXPECT_EQ(stats.entries, kDecodeCacheEntries);
  EXPECT_EQ(stats.misses, patterns);
  // The most recent pattern is still cached, the first one was evicted.
  ExpectRebuilds(*codec, row, {10, 11, 12, 13});
  EXPECT_EQ(codec->decode_cache_stats().hits, stats.hits + 1);
  ExpectRebuilds(*codec, row, {0});
  EXPECT_EQ(codec->decode_cache_stats().misses, stats.misses + 1);
}

TEST_P(CodecTest, ConcurrentDecodesOfDifferentPatterns) {
  std::unique_ptr<Codec> codec = MustMake(GetParam(), 6, 3);
  ASSERT_NE(codec, nullptr);
  Row row = RandomRow(6, 3, 2048, 13);
  ASSERT_THAT(EncodeRow(*codec, row), IsOk());
  std::vector<std::vector<int>> patterns;
  ForEachCombination(9, 3,
                     [&](const std::vector<int>& p) { patterns.push_back(p); });
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = t; i < patterns.size(); i += 2) {
          ExpectRebuilds(*codec, row, patterns[i]);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const DecodeCacheStats stats = codec->decode_cache_stats();
  EXPECT_EQ(stats.entries, patterns.size());
  EXPECT_GT(stats.hits, 0u);
}

}  // namespace
}  // namespace ec
}  // namespace rangefs
