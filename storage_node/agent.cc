#include "storage_node/agent.h"

#include <malloc.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "storage_node/rdma/rdma_devices.h"

namespace rangefs {
namespace node {

void TuneMallocForStreaming() {
  // Each ReadRange chunk or WriteObject message is 1-4 MiB: above glibc's
  // default mmap threshold, so every message cost an mmap, page faults that
  // zero its pages, and an munmap (about a third of the CPU of a read).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

absl::StatusOr<std::unique_ptr<Agent>> Agent::Start(AgentOptions options) {
  std::string host;
  int requested_port = 0;
  RANGEFS_RETURN_IF_ERROR(
      SplitHostPort(options.listen, &host, &requested_port));
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                           MakeAgentServerCredentials(options.tls));
  if (!options.writers.empty() && options.tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", options.node_id,
        ": --writers needs mTLS (--tls_cert, --tls_key, --tls_client_ca): "
        "without client certificates there is no identity to check"));
  }
  if (options.insecure_warning_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("insecure_warning_interval must be > 0");
  }
  absl::StatusOr<TransportSecurity> security =
      DecideTransportSecurity({.listen = options.listen,
                               .data_listen = options.data_listen,
                               .tls = options.tls,
                               .insecure = options.insecure});
  if (!security.ok()) {
    return absl::Status(security.status().code(),
                        absl::StrCat("node ", options.node_id, ": ",
                                     security.status().message()));
  }
  std::unique_ptr<Agent> agent(new Agent(std::move(options)));
  agent->security_ = *security;
  const AgentOptions& opts = agent->options_;

  RANGEFS_ASSIGN_OR_RETURN(
      agent->root_, ExportRoot::Open(opts.export_root,
                                     {.writable = !opts.service.read_only}));
  if (agent->root_->writable()) {
    absl::Status s = agent->root_->ClearTemp();
    if (!s.ok()) RANGEFS_LOG(WARNING) << "clearing temp files: " << s;
  }
  absl::StatusOr<std::vector<RdmaDevice>> rdma = ListRdmaDevices();
  if (!rdma.ok()) {
    RANGEFS_LOG(WARNING) << "listing RDMA devices: " << rdma.status();
  } else {
    for (const RdmaDevice& d : *rdma) {
      RANGEFS_LOG(INFO) << "RDMA device " << d.name << " with "
                        << d.ports.size() << " port(s)";
    }
  }

  AgentServiceOptions service_options = opts.service;
  service_options.write_access = {
      .check_identity = !opts.tls.client_ca_file.empty(),
      .writers = opts.writers};
  agent->service_ =
      std::make_unique<AgentService>(agent->root_.get(), service_options);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(opts.listen, creds, &agent->port_);
  builder.SetMaxReceiveMessageSize(opts.max_receive_message_bytes);
  builder.RegisterService(agent->service_.get());
  agent->server_ = builder.BuildAndStart();
  if (agent->server_ == nullptr || agent->port_ == 0) {
    if (agent->server_ != nullptr) agent->server_->Shutdown();
    return absl::UnavailableError(absl::StrCat(
        "node ", opts.node_id, ": cannot listen on ", opts.listen));
  }
  agent->address_ = absl::StrCat(host, ":", agent->port_);
  if (!opts.data_listen.empty() && opts.data_listen != "off") {
    if (opts.tls.enabled()) {
      RANGEFS_LOG(INFO) << "node " << opts.node_id
                        << ": data port disabled (the agent runs TLS and "
                           "the data port is plaintext); reads use gRPC";
    } else {
      DataPortOptions dpo = opts.data_port;
      dpo.host = host;
      dpo.port = 0;
      if (opts.data_listen != "auto") {
        absl::Status s = SplitHostPort(opts.data_listen, &dpo.host, &dpo.port);
        if (!s.ok()) {
          agent->Shutdown(absl::Now());
          return absl::InvalidArgumentError(absl::StrCat(
              "node ", opts.node_id, ": data_listen: ", s.message()));
        }
      }
      absl::StatusOr<std::unique_ptr<DataPortServer>> dp =
          DataPortServer::Start(agent->root_.get(), agent->service_.get(), dpo);
      if (!dp.ok()) {
        agent->Shutdown(absl::Now());
        return absl::Status(
            dp.status().code(),
            absl::StrCat("node ", opts.node_id, ": ", dp.status().message()));
      }
      agent->data_port_ = *std::move(dp);
      agent->service_->set_data_port(agent->data_port_->port());
      RANGEFS_LOG(INFO) << "node " << opts.node_id << ": data port on "
                        << dpo.host << ":" << agent->data_port_->port();
    }
  }
  if (opts.scrub_interval > absl::ZeroDuration()) {
    absl::MutexLock l(&agent->mu_);
    agent->scrubber_ = std::make_unique<BackgroundScrubber>(
        agent->root_.get(),
        BackgroundScrubber::Options{
            .interval = opts.scrub_interval,
            .max_bytes_per_sec = opts.scrub_max_bytes_per_sec,
            .clock = opts.service.clock});
  }
  agent->LogSecurity();
  if (opts.registrar != nullptr) {
    absl::Status s = opts.registrar->OnStart(*agent);
    if (!s.ok()) {
      agent->Shutdown(absl::Now());
      return s;
    }
  }
  return agent;
}

Agent::~Agent() { Shutdown(absl::Now()); }

void Agent::Shutdown(absl::Time deadline) {
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  if (options_.registrar != nullptr) options_.registrar->OnDrain();
  std::unique_ptr<PeriodicTask> warning;
  {
    absl::MutexLock l(&mu_);
    warning = std::move(insecure_warning_);
  }
  warning.reset();  // Joins its thread (at once).
  if (data_port_ != nullptr) {
    service_->set_data_port(0);
    data_port_->Shutdown(deadline);
  }
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(deadline));
    server_->Wait();
  }
  std::unique_ptr<BackgroundScrubber> scrubber;
  {
    absl::MutexLock l(&mu_);
    scrubber = std::move(scrubber_);
  }
  scrubber.reset();  // Joins its thread.
  if (options_.registrar != nullptr) options_.registrar->OnStop();
}

void Agent::LogSecurity() {
  const AgentOptions& o = options_;
  switch (security_) {
    case TransportSecurity::kMtls:
      if (o.writers.empty()) {
        RANGEFS_LOG(WARNING) << "node " << o.node_id
                             << ": mTLS without --writers: every write and "
                                "delete will be refused (read-only service)";
      } else {
        RANGEFS_LOG(INFO) << "node " << o.node_id << ": mTLS; writers: "
                          << absl::StrJoin(o.writers, ",");
      }
      break;
    case TransportSecurity::kInsecure: {
      const std::string msg = absl::StrCat(
          "node ", o.node_id, " runs INSECURE (--insecure): ", address_,
          o.tls.enabled() ? " takes TLS without client certificates"
                          : " is plaintext",
          data_port_ != nullptr
              ? absl::StrCat(", plaintext data port ", data_port_->port())
              : "",
          "; anyone who can reach it can read, write, overwrite and delete "
          "objects. Serve mTLS instead (deploy/README.md, \"Agent "
          "security\")");
      absl::MutexLock l(&mu_);
      insecure_warning_ = std::make_unique<PeriodicTask>(
          o.insecure_warning_interval, [msg] { RANGEFS_LOG(WARNING) << msg; });
      break;
    }
    case TransportSecurity::kPlaintextLoopback:
    case TransportSecurity::kTlsLoopback:
      break;
  }
}

std::optional<ScrubReport> Agent::scrub_report() const {
  absl::MutexLock l(&mu_);
  if (scrubber_ == nullptr) return std::nullopt;
  return scrubber_->LastReport();
}

}  // namespace node
}  // namespace rangefs
