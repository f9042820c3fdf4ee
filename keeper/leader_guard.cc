#include "keeper/leader_guard.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace keeper {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

void AddFailureGet(TxnRequest* txn, const std::string& key) {
  txn->add_failure()->mutable_request_range()->set_key(key);
}

// The key read by failure op `i` of a failed txn, or nullptr if absent.
const mvccpb::KeyValue* FailureKv(const TxnResponse& r, int i) {
  if (i >= r.responses_size() ||
      r.responses(i).response_range().kvs_size() == 0) {
    return nullptr;
  }
  return &r.responses(i).response_range().kvs(0);
}

// LEASE(`key`) == `lease`.
Compare LeaseCompare(const std::string& key, int64_t lease) {
  Compare c;
  c.set_key(key);
  c.set_target(Compare::LEASE);
  c.set_result(Compare::EQUAL);
  c.set_lease(lease);
  return c;
}

absl::Status NotLeader(const std::string& key) {
  return absl::CancelledError(
      absl::StrCat("not the active keeper: ", key,
                   " is not held under this keeper's lease"));
}

}  // namespace

bool IsNotLeader(const absl::Status& s) { return absl::IsCancelled(s); }

LeaderGuard::LeaderGuard(etcd::EtcdClient* etcd, std::string leader_key,
                         std::function<int64_t()> lease)
    : etcd_(etcd),
      leader_key_(std::move(leader_key)),
      lease_(std::move(lease)) {}

absl::StatusOr<int64_t> LeaderGuard::Guard(TxnRequest* txn) const {
  if (!lease_) return 0;
  const int64_t lease = lease_();
  if (lease == 0) return NotLeader(leader_key_);
  *txn->add_compare() = LeaseCompare(leader_key_, lease);
  AddFailureGet(txn, leader_key_);
  return lease;
}

bool LeaderGuard::LostLeader(const TxnResponse& r, int64_t lease) const {
  if (lease == 0) return false;
  const mvccpb::KeyValue* kv = FailureKv(r, 0);
  return kv == nullptr || kv->lease() != lease;
}

absl::Status LeaderGuard::Put(const std::string& key,
                              const std::string& value) {
  TxnRequest txn;
  RANGEFS_RETURN_IF_ERROR(Guard(&txn).status());
  auto* p = txn.add_success()->mutable_request_put();
  p->set_key(key);
  p->set_value(value);
  RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, etcd_->Txn(txn));
  if (!r.succeeded()) return NotLeader(leader_key_);
  return absl::OkStatus();
}

absl::Status LeaderGuard::Delete(const std::string& key) {
  TxnRequest txn;
  RANGEFS_RETURN_IF_ERROR(Guard(&txn).status());
  txn.add_success()->mutable_request_delete_range()->set_key(key);
  RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, etcd_->Txn(txn));
  if (!r.succeeded()) return NotLeader(leader_key_);
  return absl::OkStatus();
}

absl::StatusOr<ns::FileEntry> LeaderGuard::ReplaceLayout(
    ns::NamespaceStore* store, const ns::FileEntry& cur, v1::FileLayout next) {
  ns::TxnGuard g;
  if (lease_) {
    const int64_t lease = lease_();
    if (lease == 0) return NotLeader(leader_key_);
    g.compares.push_back(LeaseCompare(leader_key_, lease));
    g.on_failure = [this, lease](const TxnResponse& r) {
      return LostLeader(r, lease) ? NotLeader(leader_key_) : absl::OkStatus();
    };
  }
  return store->ReplaceLayoutIf(cur.path, std::move(next), cur.mod_revision, g);
}

}  // namespace keeper
}  // namespace rangefs
