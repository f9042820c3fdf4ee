#include "loadbalancer/round_robin.h"

#include <atomic>
#include <cstdint>

namespace rangefs {
namespace lb {
namespace {

class RoundRobinPicker : public Picker {
 public:
  explicit RoundRobinPicker(std::atomic<uint64_t>* counter)
      : counter_(counter) {}

  size_t Pick(absl::Span<const Candidate> replicas,
              uint64_t /*stream_key*/) override {
    if (replicas.size() <= 1) return 0;
    return static_cast<size_t>(
        counter_->fetch_add(1, std::memory_order_relaxed) % replicas.size());
  }

 private:
  std::atomic<uint64_t>* const counter_;  // owned by the Policy
};

class RoundRobinPolicy : public Policy {
 public:
  absl::string_view name() const override { return "round_robin"; }
  std::unique_ptr<Picker> NewPicker(absl::BitGenRef /*bitgen*/) override {
    return std::make_unique<RoundRobinPicker>(&counter_);
  }

 private:
  std::atomic<uint64_t> counter_{0};
};

}  // namespace

std::unique_ptr<Policy> NewRoundRobinPolicy() {
  return std::make_unique<RoundRobinPolicy>();
}

}  // namespace lb
}  // namespace rangefs
