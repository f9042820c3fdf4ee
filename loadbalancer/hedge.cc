#include "loadbalancer/hedge.h"

#include <algorithm>

namespace rangefs {
namespace lb {

HedgeBudget::HedgeBudget(Clock* clock, double max_ratio, int burst)
    : clock_(clock != nullptr ? clock : Clock::Real()),
      max_ratio_(std::min(1.0, std::max(0.0, max_ratio))),
      burst_(static_cast<double>(std::max(1, burst))) {
  stats_.tokens = burst_;
}

void HedgeBudget::OnReads(uint64_t n) {
  if (n == 0) return;
  absl::MutexLock l(&mu_);
  stats_.reads += n;
  stats_.tokens =
      std::min(burst_, stats_.tokens + static_cast<double>(n) * max_ratio_);
}

bool HedgeBudget::TryAcquire(int tokens) {
  // Never more than the bucket holds: a costlier hedge stays possible.
  const double n = std::min(burst_, static_cast<double>(std::max(tokens, 1)));
  absl::MutexLock l(&mu_);
  // The epsilon absorbs rounding from adding max_ratio many times.
  if (stats_.tokens >= n - 1e-9) {
    stats_.tokens = std::max(0.0, stats_.tokens - n);
    ++stats_.hedges_granted;
    return true;
  }
  ++stats_.hedges_denied;
  stats_.last_denied = clock_->Now();
  return false;
}

HedgeBudget::Stats HedgeBudget::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

absl::Duration HedgeDelay(const LatencyTracker& tracker, absl::string_view node,
                          double quantile, absl::Duration min,
                          uint64_t min_samples, absl::Duration cold) {
  const HistogramSnapshot global = tracker.GlobalWindowSnapshot();
  const HistogramSnapshot s = tracker.NodeSnapshot(node);
  if (s.count < std::max<uint64_t>(1, min_samples)) {
    absl::Duration d = min;
    if (global.count > 0) d = std::max(d, global.Quantile(quantile));
    if (global.count < min_samples) d = std::max(d, cold);
    return d;
  }
  absl::Duration d = s.Quantile(quantile);
  if (global.count >= std::max<uint64_t>(1, min_samples)) {
    d = std::min(d, global.Quantile(quantile));
  }
  return std::max(d, min);
}

bool HedgingAllowed(const LatencyTracker& tracker,
                    absl::Span<const NodeId> replicas, const HedgeRule& rule) {
  if (replicas.size() < 2) return false;
  const HistogramSnapshot global = tracker.GlobalWindowSnapshot();
  if (global.count == 0 || global.count < rule.min_samples) return true;
  const double limit_s =
      rule.slow_factor * absl::ToDoubleSeconds(global.Quantile(0.95));
  for (const NodeId& node : replicas) {
    const HistogramSnapshot s = tracker.NodeSnapshot(node);
    if (s.count == 0 || s.count < rule.min_samples) return true;  // unknown
    if (absl::ToDoubleSeconds(s.Quantile(0.5)) <= limit_s) return true;
  }
  return false;
}

}  // namespace lb
}  // namespace rangefs
