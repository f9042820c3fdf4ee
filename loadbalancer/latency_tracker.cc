#include "loadbalancer/latency_tracker.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/inlined_vector.h"

namespace rangefs {
namespace lb {
namespace {

const std::array<double, LatencyTracker::kFiniteBuckets>& Bounds() {
  static const auto* const bounds = [] {
    auto* b = new std::array<double, LatencyTracker::kFiniteBuckets>();
    for (int i = 0; i < LatencyTracker::kFiniteBuckets; ++i) {
      (*b)[i] = 1e-6 * std::pow(10.0, static_cast<double>(i) /
                                          LatencyTracker::kBucketsPerDecade);
    }
    return b;
  }();
  return *bounds;
}

}  // namespace

absl::Duration HistogramSnapshot::Quantile(double q) const {
  if (count == 0 || counts.empty()) return absl::ZeroDuration();
  q = std::min(1.0, std::max(0.0, q));
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return absl::ZeroDuration();
  const double rank = q * static_cast<double>(total);
  const double step = std::pow(10.0, 1.0 / LatencyTracker::kBucketsPerDecade);
  double estimate =
      upper_bounds_seconds.empty() ? 0 : upper_bounds_seconds.back();
  uint64_t before = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    if (static_cast<double>(before + counts[i]) >= rank) {
      if (i < upper_bounds_seconds.size()) {  // else: overflow bucket
        const double upper = upper_bounds_seconds[i];
        const double lower =
            i == 0 ? upper / step : upper_bounds_seconds[i - 1];
        double f = (rank - static_cast<double>(before)) /
                   static_cast<double>(counts[i]);
        f = std::min(1.0, std::max(0.0, f));
        estimate = lower * std::pow(upper / lower, f);
      }
      break;
    }
    before += counts[i];
  }
  if (max_seconds >= min_seconds && max_seconds > 0) {
    estimate = std::min(max_seconds, std::max(min_seconds, estimate));
  }
  return absl::Seconds(estimate);
}

void LatencyTracker::Slice::Add(int bucket, double seconds) {
  if (count == 0) {
    min_seconds = max_seconds = seconds;
  } else {
    min_seconds = std::min(min_seconds, seconds);
    max_seconds = std::max(max_seconds, seconds);
  }
  ++counts[bucket];
  sum_seconds += seconds;
  ++count;
}

void LatencyTracker::Slice::MergeInto(HistogramSnapshot& out) const {
  if (count == 0) return;
  for (int i = 0; i < kBuckets; ++i) out.counts[i] += counts[i];
  if (out.count == 0) {
    out.min_seconds = min_seconds;
    out.max_seconds = max_seconds;
  } else {
    out.min_seconds = std::min(out.min_seconds, min_seconds);
    out.max_seconds = std::max(out.max_seconds, max_seconds);
  }
  out.sum_seconds += sum_seconds;
  out.count += count;
}

void LatencyTracker::Window::Add(int64_t epoch, int bucket, double seconds) {
  Slice& s =
      slices[static_cast<size_t>(epoch % static_cast<int64_t>(slices.size()))];
  if (s.epoch != epoch) {
    s.epoch = epoch;
    s.counts.fill(0);
    s.sum_seconds = 0;
    s.count = 0;
    s.min_seconds = 0;
    s.max_seconds = 0;
  }
  s.Add(bucket, seconds);
}

void LatencyTracker::Window::Merge(int64_t epoch,
                                   HistogramSnapshot& out) const {
  const int64_t oldest = epoch - static_cast<int64_t>(slices.size()) + 1;
  for (const Slice& s : slices) {
    if (s.epoch < oldest || s.epoch > epoch) continue;
    s.MergeInto(out);
  }
}

LatencyTracker::LatencyTracker(Clock* clock, LatencyTrackerOptions options)
    : clock_(clock != nullptr ? clock : Clock::Real()),
      options_([&] {
        options.window_slices = std::max(1, options.window_slices);
        if (options.window <= absl::ZeroDuration()) {
          options.window = absl::Seconds(60);
        }
        if (!(options.ewma_alpha > 0 && options.ewma_alpha <= 1)) {
          options.ewma_alpha = 0.2;
        }
        return options;
      }()),
      slice_(options_.window / options_.window_slices),
      origin_(clock_->MonotonicNow()),
      global_window_(options_.window_slices) {}

absl::Span<const double> LatencyTracker::BucketUpperBounds() {
  return absl::MakeConstSpan(Bounds());
}

int LatencyTracker::Bucket(double seconds) {
  const auto& b = Bounds();
  return static_cast<int>(std::lower_bound(b.begin(), b.end(), seconds) -
                          b.begin());
}

int64_t LatencyTracker::EpochAt(absl::Time now) const {
  absl::Duration since = now - origin_;
  if (since < absl::ZeroDuration()) return 0;
  return absl::IDivDuration(since, slice_, &since);
}

HistogramSnapshot LatencyTracker::EmptySnapshot() {
  HistogramSnapshot s;
  s.upper_bounds_seconds.assign(Bounds().begin(), Bounds().end());
  s.counts.assign(kBuckets, 0);
  return s;
}

void LatencyTracker::Record(absl::string_view node, absl::Duration latency) {
  Record(Handle(node), latency);
}

LatencyTracker::NodeHandle LatencyTracker::Handle(absl::string_view node) {
  {
    absl::ReaderMutexLock l(&map_mu_);
    auto it = nodes_.find(node);
    if (it != nodes_.end()) return NodeHandle(it->second.get());
  }
  absl::WriterMutexLock l(&map_mu_);
  auto& slot = nodes_[node];
  if (slot == nullptr) {
    slot = std::make_unique<NodeStats>(options_.window_slices);
  }
  return NodeHandle(slot.get());
}

void LatencyTracker::Record(NodeHandle node, absl::Duration latency) {
  Record(node, latency, clock_->MonotonicNow());
}

void LatencyTracker::AddToNode(NodeStats& n, int64_t epoch, int bucket,
                               double seconds) const {
  const double old = n.ewma_seconds.load(std::memory_order_relaxed);
  n.ewma_seconds.store(
      old < 0 ? seconds
              : options_.ewma_alpha * seconds + (1 - options_.ewma_alpha) * old,
      std::memory_order_relaxed);
  n.window.Add(epoch, bucket, seconds);
}

void LatencyTracker::Record(NodeHandle node, absl::Duration latency,
                            absl::Time now) {
  const Sample one{node, latency};
  RecordAll({&one, 1}, now);
}

void LatencyTracker::RecordAll(absl::Span<const Sample> samples,
                               absl::Time now) {
  if (samples.empty()) return;
  const int64_t epoch = EpochAt(now);
  absl::InlinedVector<std::pair<int, double>, 16> at;  // bucket, seconds
  at.reserve(samples.size());
  for (const Sample& x : samples) {
    const double seconds = std::max(0.0, absl::ToDoubleSeconds(x.latency));
    at.emplace_back(Bucket(seconds), seconds);
  }
  for (size_t i = 0; i < samples.size();) {
    NodeStats& n = *samples[i].node.stats_;
    absl::MutexLock nl(&n.mu);
    for (; i < samples.size() && samples[i].node.stats_ == &n; ++i) {
      AddToNode(n, epoch, at[i].first, at[i].second);
    }
  }
  absl::MutexLock gl(&global_mu_);
  for (const auto& [bucket, seconds] : at) {
    global_window_.Add(epoch, bucket, seconds);
    global_total_.Add(bucket, seconds);
  }
}

absl::Duration LatencyTracker::Ewma(absl::string_view node) const {
  absl::ReaderMutexLock l(&map_mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return absl::ZeroDuration();
  return Ewma(NodeHandle(it->second.get()));
}

absl::Duration LatencyTracker::Ewma(NodeHandle node) const {
  const double s = node.stats_->ewma_seconds.load(std::memory_order_relaxed);
  return s < 0 ? absl::ZeroDuration() : absl::Seconds(s);
}

HistogramSnapshot LatencyTracker::NodeSnapshot(absl::string_view node) const {
  HistogramSnapshot out = EmptySnapshot();
  const int64_t epoch = Epoch();
  absl::ReaderMutexLock l(&map_mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return out;
  absl::MutexLock nl(&it->second->mu);
  it->second->window.Merge(epoch, out);
  return out;
}

absl::Duration LatencyTracker::Quantile(absl::string_view node,
                                        double q) const {
  return NodeSnapshot(node).Quantile(q);
}

uint64_t LatencyTracker::Count(absl::string_view node) const {
  return NodeSnapshot(node).count;
}

HistogramSnapshot LatencyTracker::GlobalWindowSnapshot() const {
  HistogramSnapshot out = EmptySnapshot();
  const int64_t epoch = Epoch();
  absl::MutexLock l(&global_mu_);
  global_window_.Merge(epoch, out);
  return out;
}

HistogramSnapshot LatencyTracker::GlobalCumulativeSnapshot() const {
  HistogramSnapshot out = EmptySnapshot();
  absl::MutexLock l(&global_mu_);
  global_total_.MergeInto(out);
  return out;
}

absl::Duration LatencyTracker::GlobalQuantile(double q) const {
  return GlobalWindowSnapshot().Quantile(q);
}

uint64_t LatencyTracker::GlobalCount() const {
  return GlobalWindowSnapshot().count;
}

}  // namespace lb
}  // namespace rangefs
