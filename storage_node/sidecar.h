// File: sidecar.h
//
// Per-object checksums and their on-disk sidecar file.
//
// An object "<dir>/<name>" has its checksums in "<dir>/.<name>.rangefs-crc"
// (SidecarPathFor in sidecar_format.h). The sidecar is binary, little-endian:
//
//   offset  size  field
//   0       8     magic "RFSCRC01"
//   8       4     block_size (bytes, kMinBlockSize..kMaxBlockSize)
//   12      4     crc32c of the whole object
//   16      8     object_size
//   24      4*n   crc32c of block i, n = ceil(object_size / block_size)
//   24+4n   4     crc32c of bytes [0, 24+4n) (the sidecar's own check)
//
// Block i covers object bytes [i*block_size, min((i+1)*block_size, size)).
#ifndef RANGEFS_STORAGE_NODE_SIDECAR_H_
#define RANGEFS_STORAGE_NODE_SIDECAR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace node {

inline constexpr uint32_t kMinBlockSize = 4096;
// A verified read buffers one block, so this bounds per-read memory.
inline constexpr uint32_t kMaxBlockSize = 16u << 20;
inline constexpr uint32_t kDefaultBlockSize = 1u << 20;

struct Checksums {
  uint32_t block_size = kDefaultBlockSize;
  uint64_t object_size = 0;
  uint32_t crc32c = 0;  // Of the whole object.
  std::vector<uint32_t> block_crc32c;
};

inline uint64_t BlockCount(uint64_t size, uint32_t block_size) {
  return (size + block_size - 1) / block_size;
}

// Serializes `c` in the sidecar format above.
std::string EncodeSidecar(const Checksums& c);
// Parses a sidecar. DATA_LOSS if it is truncated, has a bad magic, an
// inconsistent block count or a bad self-check.
absl::StatusOr<Checksums> DecodeSidecar(absl::string_view data);
// Reads and parses the sidecar open at `fd` (blocking). `what` names it in
// errors.
absl::StatusOr<Checksums> ReadSidecar(int fd, absl::string_view what);

// Computes checksums as bytes stream in (the write path). Thread-compatible.
class BlockChecksummer {
 public:
  explicit BlockChecksummer(uint32_t block_size);
  void Update(const char* p, size_t n);
  uint64_t size() const { return result_.object_size; }
  // Returns the checksums of everything passed to Update.
  Checksums Finish();

 private:
  Checksums result_;
  uint32_t block_crc_ = 0;
  uint32_t block_fill_ = 0;
};

// Reads the object open at `fd` with pread from offset 0 to EOF and returns
// its checksums with `block_size`. Blocking; `what` names it in errors.
absl::StatusOr<Checksums> ComputeChecksums(int fd, uint32_t block_size,
                                           absl::string_view what);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_SIDECAR_H_
