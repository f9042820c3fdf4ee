// File: internal/ring_file.h
//
// RingFile: an object's open file descriptor, closed by its last holder (a
// node's cache of open files, or a read in flight that may still have to
// read the rest), and, for a file a calling thread may read itself, the
// whole file mapped read-only on first use (Mapped), so that an
// erasure-coded rebuild can decode from the page cache with no copy
// (ec_read.h).
//
// A mapping outlives nothing: it goes with the RingFile. A page of it past
// the file's end (the file truncated after the mapping was made) raises
// SIGBUS when touched: read mapped bytes only under RunCatchingSigbus
// (base/sigbus_guard.h).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_RING_FILE_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_RING_FILE_H_

#include <atomic>
#include <cstdint>

#include "absl/base/call_once.h"

namespace rangefs {
namespace client_internal {

// Whether [offset, offset + length) of `fd` is wholly in the page cache
// (cachestat, Linux 6.5; kUnknown where the kernel lacks it).
enum class PageCached { kYes, kNo, kUnknown };
PageCached PageCachedRange(int fd, uint64_t offset, uint64_t length);

class RingFile {
 public:
  // `caller_safe`: a calling thread may read it on its own ring
  // (CallerSafe in node_ring.cc): a local disk or memory file system.
  explicit RingFile(int fd, bool caller_safe = false)
      : fd_(fd), caller_safe_(caller_safe) {}
  ~RingFile();
  RingFile(const RingFile&) = delete;
  RingFile& operator=(const RingFile&) = delete;
  int fd() const { return fd_; }
  bool caller_safe() const { return caller_safe_; }

  // [offset, offset + length) of the file in its mapping, its pages in the
  // page cache now; null if not: the file is not caller-safe, the range is
  // not wholly in the page cache (touching it would wait for the disk:
  // that includes pages past the file's end now) or past the file's end
  // as it was when mapped, or the kernel refuses a mapping (then never
  // again for this file). Thread-safe. Never waits for a device.
  const char* Mapped(uint64_t offset, uint64_t length);
  // Whether `length` bytes at `at` (from Mapped) are still wholly in the
  // page cache: checked again right before they are read.
  bool Resident(const char* at, uint64_t length) const;
  // After a read of a mapping was cut off (SIGBUS): whether this file is
  // now shorter than its mapping (fstat), and if so Mapped refuses from
  // now on.
  bool CheckShrunk();

 private:
  // Maps the whole file once; false if it could not.
  bool EnsureMapped();

  const int fd_;
  const bool caller_safe_;
  absl::once_flag map_once_;
  const char* map_ = nullptr;  // set once, under map_once_
  uint64_t map_size_ = 0;
  std::atomic<bool> shrunk_{false};
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_RING_FILE_H_
