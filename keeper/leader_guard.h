// File: leader_guard.h
//
// rangefs-keeper's etcd writes (layout compare-and-swaps, trash and suspect
// records), each in one transaction that also compares the leader key's
// lease with this keeper's lease. A keeper whose lease expired, or whose
// key another keeper now holds, can never write, even before its own lease
// check (`may_act`, election.h) notices: the check and the write are one
// atomic step in etcd.
//
//   LeaderGuard guard(etcd, keys.KeeperLeader(),
//                     [&] { return election.lease(); });
//   absl::Status s = guard.Put(keys.KeeperTrash(node, object), value);
//   if (IsNotLeader(s)) ...  // stop acting
//
// Thread-safe (EtcdClient is); `lease` is called once per write.
#ifndef RANGEFS_KEEPER_LEADER_GUARD_H_
#define RANGEFS_KEEPER_LEADER_GUARD_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace keeper {

// True for the status a guarded write returns when the leader key is not
// held under this keeper's lease (CANCELLED).
bool IsNotLeader(const absl::Status& s);

class LeaderGuard {
 public:
  // `etcd` is not owned and must outlive the guard. `lease` returns this
  // keeper's leader lease (0: it leads no more; every write is refused);
  // empty: writes are not guarded (a keeper run without an election).
  LeaderGuard(etcd::EtcdClient* etcd, std::string leader_key,
              std::function<int64_t()> lease);

  // Puts or deletes `key`. IsNotLeader: nothing written.
  absl::Status Put(const std::string& key, const std::string& value);
  absl::Status Delete(const std::string& key);

  // Replaces the layout of `cur.path` with `next` if its mod revision is
  // still `cur.mod_revision`: store->ReplaceLayoutIf with the leader
  // compare as its guard, so the store's whole contract applies (path and
  // layout validated, every referenced node record read and compared,
  // file_id and created time kept, generation bumped). Returns the new
  // entry. ABORTED: changed since; NOT_FOUND: gone; FAILED_PRECONDITION: a
  // referenced node has no record; INVALID_ARGUMENT: `next` is invalid;
  // IsNotLeader. `store` is not owned.
  absl::StatusOr<ns::FileEntry> ReplaceLayout(ns::NamespaceStore* store,
                                              const ns::FileEntry& cur,
                                              v1::FileLayout next);

 private:
  // Adds the leader compare to `txn` (and a read of the leader key as the
  // first op of its failure branch) and returns the lease compared (0:
  // unguarded); IsNotLeader if there is no lease to compare.
  absl::StatusOr<int64_t> Guard(etcdserverpb::TxnRequest* txn) const;
  // Whether failed `r` (of a txn Guard'ed with `lease`) failed on the leader
  // compare.
  bool LostLeader(const etcdserverpb::TxnResponse& r, int64_t lease) const;

  etcd::EtcdClient* const etcd_;
  const std::string leader_key_;
  const std::function<int64_t()> lease_;
};

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_LEADER_GUARD_H_
