// File: storage_policy_placement.h
//
// Whether a cluster can place a layout goal (storage_policy.h): N replicas
// need N live ACTIVE nodes; RS(k, m) needs k + m of them, and, where node
// records carry racks, k + m distinct failure domains (zone/rack pairs),
// the same rule the ingest writer and the keeper place rows by.
// `rangefs-admin policy set` refuses a goal that fails it; `doctor` reports
// a policy that fails it after the cluster shrank.
//
//   PlacementCapacity c = CountPlacementCapacity(nodes, live);
//   absl::Status s = CheckGoalPlaceable(goal, c);  // FAILED_PRECONDITION
//
// Pure functions; thread-safe.
#ifndef RANGEFS_NAMESPACE_STORAGE_POLICY_PLACEMENT_H_
#define RANGEFS_NAMESPACE_STORAGE_POLICY_PLACEMENT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "namespace/layout_goal.h"
#include "namespace/store.h"

namespace rangefs {
namespace ns {

// What new data can be placed on now.
struct PlacementCapacity {
  // Valid node records, admin state ACTIVE, with a valid live record whose
  // health is HEALTHY or DEGRADED (the ingest writer's eligible nodes).
  std::vector<std::string> live_nodes;
  // True if at least one of live_nodes has a rack in its record.
  bool racks_known = false;
  // Distinct failure domains among live_nodes: "zone/rack" for a node
  // with a rack; a node without one (when others have one) is a domain
  // of its own. Sorted. Empty when !racks_known.
  std::vector<std::string> domains;
};

PlacementCapacity CountPlacementCapacity(const std::vector<NodeEntry>& nodes,
                                         const std::vector<LiveEntry>& live);

// OK if `goal` can be placed on `capacity`; else FAILED_PRECONDITION saying
// what it needs and what the cluster has, e.g. "ec=6+3 needs 9 live ACTIVE
// nodes; the cluster has 5 (n1, n2, n3, n4, n5)".
absl::Status CheckGoalPlaceable(const LayoutGoal& goal,
                                const PlacementCapacity& capacity);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_STORAGE_POLICY_PLACEMENT_H_
