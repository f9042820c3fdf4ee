#include "namespace/extent_index.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace ns {
namespace {

constexpr uint32_t kExtentsField = 5;  // FileLayout.extents
constexpr int kWireVarint = 0;
constexpr int kWireFixed64 = 1;
constexpr int kWireDelimited = 2;
constexpr int kWireFixed32 = 5;

// Reads a varint at `*pos`, advancing it. False if truncated or too long.
bool ReadVarint(absl::string_view bytes, size_t* pos, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= bytes.size()) return false;
    const uint8_t b = static_cast<uint8_t>(bytes[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

absl::Status Malformed(size_t pos, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("file layout wire format: ", what, " at byte ", pos));
}

// Skips the value of a field of `wire_type` at `*pos`.
absl::Status SkipValue(absl::string_view bytes, int wire_type, size_t* pos) {
  uint64_t n = 0;
  switch (wire_type) {
    case kWireVarint:
      if (!ReadVarint(bytes, pos, &n)) return Malformed(*pos, "bad varint");
      return absl::OkStatus();
    case kWireFixed64:
      n = 8;
      break;
    case kWireFixed32:
      n = 4;
      break;
    case kWireDelimited:
      if (!ReadVarint(bytes, pos, &n)) return Malformed(*pos, "bad length");
      break;
    default:
      return Malformed(*pos, absl::StrCat("wire type ", wire_type));
  }
  if (n > bytes.size() - *pos) return Malformed(*pos, "truncated field");
  *pos += n;
  return absl::OkStatus();
}

}  // namespace

size_t ExtentIndex::Find(uint64_t offset) const {
  const size_t n = offsets_.size();
  if (n == 0 || offset < offsets_[0]) return n;
  const uint64_t first = offsets_[0];
  const uint64_t last = offsets_[n - 1];
  if (offset >= last) return n - 1;
  // Here n >= 2 and first <= offset < last. The guess g is in [0, n - 2].
  const size_t g =
      static_cast<size_t>(static_cast<unsigned __int128>(offset - first) *
                          (n - 1) / (last - first));
  // Bracket: offsets_[lo] <= offset < offsets_[hi], widening from g.
  size_t lo;
  size_t hi;
  if (offsets_[g] <= offset) {
    lo = g;
    hi = g + 1;
    for (size_t step = 1; offsets_[hi] <= offset; step *= 2) {
      lo = hi;
      hi = std::min(n - 1, hi + step);  // offsets_[n - 1] > offset
    }
  } else {
    hi = g;
    lo = g > 0 ? g - 1 : 0;
    for (size_t step = 1; offsets_[lo] > offset; step *= 2) {
      hi = lo;
      lo = lo > step ? lo - step : 0;  // offsets_[0] <= offset
    }
  }
  auto it =
      std::upper_bound(offsets_.begin() + static_cast<ptrdiff_t>(lo),
                       offsets_.begin() + static_cast<ptrdiff_t>(hi), offset);
  return static_cast<size_t>(it - offsets_.begin()) - 1;
}

absl::string_view ExtentIndex::Submessage(absl::string_view bytes,
                                          size_t i) const {
  size_t pos = positions_[i];
  uint64_t n = 0;
  if (!ReadVarint(bytes, &pos, &n) || n > bytes.size() - pos) return {};
  return bytes.substr(pos, n);
}

absl::StatusOr<ExtentIndex> IndexExtents(absl::string_view bytes,
                                         const v1::FileLayout& layout) {
  if (bytes.size() >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("file layout of ", bytes.size(), " bytes: too big"));
  }
  ExtentIndex index;
  const size_t count = static_cast<size_t>(layout.extents_size());
  index.offsets_.reserve(count);
  index.positions_.reserve(count);
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t tag = 0;
    if (!ReadVarint(bytes, &pos, &tag)) return Malformed(pos, "bad tag");
    const int wire_type = static_cast<int>(tag & 7);
    if (tag >> 3 == kExtentsField && wire_type == kWireDelimited) {
      if (index.positions_.size() == count) {
        return Malformed(pos, "more extents than parsed");
      }
      index.positions_.push_back(static_cast<uint32_t>(pos));
      index.offsets_.push_back(
          layout.extents(static_cast<int>(index.offsets_.size())).offset());
    }
    if (absl::Status s = SkipValue(bytes, wire_type, &pos); !s.ok()) return s;
  }
  if (index.positions_.size() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("file layout wire format: ", index.positions_.size(),
                     " extents found, ", count, " parsed"));
  }
  return index;
}

}  // namespace ns
}  // namespace rangefs
