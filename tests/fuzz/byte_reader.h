// File: byte_reader.h
//
// Splits a fuzz input into the values a target needs, front to back, like
// libFuzzer's FuzzedDataProvider but header-only and gcc-friendly (the
// corpus replay tests build with gcc). Reads past the end give zeros /
// short strings, never fail.
//
//   ByteReader in(data, size);
//   const uint8_t mode = in.U8();
//   const uint64_t offset = in.U64();
//   absl::string_view rest = in.Rest();
#ifndef RANGEFS_TESTS_FUZZ_BYTE_READER_H_
#define RANGEFS_TESTS_FUZZ_BYTE_READER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace rangefs {
namespace fuzz {

// Thread-compatible. The bytes are not owned and must outlive the reader.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data)), size_(size) {}

  size_t remaining() const { return size_ - at_; }

  // Little-endian integers of 1, 2, 4, 8 bytes (missing bytes are zero).
  uint8_t U8() { return static_cast<uint8_t>(Uint(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Uint(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Uint(4)); }
  uint64_t U64() { return Uint(8); }

  // The next min(n, remaining()) bytes.
  absl::string_view Bytes(size_t n) {
    n = std::min(n, remaining());
    absl::string_view out(data_ + at_, n);
    at_ += n;
    return out;
  }
  // Everything left.
  absl::string_view Rest() { return Bytes(remaining()); }

 private:
  uint64_t Uint(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes && at_ < size_; ++i, ++at_) {
      v |= uint64_t{static_cast<uint8_t>(data_[at_])} << (8 * i);
    }
    return v;
  }

  const char* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace fuzz
}  // namespace rangefs

#endif  // RANGEFS_TESTS_FUZZ_BYTE_READER_H_
