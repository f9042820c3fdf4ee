// File: fs.h
//
// ReadOnlyFs: the file-system calls of the client's mount data path, as an
// interface so that tests can inject faults (client_lib/testing/fault_fs.h:
// MemoryFs, FaultyFs). NewPosixFs() is the production implementation:
// pread(2) on cached file descriptors, optionally O_DIRECT, each opened
// strictly beneath its mount (base/open_beneath.h: no "..", no symlink).
//
//   std::unique_ptr<ReadOnlyFs> fs = NewPosixFs();
//   RANGEFS_ASSIGN_OR_RETURN(size_t n,
//       fs->PRead({"/mnt/rangefs/n1", "crawl/seg-1"}, 4096, buf, {}));
//
// Implementations are thread-safe. Calls may block for as long as the
// underlying file system does (a hung hard NFS mount blocks forever): the
// client calls them only from per-node worker threads, never with a lock
// held and never into a caller's buffer.
#ifndef RANGEFS_CLIENT_LIB_FS_H_
#define RANGEFS_CLIENT_LIB_FS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rangefs {

struct FsReadOptions {
  // Open the file with O_DIRECT. Then `offset`, `dst.data()` and
  // `dst.size()` must be multiples of kDirectIoAlignment. Implementations
  // without direct I/O ignore it.
  bool direct = false;
};

inline constexpr size_t kDirectIoAlignment = 4096;

// A file inside a node's mount: `object` (relative, normalized) is resolved
// beneath `mount` and never outside it.
struct MountPath {
  std::string mount;   // the node's mount directory
  std::string object;  // relative path inside it
  std::string full() const { return mount + "/" + object; }  // for messages
};

class ReadOnlyFs {
 public:
  virtual ~ReadOnlyFs() = default;
  // Reads up to dst.size() bytes of `path` at `offset` into `dst`; returns
  // the count (short only at end of file). Errors: NOT_FOUND, PERMISSION_
  // DENIED (also: the path leaves the mount or meets a symlink),
  // INVALID_ARGUMENT (an object path with "..", ...), UNAVAILABLE (EIO,
  // ESTALE, ...), as mapped by ErrnoStatus.
  virtual absl::StatusOr<size_t> PRead(const MountPath& path, uint64_t offset,
                                       absl::Span<char> dst,
                                       const FsReadOptions& options) = 0;
  // Returns the whole (small) file at `path` (checksum sidecars), with
  // PRead's confinement and codes.
  virtual absl::StatusOr<std::string> ReadFile(const MountPath& path) = 0;
  // OK if `path` is an existing, searchable directory (a mount's health
  // check); NOT_FOUND / PERMISSION_DENIED / FAILED_PRECONDITION otherwise.
  virtual absl::Status CheckDir(const std::string& path) = 0;
};

// Returns the real file system. Keeps up to `max_open_files` descriptors
// open (least recently opened closed first).
std::unique_ptr<ReadOnlyFs> NewPosixFs(size_t max_open_files = 4096);

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_FS_H_
