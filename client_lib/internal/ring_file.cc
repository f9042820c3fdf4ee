#include "client_lib/internal/ring_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <vector>

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

bool RingFile::Resident(const char* at, uint64_t length) const {
  const uint64_t offset = static_cast<uint64_t>(at - map_);
  switch (PageCachedRange(fd_, offset, length)) {
    case PageCached::kYes:
      return true;
    case PageCached::kNo:
      return false;
    case PageCached::kUnknown:
      break;
  }
  // No cachestat (Linux before 6.5): mincore over the mapping, a vector
  // byte a page.
  static const uint64_t page = static_cast<uint64_t>(getpagesize());
  const uint64_t start = offset / page * page;
  const uint64_t pages = (offset + length - start + page - 1) / page;
  std::vector<unsigned char> in(pages);
  if (mincore(const_cast<char*>(map_) + start, offset + length - start,
              in.data()) != 0) {
    return false;
  }
  for (unsigned char b : in) {
    if ((b & 1) == 0) return false;
  }
  return true;
}

bool RingFile::CheckShrunk() {
  struct stat st;
  if (map_ == nullptr || fstat(fd_, &st) != 0 ||
      static_cast<uint64_t>(st.st_size) < map_size_) {
    shrunk_.store(true, std::memory_order_relaxed);
  }
  return shrunk_.load(std::memory_order_relaxed);
}

const char* RingFile::Mapped(uint64_t offset, uint64_t length) {
  if (!caller_safe_ || length == 0 || shrunk_.load(std::memory_order_relaxed) ||
      !EnsureMapped() || offset > map_size_ || length > map_size_ - offset) {
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
  return Resident(map_ + offset, length) ? map_ + offset : nullptr;
}

}  // namespace client_internal
}  // namespace rangefs
