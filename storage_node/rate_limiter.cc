#include "storage_node/rate_limiter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace node {

RateLimiter::RateLimiter(uint64_t bytes_per_sec, Clock* clock)
    : bytes_per_sec_(bytes_per_sec),
      clock_(clock != nullptr ? clock : Clock::Real()) {}

absl::Status RateLimiter::Acquire(uint64_t bytes, absl::Time deadline) {
  if (bytes_per_sec_ == 0 || bytes == 0) return absl::OkStatus();
  const absl::Duration cost =
      absl::Seconds(static_cast<double>(bytes) / bytes_per_sec_);
  absl::Duration wait;
  {
    absl::MutexLock l(&mu_);
    const absl::Time now = clock_->MonotonicNow();
    const absl::Time end = std::max(now, next_) + cost;
    if (end > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rate limit of ", bytes_per_sec_, " bytes/s: ", bytes,
          " bytes would take until ", absl::FormatDuration(end - now),
          " from now, past the deadline"));
    }
    next_ = end;
    wait = end - now;
  }
  if (wait > absl::ZeroDuration()) clock_->SleepFor(wait);
  return absl::OkStatus();
}

}  // namespace node
}  // namespace rangefs
