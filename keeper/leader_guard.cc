#include "keeper/leader_guard.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "namespace/layout.h"

namespace rangefs {
namespace keeper {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

// etcd allows 128 compares a transaction; the store checks this many nodes.
constexpr size_t kMaxNodeCompares = 100;

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
  Compare* c = txn->add_compare();
  c->set_key(leader_key_);
  c->set_target(Compare::LEASE);
  c->set_result(Compare::EQUAL);
  c->set_lease(lease);
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
    const ns::Keys& keys, const ns::FileEntry& cur, v1::FileLayout next,
    absl::Time now) {
  RANGEFS_RETURN_IF_ERROR(ns::ValidateLayout(next));
  next.set_file_id(cur.layout.file_id());
  next.set_generation(cur.layout.generation() + 1);
  next.set_created_unix_ms(cur.layout.created_unix_ms());
  next.set_modified_unix_ms(absl::ToUnixMillis(now));
  const std::string key = keys.File(cur.path);
  TxnRequest txn;
  RANGEFS_ASSIGN_OR_RETURN(const int64_t lease, Guard(&txn));
  Compare* c = txn.add_compare();
  c->set_key(key);
  c->set_target(Compare::MOD);
  c->set_result(Compare::EQUAL);
  c->set_mod_revision(cur.mod_revision);
  const std::vector<std::string> nodes = ns::ReferencedNodes(next);
  for (size_t i = 0; i < nodes.size() && i < kMaxNodeCompares; ++i) {
    Compare* n = txn.add_compare();
    n->set_key(keys.Node(nodes[i]));
    n->set_target(Compare::VERSION);
    n->set_result(Compare::GREATER);
    n->set_version(0);
  }
  auto* p = txn.add_success()->mutable_request_put();
  p->set_key(key);
  p->set_value(next.SerializeAsString());
  AddFailureGet(&txn, key);
  RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, etcd_->Txn(txn));
  if (!r.succeeded()) {
    if (LostLeader(r, lease)) return NotLeader(leader_key_);
    const mvccpb::KeyValue* file = FailureKv(r, lease == 0 ? 0 : 1);
    if (file == nullptr) {
      return absl::NotFoundError(absl::StrCat("file ", cur.path, " not found"));
    }
    if (file->mod_revision() != cur.mod_revision) {
      return absl::AbortedError(absl::StrCat(
          "file ", cur.path, " changed (mod revision ", file->mod_revision(),
          ", expected ", cur.mod_revision, ")"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("replace layout of ", cur.path,
                     ": a referenced node was removed meanwhile"));
  }
  ns::FileEntry e;
  e.path = cur.path;
  e.layout = std::move(next);
  e.mod_revision = r.header().revision();
  e.create_revision = cur.create_revision;
  return e;
}

}  // namespace keeper
}  // namespace rangefs
