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

// The crc32 instruction has a latency of 3 cycles and a throughput of one
// per cycle, so one dependent chain runs at a third of the unit's speed.
// Long buffers are therefore cut into three lanes of kLong (then kShort)
// bytes whose CRCs run interleaved; the lanes are joined by "shifting" a
// CRC over the length of the lane after it (appending that many zero bytes,
// a linear map over GF(2) applied with four byte tables), then XORing.
constexpr size_t kLong = 8192;
constexpr size_t kShort = 256;

// A 32x32 matrix over GF(2): row n is the image of bit n.
using Gf2Matrix = uint32_t[32];

uint32_t Gf2Times(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec != 0; vec >>= 1, ++mat) {
    if (vec & 1) sum ^= *mat;
  }
  return sum;
}

void Gf2Square(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = Gf2Times(mat, mat[n]);
}

// Tables that apply `len` (a power of two) zero bytes to a raw CRC register.
struct ShiftTables {
  uint32_t t[4][256];
  explicit ShiftTables(size_t len) {
    Gf2Matrix op, tmp;
    // One zero bit: shift right, feeding back the polynomial.
    op[0] = kPoly;
    for (int n = 1; n < 32; ++n) op[n] = 1u << (n - 1);
    // Square three times: 8 zero bits = one zero byte. Then once per
    // doubling of the length.
    for (size_t bits = 1; bits < len * 8; bits <<= 1) {
      Gf2Square(tmp, op);
      memcpy(op, tmp, sizeof(op));
    }
    for (uint32_t b = 0; b < 256; ++b) {
      for (int k = 0; k < 4; ++k) t[k][b] = Gf2Times(op, b << (8 * k));
    }
  }
  uint32_t Shift(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^
           t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

const ShiftTables& LongShift() {
  static const ShiftTables* const s = new ShiftTables(kLong);
  return *s;
}
const ShiftTables& ShortShift() {
  static const ShiftTables* const s = new ShiftTables(kShort);
  return *s;
}

// Consumes as many groups of three `lane`-byte lanes as `n` holds.
__attribute__((target("sse4.2"))) inline void ThreeLanes(
    const ShiftTables& shift, size_t lane, uint64_t& c0,
    const unsigned char*& p, size_t& n) {
  while (n >= 3 * lane) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char* const end = p + lane;
    do {
      c0 = _mm_crc32_u64(c0, Load64(p));
      c1 = _mm_crc32_u64(c1, Load64(p + lane));
      c2 = _mm_crc32_u64(c2, Load64(p + 2 * lane));
      p += 8;
    } while (p < end);
    c0 = shift.Shift(static_cast<uint32_t>(c0)) ^ c1;
    c0 = shift.Shift(static_cast<uint32_t>(c0)) ^ c2;
    p += 2 * lane;
    n -= 3 * lane;
  }
}

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc,
                                                          const char* data,
                                                          size_t n) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data);
  uint64_t c = static_cast<uint32_t>(~crc);
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  ThreeLanes(LongShift(), kLong, c, p, n);
  ThreeLanes(ShortShift(), kShort, c, p, n);
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
