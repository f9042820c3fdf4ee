// File: clock.h
//
// Time as an injectable interface, so that code which waits, times out or
// measures latency can be tested with a FakeClock (base/testing/fake_clock.h).
#ifndef RANGEFS_BASE_CLOCK_H_
#define RANGEFS_BASE_CLOCK_H_

#include "absl/time/time.h"

namespace rangefs {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Returns the current wall time.
  virtual absl::Time Now() = 0;
  // Returns a monotonic time, for measuring intervals.
  virtual absl::Time MonotonicNow() = 0;
  // Blocks the calling thread for `d`.
  virtual void SleepFor(absl::Duration d) = 0;

  // Returns the process-wide real clock. Never null; never destroyed.
  static Clock* Real();
};

}  // namespace rangefs

#endif  // RANGEFS_BASE_CLOCK_H_
