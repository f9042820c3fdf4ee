#include "storage_node/stats.h"

#include <algorithm>
#include <cmath>

namespace rangefs {
namespace node {

LatencyWindow::LatencyWindow(size_t capacity)
    : capacity_(capacity == 0 ? 1 : capacity) {}

void LatencyWindow::Record(absl::Duration d) {
  absl::MutexLock l(&mu_);
  int64_t ns = absl::ToInt64Nanoseconds(d);
  if (samples_ns_.size() < capacity_) {
    samples_ns_.push_back(ns);
  } else {
    samples_ns_[next_] = ns;
    next_ = (next_ + 1) % capacity_;
  }
}

absl::Duration LatencyWindow::Percentile(double p) const {
  std::vector<int64_t> copy;
  {
    absl::MutexLock l(&mu_);
    copy = samples_ns_;
  }
  if (copy.empty()) return absl::ZeroDuration();
  p = std::min(100.0, std::max(p, 0.0));
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * copy.size()));
  if (rank == 0) rank = 1;
  std::nth_element(copy.begin(), copy.begin() + (rank - 1), copy.end());
  return absl::Nanoseconds(copy[rank - 1]);
}

size_t LatencyWindow::size() const {
  absl::MutexLock l(&mu_);
  return samples_ns_.size();
}

}  // namespace node
}  // namespace rangefs
