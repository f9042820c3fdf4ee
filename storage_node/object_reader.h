// File: object_reader.h
//
// The half of the agent's ReadRange that does not depend on the transport:
// both the gRPC service (agent_service.cc) and the data port (data_port.cc)
// open the object through it, bound the requested range by the object's
// size, load its checksum sidecar and check blocks against it. They differ
// only in how the bytes go out (gRPC slices vs data-port frames, sendfile).
//
//   RANGEFS_ASSIGN_OR_RETURN(ObjectReader r,
//                            ObjectReader::Open(*root, path, offset, length));
//   for (uint64_t off = r.begin(); off < r.end(); off += n) {
//     RANGEFS_RETURN_IF_ERROR(r.Pread(buf, n, off));  // then send buf
//   }
//
// Thread-compatible; every call blocks on disk I/O.
#ifndef RANGEFS_STORAGE_NODE_OBJECT_READER_H_
#define RANGEFS_STORAGE_NODE_OBJECT_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage_node/export_root.h"
#include "storage_node/scoped_fd.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {

class ObjectReader {
 public:
  // Opens object `path` (untrusted: resolved only through `root`) to read
  // [offset, offset + length), clipped to the object's size. Errors: those
  // of ExportRoot::OpenForRead (INVALID_ARGUMENT, PERMISSION_DENIED for bad
  // or escaping paths, NOT_FOUND, FAILED_PRECONDITION if not a regular
  // file), OUT_OF_RANGE if offset > size. `root` is only used during the
  // call and by LoadChecksums (it must outlive the reader).
  static absl::StatusOr<ObjectReader> Open(const ExportRoot& root,
                                           std::string path, uint64_t offset,
                                           uint64_t length);

  ObjectReader(ObjectReader&&) = default;
  ObjectReader& operator=(ObjectReader&&) = default;

  const std::string& path() const { return path_; }
  // The open object (O_RDONLY), e.g. for sendfile(2). Owned by the reader.
  int fd() const { return fd_.get(); }
  // The object's size when it was opened.
  uint64_t size() const { return size_; }
  // The range to send: [begin(), end()), end() <= size().
  uint64_t begin() const { return begin_; }
  uint64_t end() const { return end_; }

  // The object's checksums from its sidecar. NOT_FOUND if it has none;
  // DATA_LOSS if the sidecar is malformed or describes another size;
  // errors of reading it as is.
  absl::StatusOr<Checksums> LoadChecksums() const;
  // LoadChecksums for a read with verify: FAILED_PRECONDITION instead of
  // NOT_FOUND (such a read cannot be served).
  absl::StatusOr<Checksums> LoadChecksumsForVerify() const;

  // Reads exactly `n` bytes at object offset `off` into `p` (PreadFull:
  // DATA_LOSS if the object ends first).
  absl::Status Pread(char* p, size_t n, uint64_t off) const;

  // Reads block `b` of `sums` (from LoadChecksums; b < block count) whole
  // into `*buf` (grown as needed, never shrunk) and checks its CRC-32C
  // against the sidecar. Returns the block's bytes (a view into `*buf`,
  // starting at object offset b * sums.block_size); DATA_LOSS naming the
  // block on a mismatch.
  absl::StatusOr<absl::string_view> ReadVerifiedBlock(const Checksums& sums,
                                                      uint64_t b,
                                                      std::string* buf) const;

 private:
  ObjectReader(const ExportRoot* root, std::string path, ScopedFd fd,
               uint64_t size, uint64_t begin, uint64_t end)
      : root_(root),
        path_(std::move(path)),
        fd_(std::move(fd)),
        size_(size),
        begin_(begin),
        end_(end) {}

  const ExportRoot* root_;  // Not owned.
  std::string path_;
  ScopedFd fd_;
  uint64_t size_;
  uint64_t begin_;
  uint64_t end_;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_OBJECT_READER_H_
