// Micro-benchmark of CRC32C (Google Benchmark): the software fallback, the
// SSE4.2 path and the dispatching Crc32cExtend, over buffer sizes from one
// 4 KiB block to 16 MiB. Reports bytes/s per case.
//
//   bazel run -c opt //base:crc32c_benchmark
//   bazel run -c opt //base:crc32c_benchmark -- --benchmark_filter=Hardware
#include <cstdint>
#include <string>

#include "base/crc32c.h"
#include "benchmark/benchmark.h"

namespace rangefs {
namespace {

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

void RunExtend(benchmark::State& state, ExtendFn fn) {
  const std::string buf(static_cast<size_t>(state.range(0)), 'x');
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = fn(crc, buf.data(), buf.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          state.range(0));
}

void BM_Crc32cSoftware(benchmark::State& state) {
  RunExtend(state, &crc32c_internal::ExtendSoftware);
}

void BM_Crc32cHardware(benchmark::State& state) {
  if (!crc32c_internal::HardwareAvailable()) {
    state.SkipWithError("no SSE4.2 on this CPU");
    return;
  }
  RunExtend(state, &crc32c_internal::ExtendHardware);
}

void BM_Crc32cExtend(benchmark::State& state) {
  RunExtend(state, &Crc32cExtend);
}

BENCHMARK(BM_Crc32cSoftware)->Range(4 << 10, 16 << 20);
BENCHMARK(BM_Crc32cHardware)->Range(4 << 10, 16 << 20);
BENCHMARK(BM_Crc32cExtend)->Range(4 << 10, 16 << 20);

}  // namespace
}  // namespace rangefs

BENCHMARK_MAIN();
