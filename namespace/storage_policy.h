// File: storage_policy.h
//
// Storage policies per directory (issue 36): "files below /crawl/sealed
// should be RS(6,3)", "files below /hot should have 3 replicas". A policy
// names a directory, a LayoutGoal (layout_goal.h) and two exemptions: files
// smaller than `min_size` or younger than `min_age` keep their ingest
// layout. The nearest ancestor's policy applies (the directory itself
// included); a deeper policy overrides a shallower one entirely.
//
// Policies live in etcd under Keys::PolicyPrefix() (keys.h), one
// v1::StoragePolicyRecord per directory, and every read passes the record
// gate (record_gate.h): a bad record is reported in PolicyTable::invalid()
// and skipped, never applied and never fatal.
//
//   absl::StatusOr<PolicyTable> t = LoadPolicies(*store->kv(), store->keys());
//   if (!t.ok()) return t.status();  // etcd unreachable
//   std::optional<LayoutGoal> goal =
//       GoalForFile(*t, "/crawl/seg-1", layout.size(),
//                   absl::FromUnixMillis(layout.created_unix_ms()), now);
//   if (goal && !LayoutMeetsGoal(layout, *goal)) { /* convert */ }
//
// PolicyTable and the resolution functions are pure values and functions:
// thread-compatible (a const PolicyTable is safe to share). LoadPolicies,
// PutPolicy and DeletePolicy block on etcd.
#ifndef RANGEFS_NAMESPACE_STORAGE_POLICY_H_
#define RANGEFS_NAMESPACE_STORAGE_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "namespace/keys.h"
#include "namespace/kv.h"
#include "namespace/layout_goal.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

struct StoragePolicy {
  std::string dir;  // normalized absolute directory: "/" or "/crawl/sealed"
  LayoutGoal goal;
  uint64_t min_size = 0;  // smaller files keep their ingest layout
  absl::Duration min_age = absl::ZeroDuration();  // younger files keep it too
  absl::Time set_time = absl::UnixEpoch();        // when `policy set` ran
};

// What applies to one file: the policy it is under (nullptr: none) and its
// goal (nullopt: no policy, or the file is exempt, see `exempt`).
struct PolicyResolution {
  const StoragePolicy* policy = nullptr;  // points into the PolicyTable
  std::optional<LayoutGoal> goal;
  // Why a file under a policy has no goal yet: "below min-size 1048576"
  // or "younger than min-age 1h"; empty otherwise.
  std::string exempt;
};

// A snapshot of every policy of a cluster. Thread-compatible value.
class PolicyTable {
 public:
  PolicyTable() = default;  // no policies

  // Builds a table from valid policies. INVALID_ARGUMENT for a dir that is
  // not a normalized absolute path or that appears twice.
  static absl::StatusOr<PolicyTable> FromPolicies(
      std::vector<StoragePolicy> policies);

  // The policy of the nearest ancestor directory of `path` (a normalized
  // absolute path; `path` itself counts, so a directory's own policy
  // applies to it), or nullptr if none. O(depth of path * log(policies)).
  const StoragePolicy* Nearest(absl::string_view path) const;

  // Every valid policy, sorted by dir.
  const std::vector<StoragePolicy>& policies() const { return policies_; }
  // Records that failed the record gate, one message each (naming the etcd
  // key and the rule); they are not in policies().
  const std::vector<std::string>& invalid() const { return invalid_; }
  // The etcd revision the table was read at (0 if not read from etcd).
  int64_t revision() const { return revision_; }

 private:
  friend absl::StatusOr<PolicyTable> LoadPolicies(KvBackend&, const Keys&,
                                                  int64_t);
  std::vector<StoragePolicy> policies_;
  std::vector<std::string> invalid_;
  int64_t revision_ = 0;
};

// The policy and goal for one file of `size` bytes created at `created`,
// judged at `now` (see PolicyResolution).
PolicyResolution ResolvePolicy(const PolicyTable& table, absl::string_view path,
                               uint64_t size, absl::Time created,
                               absl::Time now);

// The goal for one file: the nearest ancestor policy's goal (dir itself
// included); nullopt if no policy applies or the file is below min_size or
// younger than min_age (it keeps its ingest layout).
std::optional<LayoutGoal> GoalForFile(const PolicyTable& table,
                                      absl::string_view path, uint64_t size,
                                      absl::Time created, absl::Time now);

// Reads every policy record under keys.PolicyPrefix() at `revision` (0 =
// latest) through the record gate. A record the gate refuses goes to
// invalid() and is skipped. Errors: only the store's (UNAVAILABLE,
// DEADLINE_EXCEEDED, OUT_OF_RANGE for a compacted revision).
absl::StatusOr<PolicyTable> LoadPolicies(KvBackend& kv, const Keys& keys,
                                         int64_t revision = 0);

// Record <-> value. ToRecord assumes a policy that ValidatePolicy accepts.
v1::StoragePolicyRecord ToRecord(const StoragePolicy& policy);
StoragePolicy FromRecord(absl::string_view dir,
                         const v1::StoragePolicyRecord& record);

// INVALID_ARGUMENT naming the rule: dir normalized and absolute, a goal
// ParseLayoutGoal would accept, min_age >= 0 and at most 100 years.
absl::Status ValidatePolicy(const StoragePolicy& policy);

// Writes (creates or replaces) the policy of policy.dir after
// ValidatePolicy. Errors: INVALID_ARGUMENT, the store's.
absl::Status PutPolicy(KvBackend& kv, const Keys& keys,
                       const StoragePolicy& policy);

// Removes the policy of `dir`. NOT_FOUND if `dir` has none.
absl::Status DeletePolicy(KvBackend& kv, const Keys& keys,
                          absl::string_view dir);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_STORAGE_POLICY_H_
