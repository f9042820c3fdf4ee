#include "loadbalancer/placement.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/distributions.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace lb {

absl::StatusOr<std::vector<std::vector<NodeId>>> PlaceStripes(
    absl::Span<const PlacementNode> nodes, int width, int replicas,
    absl::BitGenRef bitgen) {
  if (width < 1 || replicas < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "placement: width and replicas must be >= 1, got width=", width,
        " replicas=", replicas));
  }
  absl::flat_hash_set<absl::string_view> ids;
  int not_live = 0, not_active = 0, full = 0;
  std::vector<const PlacementNode*> eligible;
  for (const PlacementNode& n : nodes) {
    if (!ids.insert(n.id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("placement: node id \"", n.id, "\" listed twice"));
    }
    if (!n.live) {
      ++not_live;
    } else if (n.admin != AdminState::kActive) {
      ++not_active;
    } else if (n.free_bytes == 0) {
      ++full;
    } else {
      eligible.push_back(&n);
    }
  }
  const int e = static_cast<int>(eligible.size());
  if (e < replicas) {
    return absl::FailedPreconditionError(absl::StrCat(
        "placement: need ", replicas,
        " eligible (live, active, non-full) nodes for ", replicas,
        " replicas, have ", e, " of ", nodes.size(), " (", not_live,
        " not live, ", not_active, " draining/disabled, ", full, " full)"));
  }

  // Zones as small integers.
  absl::flat_hash_map<absl::string_view, int> zone_ids;
  std::vector<int> zone(e);
  for (int i = 0; i < e; ++i) {
    zone[i] =
        zone_ids.emplace(eligible[i]->zone, zone_ids.size()).first->second;
  }
  const int num_zones = static_cast<int>(zone_ids.size());
  const bool distinct_zones = num_zones >= replicas;

  // Fair share of the slots by free bytes.
  double total_free = 0;
  for (const PlacementNode* n : eligible) {
    total_free += static_cast<double>(n->free_bytes);
  }
  const double slots = static_cast<double>(width) * replicas;
  std::vector<double> share(e);
  for (int i = 0; i < e; ++i) {
    share[i] =
        slots * static_cast<double>(eligible[i]->free_bytes) / total_free;
  }

  std::vector<int> assigned(e, 0);
  std::vector<int> pairs(static_cast<size_t>(e) * e, 0);
  std::vector<std::vector<NodeId>> out(width);
  std::vector<int> chosen;
  std::vector<int> zone_uses(num_zones, 0);
  for (int t = 0; t < width; ++t) {
    chosen.clear();
    std::fill(zone_uses.begin(), zone_uses.end(), 0);
    for (int r = 0; r < replicas; ++r) {
      int best = -1;
      // Lexicographic key, smaller is better.
      int best_zone = 0, best_pairs = 0;
      double best_deficit = 0, best_tiebreak = 0;
      for (int i = 0; i < e; ++i) {
        if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) {
          continue;
        }
        const int zone_key = zone_uses[zone[i]];
        if (distinct_zones && zone_key > 0) continue;
        // How far below its share the node stays after taking this slot,
        // rounded so that nodes within half a slot of each other tie and the
        // partner rule decides.
        const double deficit = -std::floor(share[i] - assigned[i] + 0.5);
        int pair_key = 0;
        for (int c : chosen) pair_key += pairs[static_cast<size_t>(i) * e + c];
        const double tiebreak = absl::Uniform<double>(bitgen, 0.0, 1.0);
        const bool better =
            best < 0 || std::make_tuple(zone_key, deficit, pair_key, tiebreak) <
                            std::make_tuple(best_zone, best_deficit, best_pairs,
                                            best_tiebreak);
        if (better) {
          best = i;
          best_zone = zone_key;
          best_deficit = deficit;
          best_pairs = pair_key;
          best_tiebreak = tiebreak;
        }
      }
      // Cannot happen: e >= replicas, and with distinct_zones an unused zone
      // is left.
      if (best < 0) {
        return absl::InternalError(
            absl::StrCat("placement: no node for target ", t, " replica ", r));
      }
      for (int c : chosen) {
        ++pairs[static_cast<size_t>(best) * e + c];
        ++pairs[static_cast<size_t>(c) * e + best];
      }
      chosen.push_back(best);
      ++assigned[best];
      ++zone_uses[zone[best]];
      out[t].push_back(eligible[best]->id);
    }
  }
  return out;
}

}  // namespace lb
}  // namespace rangefs
