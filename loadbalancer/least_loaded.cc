#include "loadbalancer/least_loaded.h"

#include <algorithm>

#include "absl/random/distributions.h"

namespace rangefs {
namespace lb {
namespace {

double Cost(const Candidate& c, double neutral_latency_s, double floor_s) {
  double latency_s = c.ewma_latency > absl::ZeroDuration()
                         ? absl::ToDoubleSeconds(c.ewma_latency)
                         : neutral_latency_s;
  latency_s = std::max(latency_s, floor_s);
  double bytes = static_cast<double>(std::max<int64_t>(c.outstanding_bytes, 0));
  return (bytes + 1.0) * latency_s;
}

class LeastLoadedPicker : public Picker {
 public:
  LeastLoadedPicker(absl::BitGenRef bitgen, const LeastLoadedOptions& options)
      : bitgen_(bitgen), options_(options) {}

  size_t Pick(absl::Span<const Candidate> replicas,
              uint64_t /*stream_key*/) override {
    return PickLeastLoaded(replicas, bitgen_, options_);
  }

 private:
  absl::BitGenRef bitgen_;
  const LeastLoadedOptions options_;
};

class LeastLoadedPolicy : public Policy {
 public:
  explicit LeastLoadedPolicy(const LeastLoadedOptions& options)
      : options_(options) {}
  absl::string_view name() const override { return "least_loaded"; }
  std::unique_ptr<Picker> NewPicker(absl::BitGenRef bitgen) override {
    return std::make_unique<LeastLoadedPicker>(bitgen, options_);
  }

 private:
  const LeastLoadedOptions options_;
};

}  // namespace

size_t PickLeastLoaded(absl::Span<const Candidate> replicas,
                       absl::BitGenRef bitgen,
                       const LeastLoadedOptions& options) {
  const size_t n = replicas.size();
  if (n <= 1) return 0;
  if (options.explore_probability > 0 &&
      absl::Bernoulli(bitgen, options.explore_probability)) {
    return absl::Uniform<size_t>(bitgen, 0, n);
  }
  size_t a = absl::Uniform<size_t>(bitgen, 0, n);
  size_t b = absl::Uniform<size_t>(bitgen, 0, n - 1);
  if (b >= a) ++b;

  // Neutral latency for candidates without an estimate: the mean of the
  // known ones.
  double known_sum = 0;
  int known = 0;
  for (const Candidate& c : replicas) {
    if (c.ewma_latency > absl::ZeroDuration()) {
      known_sum += absl::ToDoubleSeconds(c.ewma_latency);
      ++known;
    }
  }
  const double floor_s = absl::ToDoubleSeconds(options.latency_floor);
  const double neutral_s = known > 0 ? known_sum / known : floor_s;

  const double cost_a = Cost(replicas[a], neutral_s, floor_s);
  const double cost_b = Cost(replicas[b], neutral_s, floor_s);
  if (cost_a < cost_b) return a;
  if (cost_b < cost_a) return b;
  return replicas[b].inflight < replicas[a].inflight ? b : a;
}

std::unique_ptr<Policy> NewLeastLoadedPolicy(
    const LeastLoadedOptions& options) {
  return std::make_unique<LeastLoadedPolicy>(options);
}

}  // namespace lb
}  // namespace rangefs
