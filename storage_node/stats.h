// File: stats.h
//
// Latency percentiles over a sliding window of recent samples, for the
// node's GetStats and (later) its live record in etcd.
#ifndef RANGEFS_STORAGE_NODE_STATS_H_
#define RANGEFS_STORAGE_NODE_STATS_H_

#include <cstddef>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rangefs {
namespace node {

// Keeps the last `capacity` samples. Thread-safe.
class LatencyWindow {
 public:
  explicit LatencyWindow(size_t capacity = 4096);
  void Record(absl::Duration d);
  // Returns the `p`-th percentile (0 < p <= 100, nearest rank) of the
  // window, or zero when empty. O(capacity).
  absl::Duration Percentile(double p) const;
  size_t size() const;

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::vector<int64_t> samples_ns_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;  // Overwrite position when full.
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_STATS_H_
