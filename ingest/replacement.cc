#include "ingest/replacement.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace ingest {

absl::StatusOr<lb::NodeId> PickReplacement(
    absl::Span<const lb::PlacementNode> candidates,
    const std::set<lb::NodeId>& exclude,
    const std::set<std::string>& used_zones,
    const std::map<lb::NodeId, uint64_t>& planned, absl::BitGenRef bitgen) {
  std::vector<lb::PlacementNode> all, new_zone;
  for (const lb::PlacementNode& n : candidates) {
    if (!n.live || n.admin != lb::AdminState::kActive) continue;
    if (exclude.count(n.id) > 0) continue;
    auto p = planned.find(n.id);
    const uint64_t owed = p == planned.end() ? 0 : p->second;
    if (n.free_bytes <= owed) continue;
    lb::PlacementNode pn = n;
    pn.free_bytes = n.free_bytes - owed;
    all.push_back(pn);
    if (used_zones.count(n.zone) == 0) new_zone.push_back(pn);
  }
  for (const auto* c : {&new_zone, &all}) {
    if (c->empty()) continue;
    auto placed = lb::PlaceStripes(*c, 1, 1, bitgen);
    if (placed.ok()) return (*placed)[0][0];
  }
  return absl::FailedPreconditionError(
      absl::StrCat("no other live active node with free space (",
                   exclude.size(), " excluded)"));
}

bool NodeFailure(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss:
      return true;
    default:
      return false;
  }
}

}  // namespace ingest
}  // namespace rangefs
