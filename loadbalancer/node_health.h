// File: node_health.h
//
// NodeHealthTable: the per-process view of which storage nodes may get
// reads. It merges three feeds:
//   - request outcomes (RecordSuccess / RecordFailure) from client_lib;
//   - etcd live records (SetLive): the agent's lease vanished -> not live;
//     the agent announced draining -> no new reads;
//   - etcd node records (SetAdminState): active | draining | disabled.
//
// A node is marked dead after `max_consecutive_failures` consecutive failures
// or at once on a timeout (DEADLINE_EXCEEDED). A dead node gets no reads
// except probes: after a backoff (initial_probe_backoff, doubling per failed
// probe up to max_probe_backoff) ShouldProbe() returns true exactly once,
// and the caller sends one real request there. Its RecordSuccess revives the
// node; its RecordFailure doubles the backoff. A probe that reports nothing
// within probe_timeout is treated as failed.
//
// Typical client use:
//   if (table.Admissible(n)) -> candidate for the Picker
//   else if (table.ShouldProbe(n)) -> send this one request to n anyway
//
// Thread-safe. Unknown nodes are admissible (no news is good news); calls
// about an unknown node create its entry.
#ifndef RANGEFS_LOADBALANCER_NODE_HEALTH_H_
#define RANGEFS_LOADBALANCER_NODE_HEALTH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "loadbalancer/types.h"

namespace rangefs {
namespace lb {

struct NodeHealthOptions {
  // Consecutive failures that mark a node dead (>= 1).
  int max_consecutive_failures = 3;
  // DEADLINE_EXCEEDED marks a node dead at once.
  bool dead_on_timeout = true;
  absl::Duration initial_probe_backoff = absl::Seconds(1);
  absl::Duration max_probe_backoff = absl::Seconds(30);
  // A granted probe with no outcome after this long counts as failed.
  absl::Duration probe_timeout = absl::Seconds(30);
};

// A copy of one node's entry.
struct NodeState {
  NodeId node;
  bool known = false;  // false: never heard of (all defaults)
  int64_t successes = 0;
  int64_t failures = 0;
  int consecutive_failures = 0;
  bool dead = false;
  // Its failures since its last success were all timeouts
  // (DEADLINE_EXCEEDED: a stall, an attempt timeout): slow, not known
  // broken. A dead node so is "dead for slowness" (an erasure-coded read
  // still waits for its cells rather than call them lost).
  bool only_timeouts = true;
  bool live = true;       // from the live record; false once its lease is gone
  bool draining = false;  // from the live record
  AdminState admin = AdminState::kActive;
  std::string last_error;  // empty if none
  absl::Duration last_latency = absl::ZeroDuration();
  absl::Time dead_since = absl::InfinitePast();         // wall time; while dead
  absl::Duration probe_backoff = absl::ZeroDuration();  // while dead
  // Clock::MonotonicNow() time from which a probe is allowed; while dead.
  absl::Time next_probe = absl::InfinitePast();
  bool probe_inflight = false;
};

class NodeHealthTable {
 public:
  // `clock` is not owned, must outlive the table; null = Clock::Real().
  explicit NodeHealthTable(Clock* clock, NodeHealthOptions options = {});
  NodeHealthTable(const NodeHealthTable&) = delete;
  NodeHealthTable& operator=(const NodeHealthTable&) = delete;

  // Records a completed request. Resets consecutive failures; revives a dead
  // node (a successful probe).
  void RecordSuccess(absl::string_view node, absl::Duration latency);
  // `count` (>= 1) completed requests, the last with `last_latency`: as
  // many RecordSuccess calls, under one lock.
  void RecordSuccesses(absl::string_view node, int64_t count,
                       absl::Duration last_latency);
  // Records a failed request. Pass only errors that reflect the node (e.g.
  // UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, DATA_LOSS), not the caller's
  // own mistakes or cancellations. On a dead node this is a failed probe.
  void RecordFailure(absl::string_view node, const absl::Status& status);
  // Applies the node's etcd live record: `live` = the record exists (its
  // lease is alive). A not-live -> live transition (the agent registered
  // again) clears the dead mark.
  void SetLive(absl::string_view node, bool live, bool draining);
  // Applies the node's admin state from its etcd node record.
  void SetAdminState(absl::string_view node, AdminState state);
  // Drops all state about `node` (it left the cluster).
  void Remove(absl::string_view node);

  // Returns true if `node` may get new reads: known nodes that are not dead,
  // live, not draining and admin-active; unknown nodes.
  bool Admissible(absl::string_view node) const;
  // Returns true, once per backoff period, if `node` is dead (and otherwise
  // live and active) and its probe backoff has passed; the caller must then
  // send exactly one request and record its outcome. False otherwise.
  bool ShouldProbe(absl::string_view node);
  // Returns a copy of the node's entry (`known` = false if none).
  NodeState State(absl::string_view node) const;
  // Returns every known node's entry, sorted by node id.
  std::vector<NodeState> Snapshot() const;

 private:
  NodeState& Entry(absl::string_view node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `now` is monotonic.
  void MarkDead(NodeState& s, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ProbeFailed(NodeState& s, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Revive(NodeState& s);

  Clock* const clock_;
  const NodeHealthOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, NodeState> nodes_ ABSL_GUARDED_BY(mu_);
  // When each in-flight probe was granted.
  absl::flat_hash_map<std::string, absl::Time> probe_granted_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace lb
}  // namespace rangefs

#endif  // RANGEFS_LOADBALANCER_NODE_HEALTH_H_
