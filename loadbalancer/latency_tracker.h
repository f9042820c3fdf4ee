// File: latency_tracker.h
//
// LatencyTracker: per-node and process-wide read latency statistics.
//
// For each node it keeps an EWMA of latency (Ewma(); feeds
// Candidate::ewma_latency) and a log-bucketed histogram over a sliding window
// (Quantile(); feeds hedge delays). Buckets cover 1 us .. 100 s with 10
// buckets per decade (upper bounds 1us * 10^(i/10), i = 0..80) plus one
// overflow bucket, so quantiles are within ~6% (one half-bucket) of the true
// value after geometric interpolation, and clamped to the observed min/max. The
// window is `window` long, kept as `window_slices` ring slices: a sample stays
// counted for between window - window/window_slices and window.
//
// The process-wide histogram exists twice: windowed (GlobalQuantile) and
// cumulative since construction (GlobalCumulativeSnapshot, for Prometheus
// export, whose histograms must be monotonic).
//
// Thread-safe. Record() takes a shared lock on the node map and the node's
// own mutex; it allocates only the first time a node is seen.
#ifndef RANGEFS_LOADBALANCER_LATENCY_TRACKER_H_
#define RANGEFS_LOADBALANCER_LATENCY_TRACKER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/clock.h"

namespace rangefs {
namespace lb {

// A copy of one histogram, in the shape of a Prometheus histogram.
struct HistogramSnapshot {
  // Finite bucket upper bounds in seconds, ascending ("le" labels). The last
  // bucket, counts.back(), is +Inf and has no entry here.
  std::vector<double> upper_bounds_seconds;
  // Samples per bucket, NOT cumulative; size = upper_bounds_seconds.size()+1.
  std::vector<uint64_t> counts;
  double sum_seconds = 0;
  uint64_t count = 0;
  // The smallest and largest sample; 0 if count == 0. Quantile estimates are
  // clamped to [min, max], which makes them exact for constant latencies.
  double min_seconds = 0;
  double max_seconds = 0;

  // Returns the estimated q-quantile (q in [0, 1]); zero if count == 0.
  absl::Duration Quantile(double q) const;
};

struct LatencyTrackerOptions {
  double ewma_alpha = 0.2;  // weight of the newest sample, in (0, 1]
  absl::Duration window = absl::Seconds(60);
  int window_slices = 6;  // >= 1
};

class LatencyTracker {
 private:
  struct NodeStats;

 public:
  // A node's entry, for Record without a lookup by name (a hot path).
  class NodeHandle {
   public:
    NodeHandle() = default;

   private:
    friend class LatencyTracker;
    explicit NodeHandle(NodeStats* s) : stats_(s) {}
    NodeStats* stats_ = nullptr;
  };

  static constexpr int kBucketsPerDecade = 10;
  static constexpr int kFiniteBuckets = 81;  // 1 us .. 100 s
  static constexpr int kBuckets = kFiniteBuckets + 1;

  // `clock` is not owned, must outlive the tracker; null = Clock::Real().
  explicit LatencyTracker(Clock* clock, LatencyTrackerOptions options = {});
  LatencyTracker(const LatencyTracker&) = delete;
  LatencyTracker& operator=(const LatencyTracker&) = delete;

  // Records one completed request to `node`. Negative latencies count as 0.
  void Record(absl::string_view node, absl::Duration latency);
  // `node`'s entry (created, with no samples, if new); valid as long as the
  // tracker. Record(Handle(n), l) is Record(n, l).
  NodeHandle Handle(absl::string_view node);
  // Precondition: `node` came from this tracker's Handle.
  void Record(NodeHandle node, absl::Duration latency);
  // The same, for a request that ended at `now` (the tracker's clock's
  // MonotonicNow, read by the caller anyway): no clock read of its own.
  void Record(NodeHandle node, absl::Duration latency, absl::Time now);
  // Records several requests that ended at `now`: Record(node, latency,
  // now) for each, taking each node's lock once a run of samples of that
  // node and the global lock once.
  struct Sample {
    NodeHandle node;
    absl::Duration latency;
  };
  void RecordAll(absl::Span<const Sample> samples, absl::Time now);

  // Returns the node's EWMA latency; zero if the node has no samples.
  absl::Duration Ewma(absl::string_view node) const;
  // The same through the node's handle (no lookup by name).
  absl::Duration Ewma(NodeHandle node) const;
  // Returns the node's q-quantile (q in [0, 1], e.g. 0.5, 0.95, 0.99) over
  // the window; zero if it has no samples in the window.
  absl::Duration Quantile(absl::string_view node, double q) const;
  // Returns the node's sample count in the window.
  uint64_t Count(absl::string_view node) const;
  // Returns the node's windowed histogram (empty counts if unknown).
  HistogramSnapshot NodeSnapshot(absl::string_view node) const;

  // The same over all nodes.
  absl::Duration GlobalQuantile(double q) const;
  uint64_t GlobalCount() const;
  HistogramSnapshot GlobalWindowSnapshot() const;
  // All samples since construction (monotonic counts; for export).
  HistogramSnapshot GlobalCumulativeSnapshot() const;

  // Returns the finite bucket upper bounds in seconds (kFiniteBuckets).
  static absl::Span<const double> BucketUpperBounds();

 private:
  using Counts = std::array<uint64_t, kBuckets>;
  struct Slice {
    int64_t epoch = -1;
    Counts counts{};
    double sum_seconds = 0;
    uint64_t count = 0;
    double min_seconds = 0;
    double max_seconds = 0;
    void Add(int bucket, double seconds);
    void MergeInto(HistogramSnapshot& out) const;
  };
  // A ring of slices; thread-compatible.
  struct Window {
    explicit Window(int slices) : slices(slices) {}
    void Add(int64_t epoch, int bucket, double seconds);
    // Sums the slices inside the window ending at `epoch` into `out`.
    void Merge(int64_t epoch, HistogramSnapshot& out) const;
    std::vector<Slice> slices;
  };
  struct NodeStats {
    explicit NodeStats(int slices) : window(slices) {}
    mutable absl::Mutex mu;
    // Written under mu; read without it (Ewma: a hot path). Negative: no
    // samples yet.
    std::atomic<double> ewma_seconds{-1};
    Window window ABSL_GUARDED_BY(mu);
  };

  // Adds one sample to a node's EWMA and window (n.mu held).
  void AddToNode(NodeStats& n, int64_t epoch, int bucket, double seconds) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(n.mu);
  int64_t Epoch() const { return EpochAt(clock_->MonotonicNow()); }
  int64_t EpochAt(absl::Time now) const;
  static int Bucket(double seconds);
  static HistogramSnapshot EmptySnapshot();

  Clock* const clock_;
  const LatencyTrackerOptions options_;
  const absl::Duration slice_;
  const absl::Time origin_;

  mutable absl::Mutex map_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<NodeStats>> nodes_
      ABSL_GUARDED_BY(map_mu_);

  mutable absl::Mutex global_mu_;
  Window global_window_ ABSL_GUARDED_BY(global_mu_);
  Slice global_total_ ABSL_GUARDED_BY(global_mu_);
};

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_LATENCY_TRACKER_H_
