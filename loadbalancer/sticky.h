// File: sticky.h
//
// "sticky": keeps a sequential stream on one replica, so that the storage
// node's read-ahead and page cache work for it.
//
// With stream_key != 0 the preferred replica is chosen by rendezvous (HRW)
// hashing: every candidate scores Hash(stream_key, node id) and the highest
// score wins. The choice depends only on the key and the set of node ids (not
// on their order), is the same in every process, and when one replica
// disappears only the streams that preferred it move.
//
// The preferred replica is used unless it is overloaded:
//   inflight(preferred) > overload_factor * min inflight + overload_slack
// (defaults 2x + 4); then, and for stream_key == 0, the pick falls back to
// least_loaded (least_loaded.h).
#ifndef RANGEFS_LOADBALANCER_STICKY_H_
#define RANGEFS_LOADBALANCER_STICKY_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/types/span.h"
#include "loadbalancer/least_loaded.h"
#include "loadbalancer/picker.h"

namespace rangefs {
namespace lb {

struct StickyOptions {
  int overload_factor = 2;
  int overload_slack = 4;
  LeastLoadedOptions fallback;  // for the least_loaded fallback
};

// Returns the index of the HRW-preferred replica for `stream_key` (ignoring
// load). `replicas` must not be empty. Deterministic across processes.
size_t PreferredReplica(absl::Span<const Candidate> replicas,
                        uint64_t stream_key);

// Returns a new sticky Policy. Never null.
std::unique_ptr<Policy> NewStickyPolicy(const StickyOptions& options = {});

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_STICKY_H_
