#include "keeper/election.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace rangefs {
namespace keeper {

LeaderElection::LeaderElection(etcd::EtcdClient* etcd, ElectionOptions options)
    : etcd_(etcd), options_(std::move(options)) {}

LeaderElection::~LeaderElection() { Resign(); }

absl::StatusOr<bool> LeaderElection::Campaign() {
  if (leader_.load()) return true;
  keepalive_.reset();  // A lost lease's thread has stopped; join it.
  lease_ = 0;
  RANGEFS_ASSIGN_OR_RETURN(int64_t lease, etcd_->LeaseGrant(options_.ttl));
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* c = txn.add_compare();
  c->set_key(options_.key);
  c->set_target(etcdserverpb::Compare::CREATE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_create_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(options_.key);
  put->set_value(options_.id);
  put->set_lease(lease);
  absl::StatusOr<etcdserverpb::TxnResponse> r = etcd_->Txn(txn);
  if (!r.ok() || !r->succeeded()) {
    absl::Status revoked = etcd_->LeaseRevoke(lease);
    if (!revoked.ok() && !absl::IsNotFound(revoked)) {
      RANGEFS_LOG(WARNING) << "keeper " << options_.id
                           << ": revoking an unused lease: " << revoked;
    }
    if (!r.ok()) return r.status();
    return false;
  }
  lease_ = lease;
  leader_.store(true);
  auto ka = etcd_->KeepAlive(lease, options_.ttl, [this] {
    leader_.store(false);
    RANGEFS_LOG(WARNING) << "keeper " << options_.id
                         << ": leader lease lost; stopped acting";
  });
  if (!ka.ok()) {
    leader_.store(false);
    (void)etcd_->LeaseRevoke(lease);
    return ka.status();
  }
  keepalive_ = *std::move(ka);
  RANGEFS_LOG(INFO) << "keeper " << options_.id << " is the active keeper";
  return true;
}

absl::StatusOr<std::string> LeaderElection::Leader() {
  RANGEFS_ASSIGN_OR_RETURN(etcd::RangeResult r, etcd_->Range(options_.key));
  if (r.kvs.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no active keeper (", options_.key, " is absent)"));
  }
  return r.kvs[0].value;
}

void LeaderElection::Resign() {
  const bool was = leader_.exchange(false);
  keepalive_.reset();
  if (lease_ != 0) {
    absl::Status s = etcd_->LeaseRevoke(lease_);
    if (!s.ok() && !absl::IsNotFound(s)) {
      RANGEFS_LOG(WARNING) << "keeper " << options_.id
                           << ": revoking its lease: " << s;
    }
    lease_ = 0;
  }
  if (was) RANGEFS_LOG(INFO) << "keeper " << options_.id << " resigned";
}

}  // namespace keeper
}  // namespace rangefs
