// File: keeper_info.h
//
// What `status` and `doctor` show of rangefs-keeper and of nodes that went
// away: the keeper's leader and status records (keeper/README.md), the
// nodes with a record but no live record (unreachable: their agent is down
// or cannot reach etcd), and when the keeper starts to re-create their
// replicas (KeeperStatus.heal_starts_unix_ms, counted down from `now`).
//
//   KeeperInfo k = ReadKeeperInfo(*ctx.store);
//   std::string when = HealCountdown(k, absl::Now());  // "healing now"
#ifndef RANGEFS_ADMIN_KEEPER_INFO_H_
#define RANGEFS_ADMIN_KEEPER_INFO_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace admin {

struct KeeperInfo {
  absl::Status error;     // Reading the leader key failed.
  std::string id;         // Empty: no active keeper.
  bool reported = false;  // `st` holds a parsed status record.
  v1::KeeperStatus st;
};

// The keeper's leader and status records; a status record that does not
// parse leaves `reported` false.
KeeperInfo ReadKeeperInfo(ns::NamespaceStore& store);

// Ids of the valid node records of `nodes` that have no valid live record
// in `live`, in the order of `nodes`.
std::vector<std::string> UnreachableNodes(
    const std::vector<ns::NodeEntry>& nodes,
    const std::vector<ns::LiveEntry>& live);

// Seconds from `now` until the keeper starts healing (0 once it passed);
// nullopt when the keeper reported no missing node (or nothing at all).
std::optional<int64_t> HealStartsInSeconds(const KeeperInfo& k, absl::Time now);

// "healing starts in 1m38s", "healing now", or "" as HealStartsInSeconds.
std::string HealCountdown(const KeeperInfo& k, absl::Time now);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_KEEPER_INFO_H_
