// File: registrar.h
//
// EtcdRegistrar: registers a running Agent in the cluster namespace. On
// start it checks the node's admin record (the node must be registered by
// `rangefs-admin node add` and not DISABLED), grants an etcd lease, writes
// the node's LiveRecord under it and keeps the lease alive. A background
// thread refreshes the live record every `live_interval` (health, load,
// space, scrub findings, RDMA ports, transport security). A lost lease
// (etcd partition, a long SIGSTOP) is replaced by a new one as soon as etcd
// answers again, with bounded exponential backoff. OnDrain publishes
// health=DRAINING; OnStop revokes the lease, so the live record disappears at
// once.
//
//   auto etcd = etcd::EtcdClient::Open({.endpoints = eps});
//   auto kv = ns::NewEtcdKv(etcd->get());
//   auto store = ns::NewKvStore(kv.get(), {.cluster = "prod"});
//   EtcdRegistrar registrar(store.get(), etcd->get(), {});
//   options.registrar = &registrar;
//   auto agent = Agent::Start(options);   // fails if not registered
//
// Start-up policy: fail fast. If etcd cannot be reached at start, OnStart
// returns UNAVAILABLE and the agent exits non-zero (its supervisor restarts
// it). Without etcd the agent cannot tell whether its node id is registered
// or disabled, and serving an unverified id could hand out data of a node
// an admin took out of service. Once started, etcd outages never stop the
// agent: it keeps serving and re-registers when etcd is back.
//
// Thread-safe. Owns two threads (refresh loop, export health probe),
// started by OnStart and joined by OnStop or the destructor.
#ifndef RANGEFS_STORAGE_NODE_REGISTRAR_H_
#define RANGEFS_STORAGE_NODE_REGISTRAR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/version.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"
#include "storage_node/agent.h"

namespace rangefs {
namespace node {

// The agent version published in live records.
inline constexpr char kAgentVersion[] = "rangefs-node " RANGEFS_VERSION;

struct RegistrarOptions {
  absl::Duration lease_ttl = absl::Seconds(10);  // >= 1 s
  absl::Duration live_interval = absl::Seconds(2);
  // ExportRoot::CheckHealth (and statvfs) must answer within this, else the
  // node reports itself UNHEALTHY.
  absl::Duration health_deadline = absl::Seconds(2);
  // Re-registration backoff: doubles from 100 ms up to this.
  absl::Duration max_backoff = absl::Seconds(2);
  std::string version = kAgentVersion;
  // The node's NFS export published in every live record (rangefs-node
  // --nfs_export, --nfs_version); empty url: none. OnStart refuses an
  // invalid one (ns::ValidateNfsExport) with INVALID_ARGUMENT.
  v1::NfsExport nfs_export;
};

class EtcdRegistrar final : public Registrar {
 public:
  // `store` and `etcd` are not owned, must be non-null and outlive this
  // object; `store` must be backed by `etcd`.
  EtcdRegistrar(ns::NamespaceStore* store, etcd::EtcdClient* etcd,
                RegistrarOptions options);
  EtcdRegistrar(const EtcdRegistrar&) = delete;
  EtcdRegistrar& operator=(const EtcdRegistrar&) = delete;
  // Stops the threads (without revoking) if OnStop was not called.
  ~EtcdRegistrar() override;

  // Checks the node record, registers and starts the threads. Blocking.
  // NOT_FOUND: node id not registered; FAILED_PRECONDITION: node DISABLED;
  // UNAVAILABLE / DEADLINE_EXCEEDED: etcd unreachable; INVALID_ARGUMENT:
  // bad options (including a bad nfs_export).
  absl::Status OnStart(const Agent& agent) override;
  // Publishes health=DRAINING (best effort, blocks at most one etcd call).
  void OnDrain() override;
  // Stops the threads and revokes the lease (best effort).
  void OnStop() override;

  // Current lease id (0 when not registered).
  int64_t lease_id() const;
  // Number of successful registrations (1 after start, +1 per re-register).
  int registrations() const;
  // The live record as it would be published now.
  v1::LiveRecord BuildLiveRecord();

 private:
  struct Probe {
    absl::Status health;
    uint64_t free_bytes = 0;
    uint64_t total_bytes = 0;
    GetStatsResponse stats;  // Counters (Stats() touches the export too).
  };

  void RefreshLoop();
  void ProbeLoop();
  // Runs one probe on the probe thread, waiting at most health_deadline.
  Probe ProbeExport();
  // Grants a lease, writes the live record, starts the keep-alive.
  absl::Status Register();
  void StopThreads();

  ns::NamespaceStore* const store_;
  etcd::EtcdClient* const etcd_;
  const RegistrarOptions options_;
  const Agent* agent_ = nullptr;  // Set by OnStart.
  absl::Time started_;
  std::vector<v1::RdmaPort> rdma_ports_;
  std::string rdma_status_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool lost_ ABSL_GUARDED_BY(mu_) = false;  // Keep-alive reported loss.
  int64_t lease_ ABSL_GUARDED_BY(mu_) = 0;
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  v1::AdminState admin_state_ ABSL_GUARDED_BY(mu_) = v1::ACTIVE;
  std::unique_ptr<etcd::LeaseKeepAlive> keepalive_ ABSL_GUARDED_BY(mu_);
  // Probe hand-off: the refresh thread bumps probe_requested_, the probe
  // thread answers with probe_done_ == probe_requested_.
  uint64_t probe_requested_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t probe_done_ ABSL_GUARDED_BY(mu_) = 0;
  Probe probe_ ABSL_GUARDED_BY(mu_);

  std::thread refresh_thread_;
  std::thread probe_thread_;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_REGISTRAR_H_
