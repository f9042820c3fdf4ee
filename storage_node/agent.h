// File: agent.h
//
// The storage-node agent: one export directory served over gRPC/TCP
// (AgentService) and, for reads, an optional raw-TCP data port
// (DataPortServer), an optional background scrubber, and a Registrar hook
// through which etcd registration (lease, live record) plugs in later
// without touching the service.
//
//   // Off loopback an agent needs mTLS (or .insecure): transport_security.h.
//   RANGEFS_ASSIGN_OR_RETURN(auto agent, Agent::Start({
//       .node_id = "n1", .export_root = "/export", .listen = "0.0.0.0:7070",
//       .tls = {.cert_file = "n1.crt", .key_file = "n1.key",
//               .client_ca_file = "ca.crt"},
//       .writers = {"rangefs-admin"}}));  // may write; other certs read
//   ... wait for SIGTERM ...
//   agent->Shutdown(absl::Now() + absl::Seconds(10));
//
// Thread-safe. The gRPC server's threads are owned by gRPC and stopped by
// Shutdown (or the destructor).
#ifndef RANGEFS_STORAGE_NODE_AGENT_H_
#define RANGEFS_STORAGE_NODE_AGENT_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "storage_node/agent_service.h"
#include "storage_node/data_port.h"
#include "storage_node/export_root.h"
#include "storage_node/periodic_task.h"
#include "storage_node/scrubber.h"
#include "storage_node/tls.h"
#include "storage_node/transport_security.h"

namespace rangefs {
namespace node {

class Agent;

// Lifecycle hooks for registration with the cluster (etcd lease + live
// record). Called on the thread that calls Agent::Start / Shutdown, never
// under the agent's locks.
class Registrar {
 public:
  virtual ~Registrar() = default;
  // The agent is serving (port() is known). An error aborts Start, which
  // then shuts the server down and returns it.
  virtual absl::Status OnStart(const Agent& agent) = 0;
  // Shutdown began: withdraw the node so clients stop picking it. The
  // server still finishes in-flight requests after this.
  virtual void OnDrain() = 0;
  // The server has stopped.
  virtual void OnStop() = 0;
};

struct AgentOptions {
  std::string node_id;
  std::string export_root;             // Existing directory.
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks one.
  // Raw-TCP data port for ReadRange (data_port.h): "host:port" (port 0
  // picks one), "auto" (the host of `listen`, port 0), or "" / "off"
  // (none; the default here, while rangefs-node defaults to "auto"). Not
  // started when `tls` is enabled (the data port is plaintext).
  std::string data_listen;
  DataPortOptions data_port;  // Caps; host and port come from data_listen.
  AgentTlsOptions tls;        // Default: plaintext.
  // Allow listeners on non-loopback addresses without mTLS (see
  // transport_security.h); the agent then logs a warning every
  // insecure_warning_interval. Default: refuse to start instead.
  bool insecure = false;
  absl::Duration insecure_warning_interval = absl::Minutes(1);
  // Certificate identities (CN or SAN) that may change the export
  // (WriteObject, DeleteObject) under mTLS; the other clients may only
  // read. Empty under mTLS: nobody may write. Requires tls.client_ca_file.
  std::vector<std::string> writers;
  // read_only, caps, chunk size, ...; its write_access is set from `tls`
  // and `writers`.
  AgentServiceOptions service;
  // Max bytes of one incoming gRPC message (bounds a write's memory).
  int max_receive_message_bytes = 8 << 20;
  // Background scrub every scrub_interval; zero (default) disables it.
  absl::Duration scrub_interval = absl::ZeroDuration();
  uint64_t scrub_max_bytes_per_sec = 50 << 20;
  Registrar* registrar = nullptr;  // Not owned; may be null; outlives Agent.
};

class Agent {
 public:
  // Opens the export (removing temp files a crash left), starts the gRPC
  // server and the scrubber, then calls registrar->OnStart. UNAVAILABLE if
  // it cannot listen; INVALID_ARGUMENT for bad TLS options, unreadable
  // PEM files (naming the file), or writers without a client CA;
  // FAILED_PRECONDITION, before listening, for a non-loopback listener
  // without mTLS unless `insecure` (DecideTransportSecurity); errors of
  // ExportRoot::Open as they are.
  static absl::StatusOr<std::unique_ptr<Agent>> Start(AgentOptions options);

  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  // Shuts down (deadline: now) if Shutdown was not called.
  ~Agent();

  // Drains: registrar->OnDrain, stop accepting calls, wait for in-flight
  // ones until `deadline` (then cancel them), stop the scrubber,
  // registrar->OnStop. Blocking; idempotent.
  void Shutdown(absl::Time deadline);

  const std::string& node_id() const { return options_.node_id; }
  int port() const { return port_; }
  // The data port's port; 0 when it is not running.
  int data_port() const {
    return data_port_ != nullptr ? data_port_->port() : 0;
  }
  // The data port server; null when it is not running.
  const DataPortServer* data_port_server() const { return data_port_.get(); }
  // "host:port" with the real port.
  const std::string& address() const { return address_; }
  const AgentOptions& options() const { return options_; }
  // How the listeners are protected (published in the live record).
  TransportSecurity transport_security() const { return security_; }
  const ExportRoot& export_root() const { return *root_; }
  AgentService& service() { return *service_; }
  const AgentService& service() const { return *service_; }
  // Latest background scrub report; nullopt if disabled or none finished.
  std::optional<ScrubReport> scrub_report() const;

 private:
  explicit Agent(AgentOptions options) : options_(std::move(options)) {}
  // Logs how the listeners are protected; under kInsecure starts the
  // repeating warning.
  void LogSecurity();

  const AgentOptions options_;
  std::unique_ptr<ExportRoot> root_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<DataPortServer> data_port_;
  TransportSecurity security_ = TransportSecurity::kPlaintextLoopback;
  int port_ = 0;
  std::string address_;
  mutable absl::Mutex mu_;
  std::unique_ptr<BackgroundScrubber> scrubber_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // Repeats the --insecure warning; null unless security_ is kInsecure.
  std::unique_ptr<PeriodicTask> insecure_warning_ ABSL_GUARDED_BY(mu_);
};

// Tunes glibc malloc for a process that streams multi-MiB gRPC messages
// (the agent; a job reading through NodeClient may call it too): keeps
// freed buffers of up to 32 MiB in the heap instead of mmap/munmap (and
// page-faulting) them for every message. Call once, early in main, before
// threads start. Not thread-safe.
void TuneMallocForStreaming();

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_AGENT_H_
