// File: fake_clock.h
//
// A Clock whose time moves only when a test says so. SleepFor(d) advances
// the clock by `d` and returns at once, so code that sleeps runs instantly
// and deterministically. Thread-safe.
#ifndef RANGEFS_BASE_TESTING_FAKE_CLOCK_H_
#define RANGEFS_BASE_TESTING_FAKE_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"

namespace rangefs {

class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000))
      : now_(start) {}

  absl::Time Now() override {
    absl::MutexLock l(&mu_);
    return now_;
  }
  absl::Time MonotonicNow() override { return Now(); }
  void SleepFor(absl::Duration d) override { Advance(d); }

  void Advance(absl::Duration d) {
    absl::MutexLock l(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rangefs

#endif  // RANGEFS_BASE_TESTING_FAKE_CLOCK_H_
