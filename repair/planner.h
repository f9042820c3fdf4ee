// File: planner.h
//
// What rangefs-keeper moves where: pure functions over the namespace as
// listed (node records, live records, layouts). No I/O, no clock of its own.
//
// Node conditions (ClassifyNode):
//   kUp        live record present, admin ACTIVE: a copy source and target.
//   kDraining  admin DRAINING (live): a copy source; everything moves off.
//   kMissing   live record absent for less than dead_after (a restart, a
//              network blip): nothing moves yet; not a source or target.
//   kDead      live record absent for dead_after or longer, or no node
//              record at all: its replicas are replaced.
//   kDisabled  admin DISABLED but live: neither source nor target.
// A replica on a kDead or kDraining node is replaced: a new replica of the
// same object goes to a target chosen by the ingest placement rules
// (loadbalancer/placement.h: distinct nodes, distinct zones when the
// target's zone is not yet used, most free space relative to planned
// moves) among kUp nodes that hold no replica of that extent or stripe
// column; it is copied from a replica on a kUp node (else a kDraining one).
// A corrupt replica (in its node's scrub report) is never a source; on an
// up or draining node it is repaired in place: copied over from a good
// replica, with no layout change. A slot whose every replica is on a
// non-source node or corrupt is reported as stuck.
// A move changes the layout in two steps, each a compare-and-swap:
// AddReplica puts the new replica in the slot and marks the replaced one
// `leaving`; DropReplica then removes it. A slot left with a leaving
// replica (the keeper died or etcd failed between the steps) gets a drop
// (no copy) once every other replica of the slot is on an up node and not
// corrupt: those are the slot's target count, the leaving one the extra.
//
//   std::map<std::string, NodeView> nodes = ClassifyNodes(...);
//   Plan plan = PlanMoves(files, nodes, bitgen);
#ifndef RANGEFS_REPAIR_PLANNER_H_
#define RANGEFS_REPAIR_PLANNER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/random/bit_gen_ref.h"
#include "absl/time/time.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace keeper {

enum class NodeCondition { kUp, kDraining, kMissing, kDead, kDisabled };

// "up", "draining", "missing", "dead", "disabled".
const char* NodeConditionName(NodeCondition c);

struct NodeView {
  std::string id;
  std::string zone;
  std::string rack;     // NodeRecord.rack ("" when not set)
  std::string address;  // First agent address of the node record.
  uint64_t free_bytes = 0;
  uint64_t capacity_bytes = 0;  // LiveRecord.total_bytes; 0: unknown.
  NodeCondition condition = NodeCondition::kUp;
  // Objects the node's scrub found corrupt (LiveRecord.corrupt_objects).
  std::set<std::string> corrupt;
};

// The condition of a node with record `node` whose live record is `live`
// (nullptr: absent) and which was first seen without one at
// `missing_since` (ignored when live is present).
NodeCondition ClassifyNode(const v1::NodeRecord& node,
                           const v1::LiveRecord* live, absl::Time missing_since,
                           absl::Time now, absl::Duration dead_after);

// The view of node `node` (live record `live`, nullptr: absent, since
// `missing_since`): its zone, first address, free and total bytes from the
// live record, corrupt objects from its scrub report, and ClassifyNode.
NodeView MakeNodeView(const v1::NodeRecord& node, const v1::LiveRecord* live,
                      absl::Time missing_since, absl::Time now,
                      absl::Duration dead_after);

// Picks the node for one new replica (or erasure-coded column) of `bytes`
// whose slot is on `used` nodes (zones `used_zones`): an up node not in
// `used` whose free space, less the bytes already `planned` onto it,
// holds it; a zone not in used_zones first, then the ingest placement
// rules (most free space). Empty if no node is eligible.
std::string PickTarget(const std::map<std::string, NodeView>& nodes,
                       const std::map<std::string, uint64_t>& planned,
                       const std::set<std::string>& used,
                       const std::set<std::string>& used_zones, uint64_t bytes,
                       absl::BitGenRef bitgen);

// One replica replacement: copy `object` from `source_node` to
// `target_node`, add it to slot `slot` of `path`'s layout with the replica
// on `from_node` marked leaving (AddReplica), then remove that one
// (DropReplica). An in-place repair copies over the corrupt replica on
// from_node == target_node and leaves the layout alone. A drop only
// removes the leaving replica on from_node (source_node is empty;
// target_node is the mark's replaced_by, the node whose replica must still
// be in the slot, or empty for a mark written without it).
struct Move {
  bool in_place = false;
  bool drop = false;
  std::string path;
  int64_t mod_revision = 0;  // Of the layout the move was planned on.
  bool striped = false;
  int slot = 0;  // Extent index, or stripe column when striped.
  std::string object;
  uint64_t object_offset = 0;
  std::string from_node;    // Replica being replaced (dead or draining).
  std::string source_node;  // Healthy replica to copy from.
  std::string target_node;  // Where the new replica goes.
  uint64_t bytes = 0;       // Bytes of the slot in the file (estimate).
};

struct StuckSlot {
  std::string path;
  int slot = 0;
  std::string reason;
  uint64_t bytes = 0;  // Of the slot in the file (estimate).
};

struct Plan {
  std::vector<Move> moves;
  std::vector<StuckSlot> stuck;  // No source, or no eligible target.
  uint64_t bytes = 0;            // Sum of moves' bytes.
};

// The moves that bring the files back onto healthy, active nodes, at most
// one per slot (a slot with two bad replicas gets its second move in a
// later round). Files not READY and invalid entries are skipped.
// `nodes` maps node id to its view; a replica on a node missing from it
// counts as dead. `bitgen` breaks placement ties.
Plan PlanMoves(const std::vector<ns::FileEntry>& files,
               const std::map<std::string, NodeView>& nodes,
               absl::BitGenRef bitgen);

// A move's first step: `layout` with a replica on `move.target_node`
// (same object and offset as the one on `move.from_node`) added to the
// move's slot and the one on from_node marked leaving. FAILED_PRECONDITION
// when the slot no longer has that replica, or already has one on the
// target (the layout changed since planning).
absl::StatusOr<v1::FileLayout> AddReplica(const v1::FileLayout& layout,
                                          const Move& move);

// OK if the move's first step fits the layout rules: AddReplica(layout,
// move) passes ns::ValidateLayout (at most ns::kMaxReplicas replicas a
// slot, encoded size under ns::kMaxLayoutBytes). INVALID_ARGUMENT naming
// the slot and the broken rule: the move must be one SwapReplica instead
// (decide before copying). AddReplica's FAILED_PRECONDITION passes through.
absl::Status CheckAddFits(const v1::FileLayout& layout, const Move& move);

// A move in one step, for a slot that cannot take AddReplica (a full slot,
// a layout at its size limit) or whose replaced replica is on a node
// without a node record (a layout naming it would be refused): `layout`
// with the replica on `move.from_node` replaced by one on
// `move.target_node` (same object and offset, not leaving). The replaced
// replica needs its trash record before this is written.
// FAILED_PRECONDITION as AddReplica.
absl::StatusOr<v1::FileLayout> SwapReplica(const v1::FileLayout& layout,
                                           const Move& move);

// A move's second step, or a drop: `layout` without the leaving replica on
// `move.from_node` in the move's slot. FAILED_PRECONDITION when the slot no
// longer has it marked leaving, or has no replica on `move.target_node`
// (when set), or would be left with no other replica.
absl::StatusOr<v1::FileLayout> DropReplica(const v1::FileLayout& layout,
                                           const Move& move);

// For a move's second step that found its new replica gone (removed by an
// admin or another change since the add): `layout` with the replica on
// `move.from_node` no longer marked leaving, so that it counts again and a
// later round plans the slot afresh (a drop would leave the slot a replica
// short). FAILED_PRECONDITION when the slot no longer has it marked
// leaving, or still has the new replica on the target (DropReplica
// applies).
absl::StatusOr<v1::FileLayout> UnmarkLeaving(const v1::FileLayout& layout,
                                             const Move& move);

// Whether `layout` is striped, its slot count (extents or stripe columns),
// a slot's replicas and its bytes in the file (a column: size / width).
bool IsStriped(const v1::FileLayout& layout);
int SlotCount(const v1::FileLayout& layout);
const google::protobuf::RepeatedPtrField<v1::Replica>& SlotReplicas(
    const v1::FileLayout& layout, int slot);
uint64_t SlotBytes(const v1::FileLayout& layout, int slot);

// True if some replica of `layout` is `object` on `node_id`.
bool References(const v1::FileLayout& layout, const std::string& node_id,
                const std::string& object);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_REPAIR_PLANNER_H_
