// File: internal/prefetch_policy.h
//
// PrefetchPolicy: whether the Reader (reader.h) should read the next call's
// bytes in the background for a caller whose reads are big enough to land
// straight in its own buffer (a direct read: one copy). Such a prefetch
// lands in the Reader's buffer instead, so its bytes are copied once more
// into the caller's; it pays only for a caller that spends time between
// calls (the prefetch overlaps that time with the read), never for one
// that calls again at once (a scan that only moves bytes): one read is in
// flight for it either way, and the copy is pure cost. Over NFS on
// tbf-capped links (4 threads x 16 MiB calls, a shared 2-core machine) the
// copy took CPU per GB from 0.58 s to 0.75 s and the scan from 367-371 to
// 250-280 MB/s (RESULTS.md, part U "default prefetch").
//
// The rule: prefetch while min(the caller's time between calls, the time a
// read takes) is at least twice the extra copy's time (at kCopyBytesPerSec);
// the smaller of the last two gaps counts, so that one call delayed by the
// scheduler does not turn prefetching on. Before the first gap is known the
// answer is yes (the Reader's old behaviour). Small reads (served from the
// Reader's window, whose prefetched buffer is swapped in, not copied) are
// not the policy's business. Thread-compatible.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_PREFETCH_POLICY_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_PREFETCH_POLICY_H_

#include <cstddef>

#include "absl/time/time.h"

namespace rangefs {
namespace client_internal {

class PrefetchPolicy {
 public:
  // A conservative memcpy rate (a loaded machine's): the extra copy's cost.
  static constexpr double kCopyBytesPerSec = 4e9;

  // The caller asked for a fill `gap` after the last one returned to it.
  void Gap(absl::Duration gap);
  // A fill's own read took `took` (a direct read, or a prefetch's thread).
  void Fill(absl::Duration took);
  // Whether reading `bytes` ahead in the background pays for copying them
  // once more.
  bool Pays(size_t bytes) const;

 private:
  absl::Duration gaps_[2] = {absl::InfiniteDuration(),
                             absl::InfiniteDuration()};
  absl::Duration fill_ = absl::InfiniteDuration();
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_PREFETCH_POLICY_H_
