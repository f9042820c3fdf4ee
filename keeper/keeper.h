// File: keeper.h
//
// One round of rangefs-keeper's work, run by the active keeper (election.h
// decides which): list nodes, live records and every file layout; collect
// trash that is due; plan replica moves (planner.h; when there is nothing
// to repair, rebalance.h) and carry them out.
// A move is: CopyObject on the target agent from a healthy replica
// (storage_node/object_copier.h: verified against the source's sidecar),
// then two etcd compare-and-swaps on the layout's mod revision: the new
// replica is added to the slot (the old one marked leaving), then the old
// one removed (one swap instead when the slot cannot take the add: 8
// replicas, a layout at its size limit; or the old replica's node has no
// record). A concurrent admin change makes the keeper re-read and
// re-apply (never clobber); a layout that no longer has the replica (file
// removed, replaced or already repaired), or a dead node that came back,
// abandons the move and deletes the unreferenced copy. A slot left with a
// leaving replica (killed between the steps) gets a drop in a later round.
// The removed replica goes to the trash (keeper/README.md, "Deleting
// objects").
//
//   Keeper k(store, etcd, {.id = "keeper-a", .dead_after = absl::Minutes(10)});
//   absl::StatusOr<RoundReport> r = k.RunRound([&] { return e.IsLeader(); });
//
// `may_act` is asked before every change (copy, layout swap, trash change,
// delete); once false the round stops. Not thread-safe: one round at a time
// (moves inside a round run on up to parallel_copies threads).
#ifndef RANGEFS_KEEPER_KEEPER_H_
#define RANGEFS_KEEPER_KEEPER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "keeper/leader_guard.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/store.h"
#include "repair/convert_plan.h"
#include "repair/ec_plan.h"
#include "repair/planner.h"
#include "repair/rebalance.h"
#include "storage_node/tls_client.h"

namespace rangefs {
namespace keeper {

struct RoundReport;

struct KeeperOptions {
  std::string id = "keeper";  // In logs.
  // A node whose live record is absent this long is dead.
  absl::Duration dead_after = absl::Minutes(10);
  // An object that left every layout is deleted no sooner than this after
  // it left (and only once etcd compacted past that revision).
  absl::Duration delete_grace = absl::Hours(1);
  int parallel_copies = 4;
  // Cluster-wide cap on the bytes/s of all copies together, split evenly
  // over the copies running at once; 0: none (each agent still applies its
  // own --copy_max_bytes_per_sec).
  uint64_t copy_bytes_per_sec = 0;
  absl::Duration copy_timeout = absl::Minutes(30);  // Per CopyObject.
  // Each erasure-coded column rebuild (ec_rebuild.h) writes at most this
  // many bytes/s (it reads k times that from the survivors); with
  // copy_bytes_per_sec set, its share of that when lower. 0: unpaced.
  uint64_t ec_rebuild_bytes_per_sec = 100 << 20;
  absl::Duration call_timeout = absl::Seconds(30);  // Other agent calls.
  // Every this often (and in the first round) each reachable node's
  // objects are listed; one that no layout references, no trash record
  // names, and that is older than delete_grace (a failed put, a removed
  // file) goes to the trash: deleted after the grace rule. Zero: never.
  absl::Duration orphan_scan_interval = absl::Hours(1);
  // Rounds with no repair to do rebalance fill (rebalance.h); tolerance
  // <= 0 turns it off. Not while a node is missing (it may come back).
  RebalanceOptions rebalance;
  int max_cas_attempts = 16;  // Layout swaps lost to concurrent changes.
  // A replica repaired in place is not repaired again for this long (its
  // node's scrub report may still list it until the next scrub).
  absl::Duration repair_backoff = absl::Minutes(10);
  // A node a copy found out of space is no copy target for this long.
  absl::Duration full_backoff = absl::Minutes(1);
  node::NodeClientTlsOptions agent_tls;
  Clock* clock = nullptr;  // Not owned; nullptr: the real clock.
  // Called with the round's report so far: once a round with moves or
  // conversions is planned and its due trash collected, before any move
  // or conversion (planned
  // counts, the conversion backlog per policy and its ETA at
  // convert_bytes_per_sec, trash pending), then after each move and each
  // conversion (done/failed counts and bytes until now); one call at a
  // time, from the round's thread, then the move and conversion threads;
  // may be empty.
  std::function<void(const RoundReport&)> on_progress;
  // Fault injection for tests: called between a move's two layout steps
  // (the new replica added, the old one not yet removed), from the move
  // threads; may be empty.
  std::function<void(const Move&)> after_add;
  // Storage policies (issue 36): called once a round, returns each file's
  // goal (repair/convert_plan.h); a file whose layout does not meet it is
  // converted (convert.h), lowest risk first, after the round's repairs.
  // Empty: no conversions. An error skips this round's conversions.
  std::function<absl::StatusOr<GoalOf>()> goals;
  // Bytes/s written or copied by each conversion (split over the columns
  // it writes at once; with copy_bytes_per_sec set, its share of that when
  // lower). 0: unpaced.
  uint64_t convert_bytes_per_sec = 100 << 20;
  // Conversions run at once (files).
  int parallel_conversions = 2;
  // Fault injection for tests: called at each step of a conversion
  // (ConvertOptions::at_step), from the conversion threads; may be empty.
  std::function<void(int step, const Conversion&)> convert_at_step;
  // This keeper's leader lease (election.h), compared with the leader
  // key's in the same etcd transaction as every layout change and trash or
  // suspect record write (leader_guard.h): a keeper whose lease is gone
  // cannot write even before may_act says so; the round stops. Empty: the
  // writes are not guarded (a keeper run without an election).
  std::function<int64_t()> leader_lease;
};

struct RoundReport {
  int64_t revision = 0;  // etcd revision of the listing.
  int files = 0;
  int dead_nodes = 0, draining_nodes = 0, missing_nodes = 0;
  std::vector<std::string> dead_node_ids;  // The dead_nodes, sorted.
  int moves_planned = 0, moves_done = 0, moves_failed = 0, moves_abandoned = 0;
  int repairs_done = 0;     // In-place repairs of corrupt replicas (of done).
  int rebalance_moves = 0;  // Of moves_planned.
  int stuck = 0;            // Slots with no source or no target.
  // Files with a slot whose replica on a dead or draining node, or corrupt,
  // is to be re-created (planned or stuck; not rebalancing), and the bytes
  // of those slots.
  int under_replicated_files = 0;
  uint64_t under_replicated_bytes = 0;
  // Files with a slot that has a replica on a missing node, those slots'
  // bytes (at_risk.h), and when the first missing node turns dead and its
  // replicas are re-created (InfiniteFuture: none missing); dead_after is
  // the keeper's.
  int at_risk_files = 0;
  uint64_t at_risk_bytes = 0;
  absl::Time heal_starts = absl::InfiniteFuture();
  absl::Duration dead_after;
  uint64_t bytes_planned = 0, bytes_copied = 0;
  int trash_pending = 0, trash_deleted = 0;
  int orphans_found = 0;  // Trashed by this round's orphan scan.
  bool stopped = false;   // may_act turned false mid-round.
  // Storage-policy conversions (convert.h): planned this round, their
  // outcomes, the bytes they write (planned, written), and stuck files (no
  // placement now, or a repair to do first).
  int conversions_planned = 0, conversions_done = 0, conversions_failed = 0;
  int conversions_abandoned = 0, conversions_stuck = 0;
  uint64_t convert_bytes_planned = 0, convert_bytes_written = 0;
  // Raw bytes the done conversions freed (< 0: they use more), once their
  // trash is collected.
  int64_t convert_bytes_saved = 0;
  // Per policy (its directory): what is still to convert after the round.
  std::map<std::string, PolicyBacklog> convert_backlog;
  // Seconds until this round's conversions are done: at the round's rate
  // once one is done, before that at convert_bytes_per_sec; -1: unknown
  // (unpaced and none done yet, or only stuck files), 0: nothing left.
  double convert_eta_s = -1;
};

// What a round would do now (Keeper::DryRun).
struct RoundPlan {
  // Replica moves, in-place repairs and drops; `stuck` also holds the
  // erasure-coded columns that cannot be rebuilt now.
  Plan moves;
  EcPlan ec;  // erasure-coded column rebuilds (repair/ec_plan.h)
  // Storage-policy conversions (options.goals; none without it).
  ConvertPlan conversions;
};

class Keeper {
 public:
  // `store` and `etcd` are not owned and must outlive the keeper.
  Keeper(ns::NamespaceStore* store, etcd::EtcdClient* etcd,
         KeeperOptions options);

  absl::StatusOr<RoundReport> RunRound(const std::function<bool()>& may_act);

  // What a round would do now, changing nothing (rangefs-keeper
  // --dry_run). A node without a live record counts as dead (this process
  // has not watched it go). Fills the listing and plan fields of `report`.
  absl::StatusOr<RoundPlan> DryRun(RoundReport* report);

 private:
  struct Listing;
  class Round;

  // fsck's suspect records (keys.h): (node, object) -> key, and those no
  // layout references.
  struct Suspects {
    std::map<std::pair<std::string, std::string>, std::string> keys;
    std::set<std::pair<std::string, std::string>> unreferenced;
  };
  void AddSuspects(Listing* l);
  static Suspects TakeSuspects(const Listing& l);
  void DropSuspects(const Suspects& s, const std::vector<Move>& moves,
                    const std::vector<bool>& done,
                    const std::function<bool()>& may_act);

  absl::StatusOr<Listing> List(bool absent_is_dead, RoundReport* report);
  // The replica moves, and in `ec` (may be null) the erasure-coded column
  // rebuilds (repair/ec_plan.h), counted in the report's moves.
  Plan MakePlan(const Listing& l, RoundReport* report, EcPlan* ec = nullptr);
  static void CountUnderReplicated(const Plan& plan, RoundReport* report);
  // The conversions of files that have no move or rebuild in `plan`/`ec`;
  // fills the report's conversion plan counts.
  ConvertPlan PlanConvert(const Listing& l, const Plan& plan, const EcPlan& ec,
                          RoundReport* report);
  // How many of `conversions` run at once (parallel_conversions).
  size_t ConversionsAtOnce(size_t conversions) const;
  // Bytes/s of each of `conversions` run at once (convert_bytes_per_sec,
  // or its share of copy_bytes_per_sec when lower); 0: unpaced.
  uint64_t ConvertRate(size_t conversions) const;
  // Seconds `plan` takes at that pace (-1: unpaced; see convert_eta_s).
  double PacedConvertEta(const ConvertPlan& plan) const;

  KeeperOptions options_;
  Clock* const clock_;
  ns::NamespaceStore* const store_;
  LeaderGuard guard_;  // Every etcd write of a round goes through it.
  absl::BitGen bitgen_;
  // When each node was first seen without a live record (by this keeper).
  std::map<std::string, absl::Time> missing_since_;
  // (node, object) -> when it was last repaired in place.
  std::map<std::pair<std::string, std::string>, absl::Time> repaired_;
  // Nodes a copy found out of space (RESOURCE_EXHAUSTED), and when: no
  // copy target for full_backoff (their live record's free space may lag).
  std::mutex full_mu_;
  std::map<std::string, absl::Time> full_since_;
  absl::Time last_orphan_scan_ = absl::InfinitePast();
};

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_KEEPER_H_
