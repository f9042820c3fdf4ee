// File: ec_plan.h
//
// Which columns of erasure-coded files (READY_EC) the keeper rebuilds, and
// where: a column whose node is dead or draining (or has no node record),
// or whose object (or, for a parity column, its ".cells" object) is listed
// corrupt (scrub report or fsck's suspect records), is rebuilt from k
// other columns onto an up node that holds no column of the file (so a
// row's k + m cells stay on distinct nodes; a zone/rack the file's other
// columns do not use first, as ingest spreads them, then most free space:
// PickTarget). Columns on a missing node are
// neither rebuilt (it may come back) nor read. Files with fewest good
// columns come first. Pure: no I/O.
//
//   EcPlan p = PlanEcRepairs(listing.files, listing.views, bitgen);
#ifndef RANGEFS_REPAIR_EC_PLAN_H_
#define RANGEFS_REPAIR_EC_PLAN_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/random/bit_gen_ref.h"
#include "namespace/store.h"
#include "repair/planner.h"

namespace rangefs {
namespace keeper {

// One column to rebuild.
struct EcColumnRepair {
  int column = 0;           // t: data columns 0..k-1, parity k..k+m-1
  std::string from_node;    // where the column is now (dead, draining, ...)
  std::string object;       // its object; the rebuilt one keeps the name
  std::string target_node;  // where the rebuilt column goes
  uint64_t bytes = 0;       // the column's bytes (ns::EcColumnBytes)
  std::string why;          // "dead", "draining", "corrupt", "no record"
};

// The repairs of one file, done together (their survivors exclude every
// column being rebuilt).
struct EcFileRepair {
  std::string path;
  int k = 0;                 // data columns: a rebuild reads k columns
  int64_t mod_revision = 0;  // of the layout planned on
  std::vector<EcColumnRepair> columns;
  // Columns that can be read: not being rebuilt, not on a missing node.
  int good_columns = 0;
  // Columns that must not be read (rebuilt, or on a missing node).
  std::set<int> unusable;
};

struct EcPlan {
  std::vector<EcFileRepair> files;  // fewest good columns first
  std::vector<StuckSlot> stuck;     // slot = column
  uint64_t bytes = 0;               // sum of the columns' bytes
};

EcPlan PlanEcRepairs(const std::vector<ns::FileEntry>& files,
                     const std::map<std::string, NodeView>& nodes,
                     absl::BitGenRef bitgen);

// How a dry run lists one column repair of `f` (rangefs-admin repair
// --dry-run's rows, rangefs-keeper --dry_run's lines): the action,
// "rebuild" (decoded by the target's agent from k good columns) or
// "ec copy" (a draining node's column, read from it), and what is read.
struct EcRepairListing {
  std::string action;
  std::string reads;  // "n3", or "dead: 6 of 8 columns, by n7"
};
EcRepairListing ListEcRepair(const EcFileRepair& f, const EcColumnRepair& c);

// `nodes` with each zone replaced by "zone/rack": the placement keys
// erasure-coded columns spread over.
std::map<std::string, NodeView> ByRack(
    const std::map<std::string, NodeView>& nodes);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_REPAIR_EC_PLAN_H_
