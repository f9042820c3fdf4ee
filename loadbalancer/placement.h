// File: placement.h
//
// Chooses storage nodes for a new file's stripe targets at ingest.
//
// Rules:
//   - Eligible nodes are live, admin-active and have free_bytes > 0.
//   - The replicas of one target are on distinct nodes and, when the
//     eligible nodes span at least `replicas` zones, in distinct zones;
//     otherwise zones are spread as evenly as possible within the target.
//   - Capacity: each node's fair share of the width*replicas slots is
//     proportional to its free_bytes; slots go greedily to the node furthest
//     below its share (a node holds at most one replica per target).
//   - Partners: among nodes equally far below their share, the one that
//     already shares the fewest targets with this target's chosen nodes wins,
//     so no pair of nodes shares far more targets than others.
//   - Remaining ties are broken at random with `bitgen`.
// With equal free space, every node gets width*replicas/N slots +-1.
#ifndef RANGEFS_LOADBALANCER_PLACEMENT_H_
#define RANGEFS_LOADBALANCER_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/random/bit_gen_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "loadbalancer/types.h"

namespace rangefs {
namespace lb {

// What ingest knows about one node (from its etcd node and live records).
struct PlacementNode {
  NodeId id;
  std::string zone;  // empty = the zone "" (all such nodes share it)
  uint64_t free_bytes = 0;
  AdminState admin = AdminState::kActive;
  bool live = true;
};

// Returns, for each of `width` stripe targets, `replicas` distinct node ids.
// INVALID_ARGUMENT if width < 1, replicas < 1 or node ids repeat;
// FAILED_PRECONDITION if fewer than `replicas` nodes are eligible. `bitgen`
// is used only during the call.
absl::StatusOr<std::vector<std::vector<NodeId>>> PlaceStripes(
    absl::Span<const PlacementNode> nodes, int width, int replicas,
    absl::BitGenRef bitgen);

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_PLACEMENT_H_
