// File: internal/readahead_hints.h
//
// ReadaheadHints: decides, from the offsets and sizes of a file's read
// calls, which bytes ahead of a sequential reader to ask the kernel for
// (its own readahead on the column objects: ClientImpl::HintAhead), so
// that a cold sequential scan keeps the disk busy on every column while
// the reader copies what is already in the page cache. It does no I/O.
//
// The rule, like the kernel's own readahead on one file:
// - a call continues a stream when it starts where an earlier call of the
//   file ended (a few streams per file: readers sharing a file, a Reader
//   and its prefetch); anything else starts a new stream and hints nothing
//   (random reads never hint);
// - a stream's first call hints nothing (it is no stream yet); it starts
//   hinting at a later call that waited for some byte (CallReport: not
//   all from the page cache), so that reads of cached files cost nothing;
//   then the bytes up to `window` past the stream's end are hinted;
//   `window` starts at 4 calls' worth (at least min_window) and doubles
//   with every hint, up to max_window;
// - a stream hints again only when what it hinted runs within half a
//   window of its end: one hint per half window read, so cached data
//   costs a syscall per half window, not per call.
//
//   ReadaheadHints hints({.min_window = 1 << 20, .max_window = 32 << 20});
//   HintRange h = hints.Observe(offset, n, file_size, /*waited=*/true);
//   if (h.length > 0) ReadAhead(h.offset, h.length);
//
// Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_READAHEAD_HINTS_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_READAHEAD_HINTS_H_

#include <array>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace rangefs {
namespace client_internal {

// Bytes [offset, offset + length) of the file; length 0: nothing.
struct HintRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct ReadaheadWindow {
  uint64_t min_window = uint64_t{1} << 20;   // the first hint's least size
  uint64_t max_window = uint64_t{32} << 20;  // a stream's hints never pass
                                             // its end by more
};

class ReadaheadHints {
 public:
  // Streams followed at once per file; the least recently used goes.
  static constexpr int kStreams = 4;

  explicit ReadaheadHints(ReadaheadWindow w) : w_(w) {}

  // A read call of `length` bytes at `offset` of a file of `size` bytes
  // returned; `waited`: not every byte came from the page cache. Returns
  // the range to hint now (clipped at `size`), or an empty one.
  HintRange Observe(uint64_t offset, uint64_t length, uint64_t size,
                    bool waited);
  // Observe of each of `calls` (each a call's offset and length, in the
  // order they are to be seen) under one hold of the lock: a ReadV's
  // ranges of one file. The ranges to hint, in order.
  absl::InlinedVector<HintRange, 2> ObserveAll(
      absl::Span<const HintRange> calls, uint64_t size, bool waited);

 private:
  HintRange ObserveLocked(uint64_t offset, uint64_t length, uint64_t size,
                          bool waited) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Stream {
    uint64_t end = 0;         // where the next call continues it
    uint64_t hinted_end = 0;  // hinted up to here
    uint64_t window = 0;      // 0: no hint yet
    uint64_t last_use = 0;    // 0: a free slot
  };

  const ReadaheadWindow w_;
  absl::Mutex mu_;
  std::array<Stream, kStreams> streams_ ABSL_GUARDED_BY(mu_);
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_READAHEAD_HINTS_H_
