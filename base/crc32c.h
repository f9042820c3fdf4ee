// File: crc32c.h
//
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
// every block the storage node stores and every chunk it serves.
//
//   uint32_t crc = Crc32c("123456789");            // 0xE3069283
//   uint32_t c = Crc32c(a);
//   c = Crc32cExtend(c, b.data(), b.size());       // == Crc32c(a + b)
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at
// run time) and a slicing-by-8 table otherwise. Thread-safe; never blocks.
#ifndef RANGEFS_BASE_CRC32C_H_
#define RANGEFS_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace rangefs {

// Returns the CRC-32C of `data` extended with `n` bytes at `p`, where `crc`
// is the (finalized) CRC-32C of `data`. Crc32cExtend(0, p, n) is the CRC of
// p[0, n). `p` may be null when `n` is 0.
uint32_t Crc32cExtend(uint32_t crc, const char* p, size_t n);

// Returns the CRC-32C of `data`.
inline uint32_t Crc32c(absl::string_view data) {
  return Crc32cExtend(0, data.data(), data.size());
}

namespace crc32c_internal {

// The two implementations, exposed so tests can compare them. The hardware
// one must only be called when HardwareAvailable() is true.
uint32_t ExtendSoftware(uint32_t crc, const char* p, size_t n);
uint32_t ExtendHardware(uint32_t crc, const char* p, size_t n);
bool HardwareAvailable();

}  // namespace crc32c_internal
}  // namespace rangefs

#endif  // RANGEFS_BASE_CRC32C_H_
