// File: replacement.h
//
// Re-placement of one replica during a put: when the node a column object
// was being written to fails (agent down, disk full, read-only), the
// ingest writer writes that object to another node instead of failing the
// whole put. This picks that node by the ingest placement rules
// (loadbalancer/placement.h), restricted to one slot:
//
//   - eligible: live, admin-active, free space left after the bytes this
//     put already sends there (`planned`), and not in `exclude` (the
//     column's other replicas and every node that failed in this put);
//   - a zone none of the column's other replicas is in, when there is one;
//   - then the most free space.
//
//   absl::StatusOr<lb::NodeId> n = PickReplacement(
//       candidates, {"n1", "n2"}, {"z0"}, planned, bitgen);
#ifndef RANGEFS_INGEST_REPLACEMENT_H_
#define RANGEFS_INGEST_REPLACEMENT_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/random/bit_gen_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "loadbalancer/placement.h"

namespace rangefs {
namespace ingest {

// The node to write one replica to instead. FAILED_PRECONDITION when no
// node is eligible.
absl::StatusOr<lb::NodeId> PickReplacement(
    absl::Span<const lb::PlacementNode> candidates,
    const std::set<lb::NodeId>& exclude,
    const std::set<std::string>& used_zones,
    const std::map<lb::NodeId, uint64_t>& planned, absl::BitGenRef bitgen);

// Whether a write that failed with `s` may succeed on another node: a
// failure of the node or its agent (UNAVAILABLE, DEADLINE_EXCEEDED,
// RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, INTERNAL, UNKNOWN,
// DATA_LOSS), not of the put itself (the caller says whether the local
// file failed; CANCELLED, INVALID_ARGUMENT, ALREADY_EXISTS, ... are not).
bool NodeFailure(const absl::Status& s);

}  // namespace ingest
}  // namespace rangefs

#endif  // RANGEFS_INGEST_REPLACEMENT_H_
