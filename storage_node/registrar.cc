#include "storage_node/registrar.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "namespace/nfs_export.h"
#include "storage_node/rdma/rdma_devices.h"

namespace rangefs {
namespace node {
namespace {

constexpr size_t kMaxCorruptInRecord = 100;
constexpr absl::Duration kInitialBackoff = absl::Milliseconds(100);

bool IsWildcardHost(absl::string_view address) {
  return absl::StartsWith(address, "0.0.0.0:") ||
         absl::StartsWith(address, "[::]:") || absl::StartsWith(address, ":");
}

// etcd answers a put under an expired lease with NOT_FOUND "requested lease
// not found".
bool IsLeaseGone(const absl::Status& s) {
  return absl::IsNotFound(s) ||
         absl::StrContains(s.message(), "lease not found");
}

v1::LiveRecord::TransportSecurity ToProto(TransportSecurity s) {
  switch (s) {
    case TransportSecurity::kPlaintextLoopback:
      return v1::LiveRecord::PLAINTEXT_LOOPBACK;
    case TransportSecurity::kTlsLoopback:
      return v1::LiveRecord::TLS_LOOPBACK;
    case TransportSecurity::kMtls:
      return v1::LiveRecord::MTLS;
    case TransportSecurity::kInsecure:
      return v1::LiveRecord::INSECURE;
  }
  return v1::LiveRecord::TRANSPORT_SECURITY_UNSPECIFIED;
}

}  // namespace

EtcdRegistrar::EtcdRegistrar(ns::NamespaceStore* store, etcd::EtcdClient* etcd,
                             RegistrarOptions options)
    : store_(store), etcd_(etcd), options_(std::move(options)) {}

EtcdRegistrar::~EtcdRegistrar() {
  StopThreads();
  std::unique_ptr<etcd::LeaseKeepAlive> ka;
  {
    absl::MutexLock l(&mu_);
    ka = std::move(keepalive_);
  }
  ka.reset();  // Joins its thread outside mu_ (on_lost takes mu_).
}

int64_t EtcdRegistrar::lease_id() const {
  absl::MutexLock l(&mu_);
  return lease_;
}

int EtcdRegistrar::registrations() const {
  absl::MutexLock l(&mu_);
  return registrations_;
}

absl::Status EtcdRegistrar::OnStart(const Agent& agent) {
  if (options_.lease_ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease TTL ", absl::FormatDuration(options_.lease_ttl),
                     " is under 1 s"));
  }
  if (options_.live_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("live interval must be positive");
  }
  if (!options_.nfs_export.url().empty()) {
    RANGEFS_RETURN_IF_ERROR(ns::ValidateNfsExport(options_.nfs_export));
  }
  agent_ = &agent;
  const std::string& id = agent.node_id();
  absl::StatusOr<ns::NodeEntry> node = store_->GetNode(id);
  if (absl::IsNotFound(node.status())) {
    return absl::NotFoundError(absl::StrCat(
        "node id \"", id, "\" is not registered in cluster namespace ",
        store_->keys().root(),
        " (add it with `rangefs-admin node add`); refusing to serve"));
  }
  if (!node.ok()) {
    return absl::Status(
        node.status().code(),
        absl::StrCat("cannot read the record of node ", id,
                     " from etcd; refusing to serve unverified: ",
                     node.status().message()));
  }
  if (node->record.admin_state() == v1::DISABLED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", id, " is DISABLED by an admin (rangefs-admin node enable ", id,
        " to bring it back); refusing to serve"));
  }
  {
    absl::MutexLock l(&mu_);
    admin_state_ = node->record.admin_state();
  }

  absl::StatusOr<std::vector<RdmaDevice>> rdma = ListRdmaDevices();
  if (!rdma.ok()) {
    rdma_status_ =
        absl::StrCat("RDMA listing failed: ", rdma.status().message());
  } else if (rdma->empty()) {
    rdma_status_ = "no RDMA devices";
  } else {
    rdma_status_ = absl::StrCat(rdma->size(), " RDMA device(s)");
    for (const RdmaDevice& d : *rdma) {
      for (const RdmaPort& p : d.ports) {
        v1::RdmaPort* out = &rdma_ports_.emplace_back();
        out->set_device(d.name);
        out->set_port(static_cast<uint32_t>(p.number));
        out->set_state(p.state);
        out->set_rate(absl::StrFormat("%g Gb/s", p.rate_gbps));
      }
    }
  }
  started_ = absl::Now();
  probe_thread_ = std::thread([this] { ProbeLoop(); });
  absl::Status s = Register();
  if (!s.ok()) {
    StopThreads();
    return absl::Status(s.code(), absl::StrCat("registering node ", id,
                                               " in etcd: ", s.message()));
  }
  RANGEFS_LOG(INFO) << "node " << id << " registered under lease " << lease_id()
                    << " (ttl " << absl::FormatDuration(options_.lease_ttl)
                    << ")";
  refresh_thread_ = std::thread([this] { RefreshLoop(); });
  return absl::OkStatus();
}

absl::Status EtcdRegistrar::Register() {
  RANGEFS_ASSIGN_OR_RETURN(int64_t lease,
                           etcd_->LeaseGrant(options_.lease_ttl));
  {
    absl::MutexLock l(&mu_);
    lease_ = lease;
    lost_ = false;
  }
  absl::Status put = store_->PutLive(BuildLiveRecord(), lease);
  if (!put.ok()) {
    (void)etcd_->LeaseRevoke(lease);
    absl::MutexLock l(&mu_);
    lease_ = 0;
    return put;
  }
  const std::string id = agent_->node_id();
  auto ka = etcd_->KeepAlive(lease, options_.lease_ttl, [this, lease, id] {
    RANGEFS_LOG(WARNING) << "node " << id << ": lease " << lease
                         << " lost; re-registering";
    absl::MutexLock l(&mu_);
    if (lease_ == lease) lost_ = true;
  });
  if (!ka.ok()) {
    (void)etcd_->LeaseRevoke(lease);
    absl::MutexLock l(&mu_);
    lease_ = 0;
    return ka.status();
  }
  absl::MutexLock l(&mu_);
  keepalive_ = *std::move(ka);
  ++registrations_;
  return absl::OkStatus();
}

void EtcdRegistrar::RefreshLoop() {
  const std::string id = agent_->node_id();
  absl::Duration backoff = kInitialBackoff;
  bool failing = false;  // Log the first failure of a series only.
  while (true) {
    bool need_register;
    std::unique_ptr<etcd::LeaseKeepAlive> old;
    {
      absl::MutexLock l(&mu_);
      if (stop_) return;
      need_register = lease_ == 0 || lost_;
      if (need_register) {
        old = std::move(keepalive_);
        lease_ = 0;
      }
    }
    old.reset();  // Joins the old keep-alive thread outside mu_.
    absl::Duration wait = options_.live_interval;
    if (need_register) {
      absl::Status s = Register();
      if (s.ok()) {
        RANGEFS_LOG(INFO) << "node " << id << " re-registered under lease "
                          << lease_id();
        failing = false;
        backoff = kInitialBackoff;
      } else {
        if (!failing) {
          RANGEFS_LOG(WARNING) << "node " << id
                               << ": re-registration failed (retrying with "
                                  "backoff, still serving): "
                               << s;
        }
        failing = true;
        wait = backoff;
        backoff = std::min(backoff * 2, options_.max_backoff);
      }
    } else {
      absl::StatusOr<ns::NodeEntry> node = store_->GetNode(id);
      if (node.ok()) {
        absl::MutexLock l(&mu_);
        const v1::AdminState now = node->record.admin_state();
        if (now != admin_state_) {
          RANGEFS_LOG(WARNING)
              << "node " << id << ": admin state changed from "
              << v1::AdminState_Name(admin_state_) << " to "
              << v1::AdminState_Name(now)
              << (now == v1::DISABLED ? " (reporting UNHEALTHY)" : "");
          admin_state_ = now;
        }
      } else if (absl::IsNotFound(node.status())) {
        absl::MutexLock l(&mu_);
        if (admin_state_ != v1::DISABLED) {
          RANGEFS_LOG(WARNING)
              << "node " << id << ": node record removed; reporting UNHEALTHY";
        }
        admin_state_ = v1::DISABLED;
      }
      int64_t lease = lease_id();
      absl::Status s = store_->PutLive(BuildLiveRecord(), lease);
      if (!s.ok()) {
        if (IsLeaseGone(s)) {
          RANGEFS_LOG(WARNING) << "node " << id << ": lease " << lease
                               << " is gone (" << s << "); re-registering";
          absl::MutexLock l(&mu_);
          if (lease_ == lease) lost_ = true;
          wait = absl::ZeroDuration();
        } else if (!failing) {
          RANGEFS_LOG(WARNING)
              << "node " << id << ": live record refresh failed: " << s;
          failing = true;
        }
      } else {
        failing = false;
      }
    }
    absl::MutexLock l(&mu_);
    auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || lost_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&wake), wait);
  }
}

void EtcdRegistrar::ProbeLoop() {
  while (true) {
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || probe_requested_ > probe_done_;
      };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
    }
    Probe p;
    p.health = agent_->export_root().CheckHealth();
    p.stats = agent_->service().Stats();
    struct statvfs sv;
    if (statvfs(agent_->export_root().root_dir().c_str(), &sv) == 0) {
      p.free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
      p.total_bytes = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
    } else if (p.health.ok()) {
      p.health = absl::UnavailableError(absl::StrCat(
          "statvfs ", agent_->export_root().root_dir(), " failed"));
    }
    absl::MutexLock l(&mu_);
    probe_ = std::move(p);
    probe_done_ = probe_requested_;
  }
}

EtcdRegistrar::Probe EtcdRegistrar::ProbeExport() {
  absl::MutexLock l(&mu_);
  if (probe_done_ == probe_requested_) ++probe_requested_;
  // else: the previous probe is still stuck; wait for it again.
  const uint64_t want = probe_requested_;
  auto done = [this, want]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stop_ || probe_done_ >= want;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), options_.health_deadline) ||
      probe_done_ < want) {
    Probe p;
    p.health = absl::DeadlineExceededError(absl::StrCat(
        "export health check of ", agent_->export_root().root_dir(),
        " did not answer within ",
        absl::FormatDuration(options_.health_deadline)));
    return p;
  }
  return probe_;
}

v1::LiveRecord EtcdRegistrar::BuildLiveRecord() {
  const Probe probe = ProbeExport();
  const GetStatsResponse& stats = probe.stats;
  v1::LiveRecord r;
  r.set_node_id(agent_->node_id());
  r.set_version(options_.version);
  r.set_started_unix_ms(absl::ToUnixMillis(started_));
  r.set_updated_unix_ms(absl::ToUnixMillis(absl::Now()));
  r.set_bytes_read(stats.bytes_read());
  r.set_reads(stats.reads());
  r.set_bytes_written(stats.bytes_written());
  r.set_inflight(static_cast<uint32_t>(stats.inflight()));
  r.set_read_p50_us(static_cast<uint32_t>(stats.read_latency_p50_us()));
  r.set_read_p99_us(static_cast<uint32_t>(stats.read_latency_p99_us()));
  r.set_free_bytes(probe.free_bytes);
  r.set_total_bytes(probe.total_bytes);
  for (const v1::RdmaPort& p : rdma_ports_) *r.add_rdma_ports() = p;
  r.set_rdma_status(rdma_status_);
  r.set_transport_security(ToProto(agent_->transport_security()));
  if (!options_.nfs_export.url().empty()) {
    *r.mutable_nfs_export() = options_.nfs_export;
  }
  std::optional<ScrubReport> scrub = agent_->scrub_report();
  size_t corrupt = 0;
  if (scrub.has_value()) {
    corrupt = scrub->corrupt_paths.size();
    for (size_t i = 0; i < corrupt && i < kMaxCorruptInRecord; ++i) {
      r.add_corrupt_objects(scrub->corrupt_paths[i]);
    }
  }
  if (IsWildcardHost(agent_->address())) {
    absl::StatusOr<ns::NodeEntry> node = store_->GetNode(agent_->node_id());
    if (node.ok()) {
      for (const std::string& a : node->record.addresses()) r.add_addresses(a);
    }
  } else {
    r.add_addresses(agent_->address());
  }

  bool draining;
  v1::AdminState admin;
  {
    absl::MutexLock l(&mu_);
    draining = draining_;
    admin = admin_state_;
  }
  if (draining) {
    r.set_health(v1::LiveRecord::DRAINING);
    r.set_health_reason("agent shutting down");
  } else if (admin == v1::DISABLED) {
    r.set_health(v1::LiveRecord::UNHEALTHY);
    r.set_health_reason("node disabled by admin");
  } else if (admin == v1::DRAINING) {
    r.set_health(v1::LiveRecord::DRAINING);
    r.set_health_reason("node draining by admin");
  } else if (!probe.health.ok()) {
    r.set_health(v1::LiveRecord::UNHEALTHY);
    r.set_health_reason(std::string(probe.health.message()));
  } else if (corrupt > 0) {
    r.set_health(v1::LiveRecord::DEGRADED);
    r.set_health_reason(
        absl::StrCat(corrupt, " corrupt object(s) found by scrub"));
  } else {
    r.set_health(v1::LiveRecord::HEALTHY);
  }
  return r;
}

void EtcdRegistrar::OnDrain() {
  int64_t lease;
  {
    absl::MutexLock l(&mu_);
    draining_ = true;
    lease = lease_;
  }
  if (lease == 0 || agent_ == nullptr) return;
  absl::Status s = store_->PutLive(BuildLiveRecord(), lease);
  if (s.ok()) {
    RANGEFS_LOG(INFO) << "node " << agent_->node_id()
                      << " marked DRAINING in its live record";
  } else {
    RANGEFS_LOG(WARNING) << "node " << agent_->node_id()
                         << ": publishing DRAINING failed: " << s;
  }
}

void EtcdRegistrar::OnStop() {
  StopThreads();
  std::unique_ptr<etcd::LeaseKeepAlive> ka;
  int64_t lease;
  {
    absl::MutexLock l(&mu_);
    ka = std::move(keepalive_);
    lease = lease_;
    lease_ = 0;
  }
  ka.reset();
  if (lease == 0) return;
  absl::Status s = etcd_->LeaseRevoke(lease);
  if (s.ok() || absl::IsNotFound(s)) {
    RANGEFS_LOG(INFO) << "node " << agent_->node_id() << ": lease " << lease
                      << " revoked; live record removed";
  } else {
    RANGEFS_LOG(WARNING) << "node " << agent_->node_id() << ": revoking lease "
                         << lease << " failed: " << s
                         << " (the record expires with its TTL)";
  }
}

void EtcdRegistrar::StopThreads() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (refresh_thread_.joinable()) refresh_thread_.join();
  if (probe_thread_.joinable()) probe_thread_.join();
}

}  // namespace node
}  // namespace rangefs
