// File: picker.h
//
// The replica-choice interface. client_lib filters out nodes that the
// NodeHealthTable does not admit, builds one Candidate per remaining replica
// of an extent, and asks a Picker (one per ReadV batch) for an index. The
// policies only rank: they do no I/O, read no clock and own no threads.
// Retries belong to the caller (re-pick without the failed node).
//
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<lb::Policy> policy,
//                            lb::NewPolicy("least_loaded"));  // registry.h
//   absl::InsecureBitGen bitgen;
//   std::unique_ptr<lb::Picker> picker = policy->NewPicker(bitgen);
//   size_t i = picker->Pick(candidates, /*stream_key=*/file_id ^ extent);
#ifndef RANGEFS_LOADBALANCER_PICKER_H_
#define RANGEFS_LOADBALANCER_PICKER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/random/bit_gen_ref.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "loadbalancer/types.h"

namespace rangefs {
namespace lb {

// What the client knows about one healthy replica. Plain data.
struct Candidate {
  NodeId node;
  int inflight = 0;               // outstanding requests from this process
  int64_t outstanding_bytes = 0;  // bytes requested and not yet received
  absl::Duration ewma_latency = absl::ZeroDuration();  // zero = unknown
  bool same_zone = false;  // the node is in the client's zone
};

// Picks replicas for one batch. Not thread-safe; create one per batch.
class Picker {
 public:
  virtual ~Picker() = default;
  // Returns the index of the chosen candidate, in [0, replicas.size()).
  // `replicas` must not be empty. `stream_key` identifies a sequential stream
  // (e.g. a hash of file id and extent index); 0 = none. Policies that do not
  // care about streams ignore it.
  virtual size_t Pick(absl::Span<const Candidate> replicas,
                      uint64_t stream_key = 0) = 0;
};

// A replica-choice policy. Long-lived and thread-safe.
class Policy {
 public:
  virtual ~Policy() = default;
  // Returns the registry name ("round_robin", "least_loaded", "sticky").
  virtual absl::string_view name() const = 0;
  // Returns a new Picker drawing randomness from `bitgen`, which is not owned
  // and must outlive the Picker. The Picker must not outlive the Policy.
  virtual std::unique_ptr<Picker> NewPicker(absl::BitGenRef bitgen) = 0;
};

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_PICKER_H_
