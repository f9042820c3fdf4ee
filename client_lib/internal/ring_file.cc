#include "client_lib/internal/ring_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#ifndef __NR_cachestat
#define __NR_cachestat 451  // the same on every architecture (Linux 6.5)
#endif

namespace rangefs {
namespace client_internal {

PageCached PageCachedRange(int fd, uint64_t offset, uint64_t length) {
  static std::atomic<bool> unsupported{false};
  if (length == 0 || unsupported.load(std::memory_order_relaxed)) {
    return PageCached::kUnknown;
  }
  struct {
    uint64_t off, len;
  } range{offset, length};
  struct {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } stat{};
  if (syscall(__NR_cachestat, fd, &range, &stat, 0) != 0) {
    if (errno == ENOSYS) unsupported.store(true, std::memory_order_relaxed);
    return PageCached::kUnknown;
  }
  static const uint64_t page = static_cast<uint64_t>(getpagesize());
  const uint64_t pages = (offset + length - 1) / page - offset / page + 1;
  return stat.nr_cache >= pages ? PageCached::kYes : PageCached::kNo;
}

RingFile::~RingFile() {
  if (map_ != nullptr) munmap(const_cast<char*>(map_), map_size_);
  close(fd_);
}

bool RingFile::EnsureMapped() {
  absl::call_once(map_once_, [this] {
    struct stat st;
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
      return;
    }
    const size_t size = static_cast<size_t>(st.st_size);
    void* m = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) return;
    map_size_ = size;
    map_ = static_cast<const char*>(m);
  });
  return map_ != nullptr;
}

const char* RingFile::Mapped(uint64_t offset, uint64_t length) {
  if (!caller_safe_ || length == 0 || !EnsureMapped() || offset > map_size_ ||
      length > map_size_ - offset) {
    return nullptr;
  }
  // Only bytes already in memory: a touch of a page that is not would
  // read it from the disk on this thread. (One evicted between this check
  // and the touch is read back so: rare, and from a local disk.) No
  // MADV_POPULATE_READ: it costs more than the faults it saves (33 us a
  // MiB of pages already mapped, against 0.5 us for this check); a page
  // past the file's end (it shrank) is not in the page cache, and one that
  // goes past it after this check raises SIGBUS, which the reader catches
  // (RunCatchingSigbus).
  if (PageCachedRange(fd_, offset, length) != PageCached::kYes) return nullptr;
  return map_ + offset;
}

}  // namespace client_internal
}  // namespace rangefs
