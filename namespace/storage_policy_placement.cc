#include "namespace/storage_policy_placement.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rangefs {
namespace ns {
namespace {

// At most this many names in a message.
constexpr size_t kNamesShown = 12;

std::string Names(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::vector<std::string> shown(
      names.begin(), names.begin() + std::min(names.size(), kNamesShown));
  std::string out = absl::StrJoin(shown, ", ");
  if (names.size() > kNamesShown) {
    absl::StrAppend(&out, ", ... ", names.size() - kNamesShown, " more");
  }
  return out;
}

bool Placeable(const v1::LiveRecord& l) {
  return l.health() == v1::LiveRecord::HEALTHY ||
         l.health() == v1::LiveRecord::DEGRADED;
}

}  // namespace

PlacementCapacity CountPlacementCapacity(const std::vector<NodeEntry>& nodes,
                                         const std::vector<LiveEntry>& live) {
  std::set<std::string> alive;
  for (const LiveEntry& l : live) {
    if (l.invalid.empty() && Placeable(l.record)) {
      alive.insert(l.record.node_id());
    }
  }
  PlacementCapacity c;
  std::vector<const v1::NodeRecord*> placed;
  for (const NodeEntry& n : nodes) {
    if (!n.invalid.empty() || n.record.admin_state() != v1::ACTIVE ||
        alive.count(n.record.id()) == 0) {
      continue;
    }
    c.live_nodes.push_back(n.record.id());
    placed.push_back(&n.record);
    c.racks_known = c.racks_known || !n.record.rack().empty();
  }
  std::sort(c.live_nodes.begin(), c.live_nodes.end());
  if (!c.racks_known) return c;
  std::set<std::string> domains;
  for (const v1::NodeRecord* n : placed) {
    domains.insert(n->rack().empty()
                       ? absl::StrCat("(node ", n->id(), ", no rack)")
                       : absl::StrCat(n->zone(), "/", n->rack()));
  }
  c.domains.assign(domains.begin(), domains.end());
  return c;
}

absl::Status CheckGoalPlaceable(const LayoutGoal& goal,
                                const PlacementCapacity& capacity) {
  const int need = goal.is_ec() ? goal.ec_k + goal.ec_m : goal.replicas;
  const int have = static_cast<int>(capacity.live_nodes.size());
  if (have < need) {
    return absl::FailedPreconditionError(
        absl::StrCat(goal.ToString(), " needs ", need,
                     " live ACTIVE nodes (distinct nodes per ",
                     goal.is_ec() ? "row" : "extent", "); the cluster has ",
                     have, " (", Names(capacity.live_nodes), ")"));
  }
  const int domains = static_cast<int>(capacity.domains.size());
  if (goal.is_ec() && capacity.racks_known && domains < need) {
    return absl::FailedPreconditionError(absl::StrCat(
        goal.ToString(), " needs ", need,
        " distinct racks (one cell of a row per rack, so a rack lost loses "
        "one cell); the live ACTIVE nodes are in ",
        domains, " (zone/rack: ", Names(capacity.domains), ")"));
  }
  return absl::OkStatus();
}

}  // namespace ns
}  // namespace rangefs
