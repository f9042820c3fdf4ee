#include "repair/rebalance.h"

#include <set>
#include <utility>

namespace rangefs {
namespace keeper {

std::map<std::string, NodeFill> FillOfUpNodes(
    const std::vector<ns::FileEntry>& files,
    const std::map<std::string, NodeView>& nodes) {
  std::map<std::string, NodeFill> fill;
  bool all_known = true;
  for (const auto& [id, n] : nodes) {
    if (n.condition != NodeCondition::kUp) continue;
    fill[id].capacity = n.capacity_bytes;
    if (n.capacity_bytes == 0) all_known = false;
  }
  if (!all_known) {
    for (auto& [id, f] : fill) f.capacity = 1;
  }
  for (const ns::FileEntry& f : files) {
    // READY only: erasure-coded (READY_EC) columns are never moved yet.
    if (!f.invalid.empty() || f.layout.state() != v1::READY) continue;
    for (int s = 0; s < SlotCount(f.layout); ++s) {
      for (const v1::Replica& r : SlotReplicas(f.layout, s)) {
        auto it = fill.find(r.node_id());
        if (it != fill.end()) it->second.used += SlotBytes(f.layout, s);
      }
    }
  }
  return fill;
}

std::vector<Move> PlanRebalance(const std::vector<ns::FileEntry>& files,
                                const std::map<std::string, NodeView>& nodes,
                                const RebalanceOptions& options) {
  std::vector<Move> moves;
  if (options.tolerance <= 0) return moves;
  std::map<std::string, NodeFill> fill = FillOfUpNodes(files, nodes);
  if (fill.size() < 2) return moves;
  long double used = 0, cap = 0;
  for (const auto& [id, f] : fill) {
    used += f.used;
    cap += f.capacity;
  }
  const long double mean = used / cap;  // Bytes per unit of capacity.
  auto upper = [&](const NodeFill& f) {
    return mean * (1 + options.tolerance) * f.capacity;
  };
  auto lower = [&](const NodeFill& f) {
    return mean * (1 - options.tolerance) * f.capacity;
  };
  std::set<std::pair<std::string, int>> taken;  // (path, slot) moved now
  while (static_cast<int>(moves.size()) < options.max_moves) {
    // The node furthest above its band and the one furthest below.
    std::string hi, lo;
    long double hi_excess = 0, lo_gap = 0;
    for (const auto& [id, f] : fill) {
      const long double over = f.used - upper(f);
      const long double under = lower(f) - f.used;
      if (hi.empty() || over > hi_excess) hi = id, hi_excess = over;
      if (lo.empty() || under > lo_gap) lo = id, lo_gap = under;
    }
    if (hi == lo || (hi_excess <= 0 && lo_gap <= 0)) break;
    NodeFill& h = fill[hi];
    NodeFill& l = fill[lo];
    const NodeView& hv = nodes.at(hi);
    const NodeView& lv = nodes.at(lo);
    const Move* best = nullptr;
    Move candidate;
    uint64_t best_bytes = 0;
    for (const ns::FileEntry& f : files) {
      if (!f.invalid.empty() || f.layout.state() != v1::READY) continue;
      for (int s = 0; s < SlotCount(f.layout); ++s) {
        if (taken.count({f.path, s}) > 0) continue;
        const uint64_t b = SlotBytes(f.layout, s);
        if (b <= best_bytes || l.used + b > upper(l) || h.used < lower(h) + b) {
          continue;
        }
        const v1::Replica* from = nullptr;
        bool target_has = false, leaving = false;
        std::set<std::string> other_zones;
        for (const v1::Replica& r : SlotReplicas(f.layout, s)) {
          leaving = leaving || r.leaving();
          if (r.node_id() == hi) {
            from = &r;
          } else {
            if (r.node_id() == lo) target_has = true;
            auto n = nodes.find(r.node_id());
            if (n != nodes.end()) other_zones.insert(n->second.zone);
          }
        }
        // A slot with a replica leaving is the repair planner's (a drop).
        if (from == nullptr || target_has || leaving ||
            hv.corrupt.count(from->object()) > 0) {
          continue;
        }
        if (lv.zone != hv.zone && other_zones.count(lv.zone) > 0) continue;
        candidate.path = f.path;
        candidate.mod_revision = f.mod_revision;
        candidate.striped = IsStriped(f.layout);
        candidate.slot = s;
        candidate.object = from->object();
        candidate.object_offset = from->object_offset();
        candidate.from_node = hi;
        candidate.source_node = hi;
        candidate.target_node = lo;
        candidate.bytes = b;
        best = &candidate;
        best_bytes = b;
      }
    }
    if (best == nullptr) break;
    taken.insert({best->path, best->slot});
    h.used -= best->bytes;
    l.used += best->bytes;
    moves.push_back(*best);
  }
  return moves;
}

}  // namespace keeper
}  // namespace rangefs
