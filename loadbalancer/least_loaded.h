// File: least_loaded.h
//
// "least_loaded": power of two choices with a C3-like cost. For each pick,
// two distinct candidates are sampled uniformly and the one with the lower
//
//   cost = (outstanding_bytes + 1) * max(ewma_latency, latency_floor)
//
// wins; equal costs are broken by lower `inflight`, then by the first sample.
// A replica whose latency is unknown (ewma_latency == 0) is costed at the
// mean of the known latencies among the candidates (a neutral value), or at
// the floor when none is known. With probability `explore_probability` a
// uniformly random candidate is picked instead, so that a replica that looks
// slow still gets a trickle of reads and its latency estimate recovers.
#ifndef RANGEFS_LOADBALANCER_LEAST_LOADED_H_
#define RANGEFS_LOADBALANCER_LEAST_LOADED_H_

#include <cstddef>
#include <memory>

#include "absl/random/bit_gen_ref.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "loadbalancer/picker.h"

namespace rangefs {
namespace lb {

struct LeastLoadedOptions {
  // Latencies below this count as this (avoids zero costs and noise between
  // fast replicas).
  absl::Duration latency_floor = absl::Microseconds(50);
  // Probability in [0, 1] of a uniformly random pick.
  double explore_probability = 0.01;
};

// Returns the index chosen by the rule above. `replicas` must not be empty.
// Exposed so that other policies (sticky) can fall back to it.
size_t PickLeastLoaded(absl::Span<const Candidate> replicas,
                       absl::BitGenRef bitgen,
                       const LeastLoadedOptions& options = {});

// Returns a new least-loaded Policy. Never null.
std::unique_ptr<Policy> NewLeastLoadedPolicy(
    const LeastLoadedOptions& options = {});

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_LEAST_LOADED_H_
