// File: rate_limiter.h
//
// A byte-rate cap shared by concurrent callers (a node's copies from peer
// agents): each Acquire reserves its bytes' share of time on one timeline
// (after the reservations before it) and sleeps until that share has
// passed, so that the callers together stay under the rate, even for a
// single small transfer. Idle time is not banked.
//
//   RateLimiter limiter(100 << 20);  // 100 MiB/s
//   RANGEFS_RETURN_IF_ERROR(limiter.Acquire(chunk.size(), deadline));
//
// Thread-safe.
#ifndef RANGEFS_STORAGE_NODE_RATE_LIMITER_H_
#define RANGEFS_STORAGE_NODE_RATE_LIMITER_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"

namespace rangefs {
namespace node {

class RateLimiter {
 public:
  // `bytes_per_sec` 0: unlimited. `clock` is not owned; nullptr: the real
  // clock.
  explicit RateLimiter(uint64_t bytes_per_sec, Clock* clock = nullptr);

  // Blocks until the time `bytes` take at the rate has passed.
  // DEADLINE_EXCEEDED, at once and without using any of the rate, when
  // that would be after `deadline` (monotonic clock of `clock`, as returned
  // by MonotonicNow).
  absl::Status Acquire(uint64_t bytes, absl::Time deadline);

  uint64_t bytes_per_sec() const { return bytes_per_sec_; }

 private:
  const uint64_t bytes_per_sec_;
  Clock* const clock_;
  absl::Mutex mu_;
  absl::Time next_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_RATE_LIMITER_H_
