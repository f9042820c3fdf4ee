// File: convert_plan.h
//
// Which files rangefs-keeper converts to their storage policy's goal
// (namespace/layout_goal.h, issue 36), and how: pure functions over the
// namespace as listed (layouts, node views); no I/O, no clock.
//
// A file converts only when its goal is known (the caller resolves
// policies: `goal_of`), its layout does not meet it (ns::LayoutMeetsGoal),
// it is READY or READY_EC and not empty, and every object it has is on an
// up node and not corrupt (a file with a repair to do is repaired first;
// a slot with a `leaving` replica is a move in progress). Kinds, in the
// order a round runs them (lowest risk first):
//
//   kEcInPlace    replicas -> RS(k, m), parity only: a striped file of
//                 width k whose stripe unit is its checksum block (the
//                 cell) keeps one replica of each column as the data
//                 column (on k distinct nodes) and gets m parity columns
//                 (and their ".cells" objects) on m more nodes; the other
//                 replicas go to the trash.
//   kEcToReplicas RS(k, m) -> N replicas: each data column is copied to
//                 N - 1 more nodes; the layout becomes a plain striped
//                 layout of width k; parity and .cells go to the trash.
//   kReplicas     N -> M replicas: each slot gets replicas copied onto
//                 new nodes, or loses its extra ones (to the trash).
//   kEcRewrite    anything else -> RS(k, m) (extents, another width or
//                 stripe unit, another k + m): the file's bytes are read
//                 and written as k new data columns plus m parity
//                 columns; every old object goes to the trash.
//
// New objects go to up nodes with free space (less what this plan already
// put there) that hold nothing of the slot (erasure-coded: nothing of the
// file), distinct racks (else zones) first, then most free space.
//
//   ConvertPlan p = PlanConversions(files, views, racks, goal_of, bitgen);
#ifndef RANGEFS_REPAIR_CONVERT_PLAN_H_
#define RANGEFS_REPAIR_CONVERT_PLAN_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/bit_gen_ref.h"
#include "absl/status/statusor.h"
#include "namespace/layout_goal.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"
#include "repair/planner.h"

namespace rangefs {
namespace keeper {

// A file's goal and the policy (its directory) that set it.
struct FileGoal {
  ns::LayoutGoal goal;
  std::string policy;
};
// The goal of file `f`; nullopt: none (no policy, or exempt).
using GoalOf = std::function<std::optional<FileGoal>(const ns::FileEntry& f)>;

enum class ConversionKind { kEcInPlace, kEcToReplicas, kReplicas, kEcRewrite };
// "ec-in-place", "ec-to-replicas", "replicas", "ec-rewrite".
const char* ConversionKindName(ConversionKind k);

// One new replica of a slot (kReplicas, kEcToReplicas): `object` copied
// from source_node onto target_node.
struct NewReplica {
  int slot = 0;
  std::string object;
  uint64_t object_offset = 0;
  std::string source_node;
  std::string target_node;
  uint64_t bytes = 0;
};
// A replica leaving a slot (kReplicas drops, kEcInPlace extra replicas).
struct OldReplica {
  int slot = 0;
  std::string node;
  std::string object;
};

struct Conversion {
  std::string path;
  std::string policy;
  ns::LayoutGoal goal;
  ConversionKind kind = ConversionKind::kReplicas;
  v1::FileLayout planned;       // The layout planned on.
  uint64_t size = 0;            // Logical bytes.
  uint64_t bytes_to_write = 0;  // Bytes copied or written by the keeper.
  uint64_t raw_before = 0, raw_after = 0;  // Stored bytes (RawBytes).
  // kReplicas, kEcToReplicas: the copies to make; kReplicas: the drops.
  std::vector<NewReplica> adds;
  std::vector<OldReplica> drops;
  // kEcInPlace: the replica kept as each data column (k); kEcToReplicas:
  // the data columns (k). kEcInPlace and
  // kEcRewrite: the nodes of the new columns (m, resp. k + m).
  std::vector<v1::Replica> data;
  std::vector<std::string> new_nodes;
  uint64_t cell = 0;  // kEcRewrite: the new stripe unit.
};

// What a policy still has to convert.
struct PolicyBacklog {
  int files = 0;
  uint64_t bytes = 0;       // Logical bytes of those files.
  int64_t bytes_saved = 0;  // Raw bytes they will free (< 0: use more).
  int stuck = 0;            // Of files: no placement now.
};

struct ConvertPlan {
  std::vector<Conversion> conversions;  // In the order to run them.
  // Files with a goal not met that cannot convert now, and why.
  std::vector<StuckSlot> stuck;
  std::map<std::string, PolicyBacklog> by_policy;
  uint64_t bytes = 0;  // Sum of bytes_to_write.
};

// The conversions that bring `files` to their goals. `views` as for
// PlanMoves; `racks` maps node id to its record's rack ("" or absent:
// none). `bitgen` breaks placement ties.
ConvertPlan PlanConversions(const std::vector<ns::FileEntry>& files,
                            const std::map<std::string, NodeView>& views,
                            const std::map<std::string, std::string>& racks,
                            const GoalOf& goal_of, absl::BitGenRef bitgen);

// Bytes stored for `layout` on the agents (sidecars not counted):
// replicated, each slot's bytes times its replicas; erasure-coded, the
// data columns plus m parity columns of rows x cell and their .cells.
uint64_t RawBytes(const v1::FileLayout& layout);

// The layouts a conversion swaps in, from the current layout `cur`
// (FAILED_PRECONDITION when `cur` no longer places the file's bytes as
// c.planned did: same size, content generation, extents and columns):
//   kEcInPlace, kEcRewrite: the erasure-coded layout (state READY_EC) with
//     `parity_objects` (m names; kEcRewrite: `data_objects`, k names) on
//     c.new_nodes;
//   kEcToReplicas: the plain striped layout (state READY) with c.adds;
//   kReplicas: `cur` with c.adds added and c.drops removed.
// The objects that leave the layout (to the trash first) in `leaving`.
absl::StatusOr<v1::FileLayout> ConvertedLayout(
    const v1::FileLayout& cur, const Conversion& c,
    const std::vector<std::string>& data_objects,
    const std::vector<std::string>& parity_objects,
    std::vector<OldReplica>* leaving);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_REPAIR_CONVERT_PLAN_H_
