// File: internal/ec_decode_checked.h
//
// DecodeChecked: a rebuild's decode of one lost cell (ec_read.h) and the
// CRC32C check of the result, in slices: each slice's CRC is taken right
// after the slice is decoded, while it is still in the core's cache,
// instead of reading the whole rebuilt cell back from memory afterwards
// (part E's degraded scan: the check was a second pass over every rebuilt
// MiB). The result is the same as one Decode of the whole range followed
// by one Crc32cExtend over it. Pure (no I/O, no state).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_EC_DECODE_CHECKED_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_EC_DECODE_CHECKED_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ec/codec.h"

namespace rangefs {
namespace client_internal {

// Slices of a rebuilt cell's decode: small enough that a slice and its
// k sources' slices stay in a core's L2 cache.
inline constexpr size_t kEcDecodeSlice = size_t{256} << 10;

// Decodes cell `lost` of a row into `out` (`length` bytes; `cells` as
// ec::Codec::Decode takes them: the present cells, null for the others,
// each `length` bytes from its pointer) in slices of `slice` bytes. With
// `check`, `*crc_ok` says whether the result's CRC32C equals `crc`; without,
// it is true. The codec's error (nothing checked then) if it refuses.
absl::Status DecodeChecked(const ec::Codec& codec,
                           absl::Span<const char* const> cells, int lost,
                           char* out, uint64_t length, bool check, uint32_t crc,
                           bool* crc_ok, size_t slice = kEcDecodeSlice);

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_EC_DECODE_CHECKED_H_
