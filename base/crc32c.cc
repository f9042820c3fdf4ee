#include "base/crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace rangefs {
namespace crc32c_internal {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero
// bytes.
struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      for (int k = 1; k < 8; ++k) {
        t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
      }
    }
  }
};

const Tables& GetTables() {
  static const Tables* const tables = new Tables();
  return *tables;
}

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;  // Little-endian hosts only (x86-64, aarch64).
}

}  // namespace

uint32_t ExtendSoftware(uint32_t crc, const char* data, size_t n) {
  const Tables& tb = GetTables();
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = (c >> 8) ^ tb.t[0][(c ^ *p++) & 0xff];
    --n;
  }
  while (n >= 8) {
    uint64_t v = Load64(p) ^ c;
    c = tb.t[7][v & 0xff] ^ tb.t[6][(v >> 8) & 0xff] ^
        tb.t[5][(v >> 16) & 0xff] ^ tb.t[4][(v >> 24) & 0xff] ^
        tb.t[3][(v >> 32) & 0xff] ^ tb.t[2][(v >> 40) & 0xff] ^
        tb.t[1][(v >> 48) & 0xff] ^ tb.t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = (c >> 8) ^ tb.t[0][(c ^ *p++) & 0xff];
    --n;
  }
  return ~c;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc,
                                                          const char* data,
                                                          size_t n) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data);
  uint64_t c = static_cast<uint32_t>(~crc);
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  // Four independent-looking steps per iteration let the compiler keep the
  // crc32 unit busy; the dependency chain is inherent to a single stream.
  while (n >= 32) {
    c = _mm_crc32_u64(c, Load64(p));
    c = _mm_crc32_u64(c, Load64(p + 8));
    c = _mm_crc32_u64(c, Load64(p + 16));
    c = _mm_crc32_u64(c, Load64(p + 24));
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    c = _mm_crc32_u64(c, Load64(p));
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --n;
  }
  return ~c32;
}

bool HardwareAvailable() {
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return available;
}

#else

uint32_t ExtendHardware(uint32_t crc, const char* data, size_t n) {
  return ExtendSoftware(crc, data, n);
}
bool HardwareAvailable() { return false; }

#endif

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const char* p, size_t n) {
  static const bool hw = crc32c_internal::HardwareAvailable();
  return hw ? crc32c_internal::ExtendHardware(crc, p, n)
            : crc32c_internal::ExtendSoftware(crc, p, n);
}

}  // namespace rangefs
