// File: election.h
//
// Leader election of rangefs-keeper instances through etcd: a candidate
// grants a lease and, in one transaction, creates the leader key under it
// only if the key does not exist (create_revision == 0). The winner keeps
// the lease alive; when etcd says the lease expired, or it could not be
// renewed before its TTL ran out, IsLeader() turns false at once (from the
// keep-alive thread) and the keeper stops acting. Losers retry Campaign
// periodically; the key disappears with the leader's lease, so another
// candidate wins within about one TTL of the leader's death.
//
//   LeaderElection e(etcd, {.key = keys.KeeperLeader(), .id = "keeper-a"});
//   while (running) {
//     absl::StatusOr<bool> leader = e.Campaign();
//     if (leader.ok() && *leader) DoOneRound([&] { return e.IsLeader(); });
//     ...
//   }
//
// Thread-safe: IsLeader from any thread; Campaign and Resign from one.
#ifndef RANGEFS_KEEPER_ELECTION_H_
#define RANGEFS_KEEPER_ELECTION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "namespace/etcd/etcd_client.h"

namespace rangefs {
namespace keeper {

struct ElectionOptions {
  std::string key;  // The leader key (ns::Keys::KeeperLeader()).
  std::string id;   // This candidate's id, stored as the key's value.
  absl::Duration ttl = absl::Seconds(10);  // Lease TTL (>= 1 s).
};

class LeaderElection {
 public:
  // `etcd` is not owned and must outlive this object.
  LeaderElection(etcd::EtcdClient* etcd, ElectionOptions options);
  // Resigns.
  ~LeaderElection();

  // One attempt: OK(true) if this candidate leads now (already, or won
  // now), OK(false) if another does; etcd errors as they are.
  absl::StatusOr<bool> Campaign();
  bool IsLeader() const { return leader_.load(); }
  // The leader lease (keys written under it vanish with the leadership);
  // 0 when not leading. Campaign's thread only.
  int64_t lease() const { return leader_.load() ? lease_ : 0; }
  // The leader's id; NOT_FOUND when there is none.
  absl::StatusOr<std::string> Leader();
  // Stops leading at once and revokes the lease (the key goes with it).
  void Resign();

 private:
  etcd::EtcdClient* const etcd_;
  const ElectionOptions options_;
  std::atomic<bool> leader_{false};
  int64_t lease_ = 0;
  std::unique_ptr<etcd::LeaseKeepAlive> keepalive_;
};

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_ELECTION_H_
