// File: hedge.h
//
// Hedged reads: after HedgeDelay() without an answer from the primary
// replica, the client may send the same read to a second replica, if
// HedgingAllowed() and HedgeBudget::TryAcquire() both say yes.
//
//   budget.OnRead();                                  // every primary read
//   absl::Duration d = HedgeDelay(tracker, primary);  // arm a timer
//   ... timer fires, primary still pending:
//   if (HedgingAllowed(tracker, replica_ids) && budget.TryAcquire()) hedge();
#ifndef RANGEFS_LOADBALANCER_HEDGE_H_
#define RANGEFS_LOADBALANCER_HEDGE_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/clock.h"
#include "loadbalancer/latency_tracker.h"
#include "loadbalancer/types.h"

namespace rangefs {
namespace lb {

// A token bucket that caps hedges at `max_ratio` of primary reads: each
// OnRead() adds max_ratio tokens (capped at `burst`), each granted hedge
// takes one. The bucket starts full, so over any run of R reads at most
// max_ratio * R + burst hedges are granted. Thread-safe.
class HedgeBudget {
 public:
  struct Stats {
    uint64_t reads = 0;
    uint64_t hedges_granted = 0;
    uint64_t hedges_denied = 0;
    double tokens = 0;
    absl::Time last_denied = absl::InfinitePast();  // Clock::Now()
  };

  // `clock` is not owned, must outlive the budget; null = Clock::Real(). It
  // only timestamps Stats::last_denied. max_ratio is clamped to [0, 1] and
  // burst to >= 1.
  explicit HedgeBudget(Clock* clock, double max_ratio = 0.05, int burst = 10);
  HedgeBudget(const HedgeBudget&) = delete;
  HedgeBudget& operator=(const HedgeBudget&) = delete;

  // Counts one primary read.
  void OnRead() { OnReads(1); }
  // Counts `n` primary reads, with one lock (as n OnRead()s).
  void OnReads(uint64_t n);
  // Takes `tokens` tokens (at least one: a hedge that reads as much as
  // `tokens` reads, e.g. an erasure-coded rebuild from k cells) and returns
  // true, or returns false if fewer are left. Does not block.
  bool TryAcquire(int tokens = 1);
  Stats stats() const;

 private:
  Clock* const clock_;
  const double max_ratio_;
  const double burst_;
  mutable absl::Mutex mu_;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

// Returns how long to wait for `node` before hedging: its windowed
// `quantile` latency, or the process-wide one if the node has fewer than
// `min_samples` samples, and never less than `min`. Never more than the
// process-wide windowed quantile either: a node that is slow all the time
// has a high quantile of its own, and waiting for it would leave exactly
// the stragglers that hedging is for ("later than 95% of reads", The Tail
// at Scale) unhedged. While the process-wide window has fewer than
// `min_samples` samples too (a new process), the delay is at least `cold`
// (a prior: the latency assumed before any is known), else a first read of
// every node would be hedged at once and spend the budget.
absl::Duration HedgeDelay(const LatencyTracker& tracker, absl::string_view node,
                          double quantile = 0.95,
                          absl::Duration min = absl::Milliseconds(1),
                          uint64_t min_samples = 10,
                          absl::Duration cold = absl::ZeroDuration());

struct HedgeRule {
  // A replica is "slow" if its windowed p50 > slow_factor * process-wide p95.
  double slow_factor = 3.0;
  // Latency estimates with fewer samples (per node or process-wide) are
  // ignored: such a replica does not count as slow.
  uint64_t min_samples = 10;
};

// Returns whether a hedge for a read with these candidate replicas (the
// primary included) is worthwhile. The rule:
//   - false if there are fewer than 2 replicas (nowhere to hedge to);
//   - true if the process-wide window has fewer than min_samples samples;
//   - false if EVERY replica is slow (its p50 > slow_factor * process-wide
//     p95, with >= min_samples samples): the cluster or these nodes are
//     overloaded and a hedge would only add load;
//   - true otherwise.
bool HedgingAllowed(const LatencyTracker& tracker,
                    absl::Span<const NodeId> replicas,
                    const HedgeRule& rule = {});

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_HEDGE_H_
