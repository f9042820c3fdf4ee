// File: internal/ec_buffers.h
//
// Scratch buffers of erasure-coded rebuilds (ec_read.h): a helper cell's
// bytes, a decode that cannot land in the caller's buffer. A degraded scan
// rebuilds a cell per row, and a fresh 1 MiB buffer each time costs page
// faults and the kernel's zero fill of every page (glibc hands buffers that
// big to mmap, or trims them off its heap again): part E's degraded scan
// spent ~6% of its CPU there. EcBuffers keeps a few big buffers for reuse.
// Bounded: at most kMaxKept buffers and kMaxKeptBytes in all, each of
// kMinBytes to kMaxBytes (smaller requests are plain allocations: malloc
// serves them from its heap; bigger ones are not kept). Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_EC_BUFFERS_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_EC_BUFFERS_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace rangefs {
namespace client_internal {

class EcBuffers;

// A buffer of at least the size asked for, not zeroed; back to its pool
// when destroyed (or reset).
class EcBuffer {
 public:
  EcBuffer() = default;
  EcBuffer(EcBuffer&& o) noexcept { *this = std::move(o); }
  EcBuffer& operator=(EcBuffer&& o) noexcept;
  ~EcBuffer() { reset(); }
  char* get() const { return data_.get(); }
  void reset();

 private:
  friend class EcBuffers;
  EcBuffers* pool_ = nullptr;  // null: not kept
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

class EcBuffers {
 public:
  static constexpr size_t kMinBytes = size_t{64} << 10;
  static constexpr size_t kMaxBytes = size_t{8} << 20;
  static constexpr size_t kMaxKept = 32;
  static constexpr size_t kMaxKeptBytes = size_t{32} << 20;

  // The process's pool (rebuilds of every client share it).
  static EcBuffers& Shared();

  EcBuffer Take(size_t n);
  // Buffers kept now (tests).
  size_t kept() const;

 private:
  friend class EcBuffer;
  struct Kept {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  void Give(std::unique_ptr<char[]> data, size_t size);

  mutable absl::Mutex mu_;
  std::vector<Kept> kept_ ABSL_GUARDED_BY(mu_);
  size_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_EC_BUFFERS_H_
