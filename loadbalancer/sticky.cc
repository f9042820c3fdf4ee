#include "loadbalancer/sticky.h"

#include <algorithm>

namespace rangefs {
namespace lb {
namespace {

// A stable 64-bit hash (FNV-1a); absl::Hash is seeded per process.
uint64_t Fnv1a(absl::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// splitmix64 finalizer.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class StickyPicker : public Picker {
 public:
  StickyPicker(absl::BitGenRef bitgen, const StickyOptions& options)
      : bitgen_(bitgen), options_(options) {}

  size_t Pick(absl::Span<const Candidate> replicas,
              uint64_t stream_key) override {
    if (replicas.size() <= 1) return 0;
    if (stream_key != 0) {
      size_t preferred = PreferredReplica(replicas, stream_key);
      int min_inflight = replicas[0].inflight;
      for (const Candidate& c : replicas) {
        min_inflight = std::min(min_inflight, c.inflight);
      }
      if (replicas[preferred].inflight <=
          options_.overload_factor * min_inflight + options_.overload_slack) {
        return preferred;
      }
    }
    return PickLeastLoaded(replicas, bitgen_, options_.fallback);
  }

 private:
  absl::BitGenRef bitgen_;
  const StickyOptions options_;
};

class StickyPolicy : public Policy {
 public:
  explicit StickyPolicy(const StickyOptions& options) : options_(options) {}
  absl::string_view name() const override { return "sticky"; }
  std::unique_ptr<Picker> NewPicker(absl::BitGenRef bitgen) override {
    return std::make_unique<StickyPicker>(bitgen, options_);
  }

 private:
  const StickyOptions options_;
};

}  // namespace

size_t PreferredReplica(absl::Span<const Candidate> replicas,
                        uint64_t stream_key) {
  const uint64_t key_hash = Mix(stream_key);
  size_t best = 0;
  uint64_t best_score = 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    uint64_t score = Mix(key_hash ^ Fnv1a(replicas[i].node));
    // Ties (only for equal node ids) go to the lower index.
    if (i == 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

std::unique_ptr<Policy> NewStickyPolicy(const StickyOptions& options) {
  return std::make_unique<StickyPolicy>(options);
}

}  // namespace lb
}  // namespace rangefs
