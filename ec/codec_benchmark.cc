// Micro-benchmark of the erasure codecs (Google Benchmark): encode, and decode
// with 1..m lost data cells, for RS(6,3) and RS(10,4) with 1 MiB cells, ISA-L
// (the production codec) vs the naive log/exp-table loop. One thread, so
// bytes_per_second is per core; bytes counted are the row's data bytes
// (k cells), for encode and decode alike.
//
//   bazel run -c opt //ec:codec_benchmark
//   bazel run -c opt //ec:codec_benchmark -- --benchmark_filter=Isal
#include <cstdint>
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

}  // namespace
}  // namespace ec
}  // namespace rangefs

BENCHMARK_MAIN();
