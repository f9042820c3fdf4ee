// File: policy_commands.h
//
// rangefs-admin's storage-policy commands (namespace/storage_policy.h):
//
//   policy set DIR (--replicas=N | --ec=K+M) [--min-size=BYTES]
//                  [--min-age=DURATION]
//   policy ls
//   policy rm DIR
//
// `policy set` refuses (FAILED_PRECONDITION, exit 4) a goal the cluster
// cannot place now (namespace/storage_policy_placement.h: too few live
// ACTIVE nodes, or too few racks for K+M where node records carry racks),
// saying why. `policy ls` lists every policy, whether the cluster can
// place it now, and records that fail the record gate. Blocking on etcd.
#ifndef RANGEFS_ADMIN_POLICY_COMMANDS_H_
#define RANGEFS_ADMIN_POLICY_COMMANDS_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admin/args.h"
#include "admin/commands.h"
#include "admin/table.h"

namespace rangefs {
namespace admin {

// Runs `policy VERB ...` (args start after "policy"). INVALID_ARGUMENT for
// usage errors, NOT_FOUND for `rm` of a directory without a policy.
absl::StatusOr<Table> RunPolicyCommand(Context& ctx, Args& args);

// --min-age: absl's durations ("90m", "36h", "1h30m") plus whole days
// ("7d"); whole seconds, 0 to 100 years. INVALID_ARGUMENT naming the text.
absl::StatusOr<absl::Duration> ParseMinAge(absl::string_view text);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_POLICY_COMMANDS_H_
