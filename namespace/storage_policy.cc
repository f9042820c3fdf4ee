#include "namespace/storage_policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"

namespace rangefs {
namespace ns {
namespace {

bool DirLess(const StoragePolicy& a, const StoragePolicy& b) {
  return a.dir < b.dir;
}

// The directory above `path` ("/a/b" -> "/a", "/a" -> "/").
absl::string_view Parent(absl::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == 0 || slash == absl::string_view::npos) return "/";
  return path.substr(0, slash);
}

}  // namespace

absl::StatusOr<PolicyTable> PolicyTable::FromPolicies(
    std::vector<StoragePolicy> policies) {
  std::sort(policies.begin(), policies.end(), DirLess);
  for (size_t i = 0; i < policies.size(); ++i) {
    RANGEFS_RETURN_IF_ERROR(ValidatePolicy(policies[i]));
    if (i > 0 && policies[i].dir == policies[i - 1].dir) {
      return absl::InvalidArgumentError(
          absl::StrCat("two storage policies for ", policies[i].dir));
    }
  }
  PolicyTable table;
  table.policies_ = std::move(policies);
  return table;
}

const StoragePolicy* PolicyTable::Nearest(absl::string_view path) const {
  if (policies_.empty()) return nullptr;
  absl::string_view dir = path;
  while (true) {
    auto it = std::lower_bound(
        policies_.begin(), policies_.end(), dir,
        [](const StoragePolicy& p, absl::string_view d) { return p.dir < d; });
    if (it != policies_.end() && it->dir == dir) return &*it;
    if (dir == "/" || dir.empty()) return nullptr;
    dir = Parent(dir);
  }
}

PolicyResolution ResolvePolicy(const PolicyTable& table, absl::string_view path,
                               uint64_t size, absl::Time created,
                               absl::Time now) {
  PolicyResolution r;
  r.policy = table.Nearest(path);
  if (r.policy == nullptr) return r;
  if (size < r.policy->min_size) {
    r.exempt = absl::StrCat("below min-size ", r.policy->min_size);
    return r;
  }
  if (now - created < r.policy->min_age) {
    r.exempt = absl::StrCat("younger than min-age ",
                            absl::FormatDuration(r.policy->min_age));
    return r;
  }
  r.goal = r.policy->goal;
  return r;
}

std::optional<LayoutGoal> GoalForFile(const PolicyTable& table,
                                      absl::string_view path, uint64_t size,
                                      absl::Time created, absl::Time now) {
  return ResolvePolicy(table, path, size, created, now).goal;
}

v1::StoragePolicyRecord ToRecord(const StoragePolicy& policy) {
  v1::StoragePolicyRecord r;
  r.set_dir(policy.dir);
  if (policy.goal.is_ec()) {
    r.mutable_ec()->set_k(static_cast<uint32_t>(policy.goal.ec_k));
    r.mutable_ec()->set_m(static_cast<uint32_t>(policy.goal.ec_m));
  } else {
    r.set_replicas(static_cast<uint32_t>(std::max(0, policy.goal.replicas)));
  }
  r.set_min_size(policy.min_size);
  r.set_min_age_seconds(absl::ToInt64Seconds(policy.min_age));
  r.set_set_unix_ms(absl::ToUnixMillis(policy.set_time));
  return r;
}

StoragePolicy FromRecord(absl::string_view dir,
                         const v1::StoragePolicyRecord& record) {
  StoragePolicy p;
  p.dir = std::string(dir);
  if (record.has_ec()) {
    p.goal = LayoutGoal::Ec(static_cast<int>(record.ec().k()),
                            static_cast<int>(record.ec().m()));
  } else {
    p.goal = LayoutGoal::Replicas(static_cast<int>(record.replicas()));
  }
  p.min_size = record.min_size();
  p.min_age = absl::Seconds(record.min_age_seconds());
  p.set_time = absl::FromUnixMillis(record.set_unix_ms());
  return p;
}

absl::Status ValidatePolicy(const StoragePolicy& policy) {
  if (policy.goal.is_ec() == (policy.goal.replicas > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "storage policy for ", policy.dir,
        ": want exactly one of replicas and ec, got ", policy.goal.ToString()));
  }
  if (policy.min_age < absl::ZeroDuration() ||
      policy.min_age > absl::Seconds(kMaxPolicyMinAgeSeconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("storage policy for ", policy.dir, ": min-age ",
                     absl::FormatDuration(policy.min_age),
                     " is out of range (0 to 100 years)"));
  }
  return ValidatePolicyRecord(ToRecord(policy));
}

absl::StatusOr<PolicyTable> LoadPolicies(KvBackend& kv, const Keys& keys,
                                         int64_t revision) {
  const std::string begin = absl::StrCat(keys.PolicyPrefix(), "/");
  PolicyTable table;
  auto keep = [&](std::vector<KvEntry>& page, int64_t) {
    for (const KvEntry& e : page) {
      std::string dir;
      if (!keys.ParsePolicy(e.key, &dir)) continue;  // not under the prefix
      absl::StatusOr<v1::StoragePolicyRecord> r =
          DecodePolicyRecord(e.key, dir, e.value);
      if (!r.ok()) {
        table.invalid_.push_back(std::string(r.status().message()));
        continue;
      }
      table.policies_.push_back(FromRecord(dir, *r));
    }
    return absl::OkStatus();
  };
  RANGEFS_ASSIGN_OR_RETURN(
      table.revision_,
      ForEachRangePage(kv, begin, PrefixRangeEnd(begin), revision,
                       /*page_size=*/0, keep));
  // Keys are unique and come sorted, so policies_ is sorted by dir.
  std::sort(table.policies_.begin(), table.policies_.end(), DirLess);
  return table;
}

absl::Status PutPolicy(KvBackend& kv, const Keys& keys,
                       const StoragePolicy& policy) {
  RANGEFS_RETURN_IF_ERROR(ValidatePolicy(policy));
  etcdserverpb::TxnRequest txn;
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(keys.Policy(policy.dir));
  put->set_value(ToRecord(policy).SerializeAsString());
  return kv.Txn(txn).status();
}

absl::Status DeletePolicy(KvBackend& kv, const Keys& keys,
                          absl::string_view dir) {
  etcdserverpb::TxnRequest txn;
  txn.add_success()->mutable_request_delete_range()->set_key(keys.Policy(dir));
  RANGEFS_ASSIGN_OR_RETURN(etcdserverpb::TxnResponse r, kv.Txn(txn));
  if (r.responses_size() != 1 ||
      r.responses(0).response_delete_range().deleted() == 0) {
    return absl::NotFoundError(
        absl::StrCat("no storage policy for ", dir, " (see `policy ls`)"));
  }
  return absl::OkStatus();
}

}  // namespace ns
}  // namespace rangefs
