#include "storage_node/read_chunk_codec.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"
#include "base/status_macros.h"
#include "grpc/slice.h"

namespace rangefs {
namespace node {
namespace {

// Sequential reader over a list of slices.
class SliceCursor {
 public:
  explicit SliceCursor(const std::vector<grpc::Slice>& slices)
      : slices_(slices) {
    SkipEmpty();
  }

  bool done() const { return index_ == slices_.size(); }
  uint64_t position() const { return position_; }

  // Reads one byte; false at the end.
  bool Byte(uint8_t* b) {
    if (done()) return false;
    *b = slices_[index_].begin()[at_];
    Advance(1);
    return true;
  }

  absl::StatusOr<uint64_t> Varint(absl::string_view what) {
    uint64_t v = 0;
    const uint64_t start = position_;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) {
        return Malformed(start, absl::StrCat("truncated varint (", what, ")"));
      }
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Malformed(start, absl::StrCat("varint over 10 bytes (", what, ")"));
  }

  absl::StatusOr<uint32_t> Fixed32(absl::string_view what) {
    const uint64_t start = position_;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      uint8_t b;
      if (!Byte(&b)) {
        return Malformed(start, absl::StrCat("truncated fixed32 (", what, ")"));
      }
      v |= uint32_t{b} << (8 * i);
    }
    return v;
  }

  // Passes `n` bytes to `sink(const char*, size_t)` piece by piece; false
  // if fewer than `n` bytes remain (nothing consumed then).
  template <typename Sink>
  bool Take(uint64_t n, Sink sink) {
    if (n > remaining()) return false;
    while (n > 0) {
      const grpc::Slice& s = slices_[index_];
      const size_t piece =
          static_cast<size_t>(std::min<uint64_t>(n, s.size() - at_));
      sink(reinterpret_cast<const char*>(s.begin()) + at_, piece);
      Advance(piece);
      n -= piece;
    }
    return true;
  }

  uint64_t remaining() const { return total() - position_; }

  static absl::Status Malformed(uint64_t at, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ReadRangeChunk at byte ", at, ": ", what));
  }

 private:
  uint64_t total() const {
    if (total_ < 0) {
      uint64_t t = 0;
      for (const grpc::Slice& s : slices_) t += s.size();
      total_ = static_cast<int64_t>(t);
    }
    return static_cast<uint64_t>(total_);
  }
  void Advance(size_t n) {
    at_ += n;
    position_ += n;
    if (at_ == slices_[index_].size()) {
      ++index_;
      at_ = 0;
      SkipEmpty();
    }
  }
  void SkipEmpty() {
    while (index_ < slices_.size() && slices_[index_].size() == 0) ++index_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t index_ = 0;
  size_t at_ = 0;
  uint64_t position_ = 0;
  mutable int64_t total_ = -1;
};

// Appends `v` as a varint; returns the new end.
uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

}  // namespace

grpc::Slice NewWritableSlice(size_t n, char** data) {
  // Never inlined (grpc_slice_malloc inlines small slices inside the
  // struct, so `*data` would dangle once the struct is copied).
  grpc_slice s = grpc_slice_malloc_large(n);
  *data = reinterpret_cast<char*>(GRPC_SLICE_START_PTR(s));
  return grpc::Slice(s, grpc::Slice::STEAL_REF);
}

grpc::ByteBuffer EncodeReadRangeChunk(uint64_t offset, const grpc::Slice& data,
                                      uint32_t crc32c) {
  // proto3: fields at their default value are not written.
  uint8_t head[24];
  uint8_t* p = head;
  if (offset != 0) {
    *p++ = 0x08;  // Field 1, varint.
    p = PutVarint(p, offset);
  }
  if (data.size() != 0) {
    *p++ = 0x12;  // Field 2, length-delimited.
    p = PutVarint(p, data.size());
  }
  uint8_t tail[5];
  size_t tail_size = 0;
  if (crc32c != 0) {
    tail[0] = 0x1d;  // Field 3, fixed32 (little-endian).
    for (int i = 0; i < 4; ++i)
      tail[1 + i] = static_cast<uint8_t>(crc32c >> (8 * i));
    tail_size = 5;
  }
  grpc::Slice slices[3] = {grpc::Slice(head, static_cast<size_t>(p - head)),
                           data, grpc::Slice(tail, tail_size)};
  return grpc::ByteBuffer(slices, 3);
}

absl::StatusOr<DecodedChunk> DecodeReadRangeChunk(
    const grpc::ByteBuffer& buffer, absl::Span<char> dst, bool check_crc) {
  std::vector<grpc::Slice> slices;
  if (buffer.Valid()) {
    grpc::Status st = buffer.Dump(&slices);
    if (!st.ok()) {
      return absl::InternalError(absl::StrCat(
          "cannot read ReadRangeChunk buffer: ", st.error_message()));
    }
  }
  SliceCursor in(slices);
  DecodedChunk out;
  uint32_t wire_crc = 0;
  uint32_t crc = 0;  // Of the data bytes copied.
  bool have_data = false;
  while (!in.done()) {
    const uint64_t at = in.position();
    RANGEFS_ASSIGN_OR_RETURN(uint64_t tag, in.Varint("tag"));
    const uint64_t field = tag >> 3;
    const int wire_type = static_cast<int>(tag & 7);
    if (field == 1 && wire_type == 0) {
      RANGEFS_ASSIGN_OR_RETURN(out.offset, in.Varint("offset"));
    } else if (field == 2 && wire_type == 2) {
      if (have_data) return SliceCursor::Malformed(at, "data field repeated");
      have_data = true;
      RANGEFS_ASSIGN_OR_RETURN(uint64_t n, in.Varint("data length"));
      if (n > in.remaining()) {
        return SliceCursor::Malformed(
            at, absl::StrCat("data length ", n, " but only ", in.remaining(),
                             " bytes left"));
      }
      if (n > dst.size()) {
        return absl::OutOfRangeError(absl::StrCat(
            "ReadRangeChunk carries ", n, " data bytes, more than the ",
            dst.size(), " bytes left in the read buffer"));
      }
      char* p = dst.data();
      in.Take(n, [&](const char* src, size_t len) {
        memcpy(p, src, len);
        if (check_crc) crc = Crc32cExtend(crc, p, len);
        p += len;
      });
      out.size = static_cast<size_t>(n);
    } else if (field == 3 && wire_type == 5) {
      RANGEFS_ASSIGN_OR_RETURN(wire_crc, in.Fixed32("crc32c"));
    } else if (field == 0) {
      return SliceCursor::Malformed(at, "field number 0");
    } else {
      // Unknown field (or a known one with an unexpected type): skip it.
      switch (wire_type) {
        case 0:
          RANGEFS_RETURN_IF_ERROR(in.Varint("unknown field").status());
          break;
        case 1:
          if (!in.Take(8, [](const char*, size_t) {})) {
            return SliceCursor::Malformed(at, "truncated fixed64 field");
          }
          break;
        case 2: {
          RANGEFS_ASSIGN_OR_RETURN(uint64_t n, in.Varint("field length"));
          if (!in.Take(n, [](const char*, size_t) {})) {
            return SliceCursor::Malformed(
                at, absl::StrCat("field ", field, " length ", n, " but only ",
                                 in.remaining(), " bytes left"));
          }
          break;
        }
        case 5:
          RANGEFS_RETURN_IF_ERROR(in.Fixed32("unknown field").status());
          break;
        default:
          return SliceCursor::Malformed(
              at, absl::StrCat("field ", field, " has wire type ", wire_type));
      }
    }
  }
  if (check_crc && crc != wire_crc) {
    return absl::DataLossError(
        absl::StrCat("CRC32C mismatch in chunk at ", out.offset, " (", out.size,
                     " bytes): chunk says ", absl::Hex(wire_crc), ", data has ",
                     absl::Hex(crc)));
  }
  return out;
}

}  // namespace node
}  // namespace rangefs
