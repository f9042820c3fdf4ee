// Readahead hints for sequential readers (readahead_hints.h): the hinted
// range of a file, mapped onto its column objects, becomes a start of the
// kernel's own readahead on each piece's object file (KernelReadahead
// below). The kernel reads those pages without the caller waiting for
// them; the reader's later calls then find them in the page cache and
// copy them on the calling thread (cached_read.cc): one copy per byte, as
// a plain pread has.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "client_lib/internal/client_impl.h"
#include "client_lib/internal/node_runtime.h"
#include "namespace/cached_layout.h"

namespace rangefs {
namespace client_internal {

namespace {

// KernelReadahead's probes ask for at most this much each: the request
// size of a reader's own calls (1 MiB), which the kernel's readahead sizes
// its window from.
constexpr uint64_t kProbeBytes = uint64_t{1} << 20;

// kProbeBytes of address space no one may write: the kernel cannot copy
// into it (MAP_NORESERVE, PROT_NONE: no memory behind it). Null if it
// could not be mapped.
char* NoWriteBuffer() {
  static char* const buffer = [] {
    void* p = mmap(nullptr, kProbeBytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }();
  return buffer;
}

// Starts the kernel's readahead of [offset, offset + length) of `fd` the
// way a reader's own read would, without waiting for it and without a
// copy: per kProbeBytes, one RWF_NOWAIT read into NoWriteBuffer. Where
// the first page is not cached, the read starts the kernel's readahead
// (sized by the file's readahead state and the device's read_ahead_kb;
// after a stream's first window, in large folios) and answers EAGAIN
// without waiting for the pages; where it is cached, the copy fails at
// once (EFAULT) after the kernel has seen any readahead mark there. Like
// POSIX_FADV_WILLNEED, the kernel queues the reads on this thread (which
// may wait for a free request of the device's queue). WILLNEED reads the
// pages as 4 KiB folios, and copying out of those costs every later
// reader of the pages 1.5-2x the CPU per byte (tests/bench/RESULTS.md,
// "Python readinto's CPU per GB"). False where RWF_NOWAIT is not
// supported (the caller falls back to POSIX_FADV_WILLNEED) or the buffer
// could not be mapped.
bool KernelReadahead(int fd, uint64_t offset, uint64_t length) {
  char* const no_write = NoWriteBuffer();
  if (no_write == nullptr) return false;
  for (uint64_t at = offset; at < offset + length; at += kProbeBytes) {
    struct iovec iov = {no_write, static_cast<size_t>(std::min(
                                      kProbeBytes, offset + length - at))};
    const ssize_t n = preadv2(fd, &iov, 1, static_cast<off_t>(at), RWF_NOWAIT);
    if (n == 0) return true;  // the end of the file
    if (n < 0 && errno == EOPNOTSUPP) return false;
    if (n < 0 && errno != EAGAIN && errno != EFAULT) return true;  // a hint
  }
  return true;
}

}  // namespace

bool NodeRuntime::ReadAhead(const std::string& object, uint64_t offset,
                            uint64_t length) {
  const ClientOptions& o = client_->options();
  if (!o.page_cache_reads || o.o_direct || o.data_path == DataPath::kAgent ||
      mount_down() || !caller_ok_.load(std::memory_order_relaxed)) {
    return false;
  }
  if (o.data_path == DataPath::kAuto &&
      mount_state_.load(std::memory_order_relaxed) != 1) {
    return false;
  }
  // Only files already open on a local file system: an open, or a hint
  // to a network or FUSE mount, may block the calling thread.
  std::shared_ptr<RingFile> file =
      OpenRingFd(MountPath{mount_dir(), object}, /*direct=*/false);
  if (file == nullptr || !file->caller_safe()) return false;
  if (KernelReadahead(file->fd(), offset, length)) return true;
  return posix_fadvise(file->fd(), static_cast<off_t>(offset),
                       static_cast<off_t>(length), POSIX_FADV_WILLNEED) == 0;
}

void HintReadV(absl::Span<const Request> reqs,
               absl::Span<const absl::StatusOr<size_t>> results,
               const CallReport& report) {
  // Ranges that read bytes, by file and offset (sorted in place: no
  // look-up through the requests), each file's run fed at once.
  struct Done {
    FileImpl* file;
    HintRange call;
  };
  absl::InlinedVector<Done, 32> done;
  uint64_t read = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].file == nullptr || !results[i].ok() || *results[i] == 0) {
      continue;
    }
    done.push_back({reqs[i].file, {reqs[i].offset, *results[i]}});
    read += *results[i];
  }
  const bool waited = report.cached_bytes < read;
  std::sort(done.begin(), done.end(), [](const Done& x, const Done& y) {
    if (x.file != y.file) return std::less<const FileImpl*>()(x.file, y.file);
    return x.call.offset < y.call.offset;
  });
  absl::InlinedVector<HintRange, 32> calls;
  for (size_t i = 0; i < done.size();) {
    calls.clear();
    size_t j = i;
    for (; j < done.size() && done[j].file == done[i].file; ++j) {
      calls.push_back(done[j].call);
    }
    done[i].file->HintAll(calls, waited);
    i = j;
  }
}

void ClientImpl::HintAhead(const ns::CachedLayout& layout, HintRange r) {
  if (r.length == 0) return;
  absl::StatusOr<ns::MappedRange> m =
      ns::MapRange(layout, r.offset, r.length, 0);
  if (!m.ok()) return;  // a hint only: the reads report any error
  for (const ns::Piece& p : m->pieces) {
    // The replica Dispatch would read: this host's node, or the only
    // admissible one. With a choice left to the balancer, no hint (it
    // could cost a disk the bytes another one serves).
    const v1::Replica* pick = nullptr;
    NodeRuntime* node = nullptr;
    int admissible = 0;
    for (const v1::Replica& rep : *p.replicas) {
      NodeRuntime* n = Node(rep.node_id());
      if (!Admissible(n)) continue;
      ++admissible;
      if (n->local()) {
        pick = &rep;
        node = n;
        admissible = 1;
        break;
      }
      pick = &rep;
      node = n;
    }
    if (admissible != 1) continue;
    node->ReadAhead(pick->object(), p.ObjectOffset(*pick), p.length);
  }
}

}  // namespace client_internal
}  // namespace rangefs
