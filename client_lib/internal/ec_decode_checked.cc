#include "client_lib/internal/ec_decode_checked.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "base/crc32c.h"

namespace rangefs {
namespace client_internal {

absl::Status DecodeChecked(const ec::Codec& codec,
                           absl::Span<const char* const> cells, int lost,
                           char* out, uint64_t length, bool check, uint32_t crc,
                           bool* crc_ok, size_t slice) {
  *crc_ok = false;
  slice = std::max<size_t>(1, slice);
  const int wanted[] = {lost};
  absl::InlinedVector<const char*, 16> at_slice(cells.size(), nullptr);
  uint32_t got = 0;
  for (uint64_t at = 0; at < length; at += slice) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(slice, length - at));
    for (size_t t = 0; t < cells.size(); ++t) {
      at_slice[t] = cells[t] == nullptr ? nullptr : cells[t] + at;
    }
    char* const outs[] = {out + at};
    absl::Status s = codec.Decode(at_slice, wanted, outs, n);
    if (!s.ok()) return s;
    if (check) got = Crc32cExtend(got, out + at, n);
  }
  *crc_ok = !check || got == crc;
  return absl::OkStatus();
}

}  // namespace client_internal
}  // namespace rangefs
