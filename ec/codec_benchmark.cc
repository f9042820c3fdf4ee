// Micro-benchmark of the erasure codecs (Google Benchmark): encode, and decode
// with 1..m lost data cells, for RS(6,3) and RS(10,4) with 1 MiB cells, ISA-L
// (the production codec) vs the naive log/exp-table loop. One thread, so
// bytes_per_second is per core; bytes counted are the row's data bytes
// (k cells), for encode and decode alike.
//
// BM_RebuildRow models the degraded read path's cost of one rebuilt row
// (issue 35): the k surviving cells are copied from a region much larger
// than the caches (a page cache's stand-in, the next row each iteration)
// into buffers, and one lost data cell is decoded from them: copies only
// (a healthy row's cost), all copies then one decode (the read path
// today: the decode re-reads cells that left the nearest caches), or copy
// and decode interleaved in slices (each slice decoded right after its k
// copies). The difference is what decoding "while the bytes are in cache"
// can save.
//
//   bazel run -c opt //ec:codec_benchmark
//   bazel run -c opt //ec:codec_benchmark -- --benchmark_filter=Isal
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "ec/codec.h"
#include "ec/naive_codec.h"

namespace rangefs {
namespace ec {
namespace {

using Factory = absl::StatusOr<std::unique_ptr<Codec>> (*)(const CodecSpec&);

constexpr size_t kCellBytes = size_t{1} << 20;

// k + m cells of kCellBytes; data random, parity encoded.
struct Row {
  std::unique_ptr<Codec> codec;
  std::vector<std::string> cells;
  std::vector<absl::Span<const char>> data;
  std::vector<absl::Span<char>> parity;
};

bool MakeRow(benchmark::State& state, Factory factory, int k, int m, Row* row) {
  absl::StatusOr<std::unique_ptr<Codec>> codec = factory({.k = k, .m = m});
  if (!codec.ok()) {
    state.SkipWithError(codec.status().ToString().c_str());
    return false;
  }
  row->codec = *std::move(codec);
  std::mt19937 rng(42);
  row->cells.assign(k + m, std::string(kCellBytes, '\0'));
  for (int i = 0; i < k + m; ++i) {
    if (i < k) {
      for (char& c : row->cells[i]) c = static_cast<char>(rng());
      row->data.emplace_back(row->cells[i]);
    } else {
      row->parity.emplace_back(&row->cells[i][0], kCellBytes);
    }
  }
  if (!row->codec->Encode(row->data, row->parity).ok()) {
    state.SkipWithError("encode failed");
    return false;
  }
  return true;
}

void BM_Encode(benchmark::State& state, Factory factory, int k, int m) {
  Row row;
  if (!MakeRow(state, factory, k, m, &row)) return;
  for (auto _ : state) {
    if (!row.codec->Encode(row.data, row.parity).ok()) {
      state.SkipWithError("encode failed");
      return;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k *
                          static_cast<int64_t>(kCellBytes));
}

// state.range(0) data cells (0, 1, ...) lost and rebuilt.
void BM_Decode(benchmark::State& state, Factory factory, int k, int m) {
  Row row;
  if (!MakeRow(state, factory, k, m, &row)) return;
  const int lost = static_cast<int>(state.range(0));
  std::vector<const char*> cells;
  for (const std::string& c : row.cells) cells.push_back(c.data());
  std::vector<int> wanted;
  std::vector<std::string> outs(lost, std::string(kCellBytes, '\0'));
  std::vector<char*> out;
  for (int i = 0; i < lost; ++i) {
    cells[i] = nullptr;
    wanted.push_back(i);
    out.push_back(&outs[i][0]);
  }
  for (auto _ : state) {
    if (!row.codec->Decode(cells, wanted, out, kCellBytes).ok()) {
      state.SkipWithError("decode failed");
      return;
    }
    benchmark::ClobberMemory();
  }
  if (outs[0] != row.cells[0]) state.SkipWithError("decoded wrong bytes");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k *
                          static_cast<int64_t>(kCellBytes));
}

// state.range(0): 0 copies only, 1 copies then one decode, 2 copy and
// decode in slices of state.range(1) KiB.
void BM_RebuildRow(benchmark::State& state, int k, int m) {
  Row row;
  if (!MakeRow(state, &NewCodec, k, m, &row)) return;
  const int mode = static_cast<int>(state.range(0));
  const size_t slice = static_cast<size_t>(state.range(1)) << 10;
  // 32 rows of survivors: 192 MiB for RS(6,3), beyond the caches.
  constexpr int kRows = 32;
  std::vector<std::string> source(static_cast<size_t>(kRows) * k);
  for (int i = 0; i < kRows * k; ++i) source[i] = row.cells[1 + i % k];
  // Survivors: data cells 1..k-1 and parity cell 0 (cell 0 lost).
  std::vector<std::string> bufs(k, std::string(kCellBytes, '\0'));
  std::string out(kCellBytes, '\0');
  const int wanted[] = {0};
  std::vector<const char*> cells(k + m, nullptr);
  int r = 0;
  for (auto _ : state) {
    const std::string* src = &source[static_cast<size_t>(r) * k];
    r = (r + 1) % kRows;
    const size_t step = mode == 2 ? slice : kCellBytes;
    for (size_t at = 0; at < kCellBytes; at += step) {
      const size_t n = std::min(step, kCellBytes - at);
      for (int i = 0; i < k; ++i) {
        memcpy(&bufs[i][at], src[i].data() + at, n);
        cells[i < k - 1 ? i + 1 : k] = bufs[i].data() + at;
      }
      if (mode == 0) continue;
      char* const outs[] = {&out[at]};
      if (!row.codec->Decode(cells, wanted, outs, n).ok()) {
        state.SkipWithError("decode failed");
        return;
      }
    }
    benchmark::ClobberMemory();
  }
  if (mode != 0 && out != row.cells[0]) {
    state.SkipWithError("decoded wrong bytes");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k *
                          static_cast<int64_t>(kCellBytes));
}

BENCHMARK_CAPTURE(BM_Encode, Isal_RS6_3, &NewCodec, 6, 3);
BENCHMARK_CAPTURE(BM_Encode, Naive_RS6_3, &NewNaiveCodec, 6, 3);
BENCHMARK_CAPTURE(BM_Encode, Isal_RS10_4, &NewCodec, 10, 4);
BENCHMARK_CAPTURE(BM_Encode, Naive_RS10_4, &NewNaiveCodec, 10, 4);
BENCHMARK_CAPTURE(BM_Decode, Isal_RS6_3, &NewCodec, 6, 3)->DenseRange(1, 3);
BENCHMARK_CAPTURE(BM_Decode, Naive_RS6_3, &NewNaiveCodec, 6, 3)
    ->DenseRange(1, 3);
BENCHMARK_CAPTURE(BM_Decode, Isal_RS10_4, &NewCodec, 10, 4)->DenseRange(1, 3);
BENCHMARK_CAPTURE(BM_Decode, Naive_RS10_4, &NewNaiveCodec, 10, 4)
    ->DenseRange(1, 3);
BENCHMARK_CAPTURE(BM_RebuildRow, Isal_RS6_3, 6, 3)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({2, 64})
    ->Args({2, 128})
    ->Args({2, 256});

}  // namespace
}  // namespace ec
}  // namespace rangefs

BENCHMARK_MAIN();
