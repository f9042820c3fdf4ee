// File: repair_command.h
//
// `rangefs-admin repair --dry-run [--rebalance-tolerance=0.10]`: prints the
// moves rangefs-keeper would make now (the same planners, repair/):
// replicas on dead (no live record) or draining nodes, corrupt replicas in
// the scrub reports or fsck's suspect records, the erasure-coded columns it
// would rebuild ("rebuild": file, column, from node -> to node, the
// column's bytes; the target agent reads k of the good columns) or copy
// off a draining node ("ec copy"), and, when nothing needs repair and no
// node is missing, rebalancing. Changes nothing. A node without a live record
// counts as dead here (this process has not watched it go; the keeper waits
// --dead_after_s). Without --dry-run it refuses: the active keeper carries the
// plan out.
#ifndef RANGEFS_ADMIN_REPAIR_COMMAND_H_
#define RANGEFS_ADMIN_REPAIR_COMMAND_H_

#include "absl/status/statusor.h"
#include "admin/args.h"
#include "admin/commands.h"
#include "admin/table.h"

namespace rangefs {
namespace admin {

absl::StatusOr<Table> RunRepair(Context& ctx, Args& args);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_REPAIR_COMMAND_H_
