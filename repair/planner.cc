#include "repair/planner.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "loadbalancer/placement.h"
#include "namespace/layout.h"

namespace rangefs {
namespace keeper {
namespace {

using Replicas = google::protobuf::RepeatedPtrField<v1::Replica>;

const Replicas& SlotReplicas(const v1::FileLayout& l, bool striped, int slot) {
  return striped ? l.striped().targets(slot).replicas()
                 : l.extents(slot).replicas();
}

Replicas* MutableSlotReplicas(v1::FileLayout* l, bool striped, int slot) {
  return striped
             ? l->mutable_striped()->mutable_targets(slot)->mutable_replicas()
             : l->mutable_extents(slot)->mutable_replicas();
}

NodeCondition ConditionOf(const std::map<std::string, NodeView>& nodes,
                          const std::string& id) {
  auto it = nodes.find(id);
  return it == nodes.end() ? NodeCondition::kDead : it->second.condition;
}

bool NeedsMove(NodeCondition c) {
  return c == NodeCondition::kDead || c == NodeCondition::kDraining;
}

}  // namespace

std::string PickTarget(const std::map<std::string, NodeView>& nodes,
                       const std::map<std::string, uint64_t>& planned,
                       const std::set<std::string>& used,
                       const std::set<std::string>& used_zones, uint64_t bytes,
                       absl::BitGenRef bitgen) {
  std::vector<lb::PlacementNode> all, new_zone;
  for (const auto& [id, n] : nodes) {
    if (n.condition != NodeCondition::kUp || used.count(id) > 0) continue;
    auto p = planned.find(id);
    const uint64_t owed = p == planned.end() ? 0 : p->second;
    if (n.free_bytes <= owed || n.free_bytes - owed < bytes) continue;
    lb::PlacementNode pn;
    pn.id = id;
    pn.zone = n.zone;
    pn.free_bytes = n.free_bytes - owed;
    all.push_back(pn);
    if (used_zones.count(n.zone) == 0) new_zone.push_back(pn);
  }
  for (const auto* c : {&new_zone, &all}) {
    if (c->empty()) continue;
    auto placed = lb::PlaceStripes(*c, 1, 1, bitgen);
    if (placed.ok()) return (*placed)[0][0];
  }
  return "";
}

namespace {

bool Healthy(const std::map<std::string, NodeView>& nodes,
             const v1::Replica& r) {
  auto it = nodes.find(r.node_id());
  return it != nodes.end() && it->second.condition == NodeCondition::kUp &&
         it->second.corrupt.count(r.object()) == 0;
}

// A move of replica `r` of slot `slot` of `f` (its source, target and bytes
// for the caller to fill in).
Move MoveOf(const ns::FileEntry& f, bool striped, int slot,
            const v1::Replica& r) {
  Move m;
  m.path = f.path;
  m.mod_revision = f.mod_revision;
  m.striped = striped;
  m.slot = slot;
  m.object = r.object();
  m.object_offset = r.object_offset();
  m.from_node = r.node_id();
  return m;
}

// A drop of the slot's first leaving replica when every other replica is
// healthy (at least one); else false.
bool PlanDrop(const ns::FileEntry& f, bool striped, int slot,
              const Replicas& reps,
              const std::map<std::string, NodeView>& nodes, Plan* plan) {
  const v1::Replica* leaving = nullptr;
  int others = 0;
  for (const v1::Replica& r : reps) {
    if (r.leaving()) {
      if (leaving == nullptr) leaving = &r;
      continue;
    }
    if (!Healthy(nodes, r)) return false;
    ++others;
  }
  if (leaving == nullptr || others == 0) return false;
  Move m = MoveOf(f, striped, slot, *leaving);
  m.drop = true;
  // The replacing node, when the mark names it: DropReplica then requires
  // its replica, and the keeper clears the mark if it is gone.
  m.target_node = leaving->replaced_by();
  plan->moves.push_back(std::move(m));
  return true;
}

// The index of the move's replica on from_node in `reps`, or -1.
int FindFrom(const Replicas& reps, const Move& move) {
  for (int i = 0; i < reps.size(); ++i) {
    const v1::Replica& r = reps[i];
    if (r.node_id() == move.from_node && r.object() == move.object &&
        r.object_offset() == move.object_offset) {
      return i;
    }
  }
  return -1;
}

// The replicas of the move's slot in `out`, or FAILED_PRECONDITION if the
// slot is gone.
absl::StatusOr<Replicas*> MoveSlot(v1::FileLayout* out, const Move& move) {
  const bool striped = out->extents_size() == 0;
  const int slots =
      striped ? out->striped().targets_size() : out->extents_size();
  if (striped != move.striped || move.slot < 0 || move.slot >= slots) {
    return absl::FailedPreconditionError(absl::StrCat(
        move.path, ": slot ", move.slot, " no longer exists in its layout"));
  }
  return MutableSlotReplicas(out, striped, move.slot);
}

// The slot of `move` in `*out` and the index of its replica on from_node,
// for a move whose target holds no replica of the slot yet.
struct MoveSite {
  Replicas* reps;
  int from;
};
absl::StatusOr<MoveSite> FindMoveSite(v1::FileLayout* out, const Move& move) {
  absl::StatusOr<Replicas*> reps = MoveSlot(out, move);
  if (!reps.ok()) return reps.status();
  for (const v1::Replica& r : **reps) {
    if (r.node_id() == move.target_node) {
      return absl::FailedPreconditionError(
          absl::StrCat(move.path, ": slot ", move.slot,
                       " already has a replica on ", move.target_node));
    }
  }
  const int from = FindFrom(**reps, move);
  if (from < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(move.path, ": slot ", move.slot, " no longer has ",
                     move.object, " on ", move.from_node));
  }
  return MoveSite{*reps, from};
}

// The slot of `move` in `*out` and the index of its replica on from_node,
// which must be marked leaving.
absl::StatusOr<MoveSite> FindLeavingSite(v1::FileLayout* out,
                                         const Move& move) {
  absl::StatusOr<Replicas*> reps = MoveSlot(out, move);
  if (!reps.ok()) return reps.status();
  const int from = FindFrom(**reps, move);
  if (from < 0 || !(**reps)[from].leaving()) {
    return absl::FailedPreconditionError(
        absl::StrCat(move.path, ": slot ", move.slot, " no longer has ",
                     move.object, " on ", move.from_node, " marked leaving"));
  }
  return MoveSite{*reps, from};
}

}  // namespace

const char* NodeConditionName(NodeCondition c) {
  switch (c) {
    case NodeCondition::kUp:
      return "up";
    case NodeCondition::kDraining:
      return "draining";
    case NodeCondition::kMissing:
      return "missing";
    case NodeCondition::kDead:
      return "dead";
    case NodeCondition::kDisabled:
      return "disabled";
  }
  return "?";
}

NodeCondition ClassifyNode(const v1::NodeRecord& node,
                           const v1::LiveRecord* live, absl::Time missing_since,
                           absl::Time now, absl::Duration dead_after) {
  if (live == nullptr) {
    return now - missing_since >= dead_after ? NodeCondition::kDead
                                             : NodeCondition::kMissing;
  }
  switch (node.admin_state()) {
    case v1::ACTIVE:
      return NodeCondition::kUp;
    case v1::DRAINING:
      return NodeCondition::kDraining;
    default:
      return NodeCondition::kDisabled;
  }
}

NodeView MakeNodeView(const v1::NodeRecord& node, const v1::LiveRecord* live,
                      absl::Time missing_since, absl::Time now,
                      absl::Duration dead_after) {
  NodeView v;
  v.id = node.id();
  v.zone = node.zone();
  v.rack = node.rack();
  v.address = node.addresses().empty() ? "" : node.addresses(0);
  v.free_bytes = live != nullptr ? live->free_bytes() : 0;
  v.capacity_bytes = live != nullptr ? live->total_bytes() : 0;
  if (live != nullptr) {
    v.corrupt.insert(live->corrupt_objects().begin(),
                     live->corrupt_objects().end());
  }
  v.condition = ClassifyNode(node, live, missing_since, now, dead_after);
  return v;
}

Plan PlanMoves(const std::vector<ns::FileEntry>& files,
               const std::map<std::string, NodeView>& nodes,
               absl::BitGenRef bitgen) {
  Plan plan;
  std::map<std::string, uint64_t> planned;  // Bytes owed to each target.
  for (const ns::FileEntry& f : files) {
    // READY only: erasure-coded files (READY_EC) have one object per
    // column and parity that a copy would not rebuild; moving and
    // repairing them is not implemented yet (rangefs-keeper logs them).
    if (!f.invalid.empty() || f.layout.state() != v1::READY) continue;
    const bool striped = f.layout.extents_size() == 0;
    const int slots =
        striped ? f.layout.striped().targets_size() : f.layout.extents_size();
    for (int s = 0; s < slots; ++s) {
      const Replicas& reps = SlotReplicas(f.layout, striped, s);
      if (PlanDrop(f, striped, s, reps, nodes, &plan)) continue;
      const v1::Replica* from = nullptr;
      const v1::Replica* corrupt = nullptr;
      const v1::Replica* source = nullptr;
      bool source_up = false;
      std::set<std::string> used, used_zones;
      for (const v1::Replica& r : reps) {
        used.insert(r.node_id());
        const NodeCondition c = ConditionOf(nodes, r.node_id());
        // A leaving replica (a move's second step pending) is dropped once
        // the others are healthy (PlanDrop), never moved or repaired; it
        // may be a copy source meanwhile.
        if (NeedsMove(c) && from == nullptr && !r.leaving()) from = &r;
        if (c != NodeCondition::kUp && c != NodeCondition::kDraining) continue;
        if (nodes.at(r.node_id()).corrupt.count(r.object()) > 0) {
          if (corrupt == nullptr && !r.leaving()) corrupt = &r;
          continue;
        }
        if (!NeedsMove(c) && !r.leaving()) {
          used_zones.insert(nodes.at(r.node_id()).zone);
        }
        if (source == nullptr || (!source_up && c == NodeCondition::kUp)) {
          source = &r;
          source_up = c == NodeCondition::kUp;
        }
      }
      if (from == nullptr && corrupt == nullptr) continue;
      uint64_t bytes;
      if (striped) {
        bytes = f.layout.size() / std::max(1, slots);
      } else {
        bytes = f.layout.extents(s).length();
      }
      if (source == nullptr) {
        const v1::Replica* bad = from != nullptr ? from : corrupt;
        plan.stuck.push_back(
            {f.path, s,
             absl::StrCat(
                 "no good replica on a live node to copy from (",
                 bad->node_id(), " is ",
                 NodeConditionName(ConditionOf(nodes, bad->node_id())),
                 corrupt != nullptr ? "; a live replica is corrupt" : "", ")"),
             bytes});
        continue;
      }
      if (from == nullptr) {  // Repair the corrupt replica in place.
        Move m = MoveOf(f, striped, s, *corrupt);
        m.in_place = true;
        m.source_node = source->node_id();
        m.target_node = corrupt->node_id();
        m.bytes = bytes;
        plan.bytes += bytes;
        plan.moves.push_back(std::move(m));
        continue;
      }
      const std::string target =
          PickTarget(nodes, planned, used, used_zones, bytes, bitgen);
      if (target.empty()) {
        plan.stuck.push_back(
            {f.path, s,
             absl::StrCat("no up, active node without a replica has free "
                          "space for its ",
                          bytes, " bytes"),
             bytes});
        continue;
      }
      planned[target] += bytes;
      Move m = MoveOf(f, striped, s, *from);
      m.source_node = source->node_id();
      m.target_node = target;
      m.bytes = bytes;
      plan.bytes += bytes;
      plan.moves.push_back(std::move(m));
    }
  }
  return plan;
}

absl::StatusOr<v1::FileLayout> AddReplica(const v1::FileLayout& layout,
                                          const Move& move) {
  v1::FileLayout out = layout;
  RANGEFS_ASSIGN_OR_RETURN(MoveSite site, FindMoveSite(&out, move));
  site.reps->Mutable(site.from)->set_leaving(true);
  site.reps->Mutable(site.from)->set_replaced_by(move.target_node);
  v1::Replica* added = site.reps->Add();
  added->set_node_id(move.target_node);
  added->set_object(move.object);
  added->set_object_offset(move.object_offset);
  return out;
}

absl::Status CheckAddFits(const v1::FileLayout& layout, const Move& move) {
  RANGEFS_ASSIGN_OR_RETURN(v1::FileLayout next, AddReplica(layout, move));
  absl::Status valid = ns::ValidateLayout(next);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(move.path, ": slot ", move.slot,
                     " cannot take the new replica next to the leaving one: ",
                     valid.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::FileLayout> SwapReplica(const v1::FileLayout& layout,
                                           const Move& move) {
  v1::FileLayout out = layout;
  RANGEFS_ASSIGN_OR_RETURN(MoveSite site, FindMoveSite(&out, move));
  v1::Replica* r = site.reps->Mutable(site.from);
  r->set_node_id(move.target_node);
  r->set_leaving(false);
  return out;
}

absl::StatusOr<v1::FileLayout> DropReplica(const v1::FileLayout& layout,
                                           const Move& move) {
  v1::FileLayout out = layout;
  RANGEFS_ASSIGN_OR_RETURN(MoveSite site, FindLeavingSite(&out, move));
  Replicas* reps = site.reps;
  const int from = site.from;
  const std::string where = absl::StrCat(move.path, ": slot ", move.slot);
  int others = 0;
  bool target = false;
  for (const v1::Replica& r : *reps) {
    if (r.leaving()) continue;
    ++others;
    target = target || r.node_id() == move.target_node;
  }
  if (!move.target_node.empty() && !target) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, " no longer has the new replica on ", move.target_node));
  }
  if (others == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, " has no replica but the leaving one"));
  }
  reps->erase(reps->begin() + from);
  return out;
}

absl::StatusOr<v1::FileLayout> UnmarkLeaving(const v1::FileLayout& layout,
                                             const Move& move) {
  v1::FileLayout out = layout;
  RANGEFS_ASSIGN_OR_RETURN(MoveSite site, FindLeavingSite(&out, move));
  Replicas* reps = site.reps;
  const int from = site.from;
  const std::string where = absl::StrCat(move.path, ": slot ", move.slot);
  for (const v1::Replica& r : *reps) {
    if (!r.leaving() && r.node_id() == move.target_node) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, " still has the new replica on ", move.target_node));
    }
  }
  reps->Mutable(from)->set_leaving(false);
  reps->Mutable(from)->clear_replaced_by();
  return out;
}

bool IsStriped(const v1::FileLayout& layout) {
  return layout.extents_size() == 0;
}

int SlotCount(const v1::FileLayout& layout) {
  return IsStriped(layout) ? layout.striped().targets_size()
                           : layout.extents_size();
}

const Replicas& SlotReplicas(const v1::FileLayout& layout, int slot) {
  return SlotReplicas(layout, IsStriped(layout), slot);
}

uint64_t SlotBytes(const v1::FileLayout& layout, int slot) {
  if (!IsStriped(layout)) return layout.extents(slot).length();
  return layout.size() / static_cast<uint64_t>(std::max(1, SlotCount(layout)));
}

bool References(const v1::FileLayout& layout, const std::string& node_id,
                const std::string& object) {
  auto in = [&](const Replicas& reps) {
    for (const v1::Replica& r : reps) {
      if (r.node_id() == node_id && r.object() == object) return true;
    }
    return false;
  };
  for (const v1::Extent& e : layout.extents()) {
    if (in(e.replicas())) return true;
  }
  for (const auto& t : layout.striped().targets()) {
    if (in(t.replicas())) return true;
  }
  return false;
}

}  // namespace keeper
}  // namespace rangefs
