// rangefs-node: the storage-node agent. Parses flags, wires an Agent, waits
// for SIGTERM/SIGINT, drains and exits 0.
#include <signal.h>
#include <stdio.h>

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/config.h"
#include "base/flags_usage.h"
#include "base/layered_config.h"
#include "base/logging.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd/etcd_settings.h"
#include "namespace/etcd_kv.h"
#include "namespace/layout.h"
#include "namespace/nfs_export.h"
#include "namespace/store.h"
#include "storage_node/agent.h"
#include "storage_node/metrics.h"
#include "storage_node/registrar.h"
#include "storage_node/transport_security.h"

ABSL_FLAG(std::string, node_id, "", "This node's id (required).");
ABSL_FLAG(std::string, export_root, "", "Directory to serve (required).");
ABSL_FLAG(std::string, listen, "0.0.0.0:7070",
          "host:port to serve gRPC on; port 0 picks a free one. A "
          "non-loopback host (0.0.0.0 included) needs mTLS (--tls_cert, "
          "--tls_key, --tls_client_ca) or --insecure.");
ABSL_FLAG(std::string, data_listen, "auto",
          "host:port of the raw-TCP data port for ReadRange "
          "(storage_node/data_port.h); \"auto\" (default): the host of "
          "--listen, a free port (advertised through GetStats); \"off\" or "
          "empty: none, reads use gRPC. Always off with --tls_cert (it is "
          "plaintext).");
ABSL_FLAG(std::string, data_port_send, "auto",
          "How the data port sends whole checksum blocks: sendfile (no copy "
          "on the node), copy (pread + writev), or auto (default): copy to "
          "a client on this host, where it costs the receiver less, "
          "sendfile to any other (storage_node/data_port.h).");
ABSL_FLAG(bool, read_only, false, "Refuse all writes.");
ABSL_FLAG(int, max_concurrent_reads, 64,
          "ReadRange calls past this are refused with RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, chunk_size, 1 << 20, "Max bytes per ReadRange chunk.");
ABSL_FLAG(int, scrub_interval_s, 0,
          "Background scrub period in seconds; 0 disables it.");
ABSL_FLAG(int64_t, scrub_max_bytes_per_sec, 50 << 20,
          "Background scrub read rate cap.");
ABSL_FLAG(std::string, etcd, "",
          "Same as --etcd_endpoints (the name every rangefs tool takes).");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "Comma-separated etcd endpoints; when set, the agent registers its "
          "live record under a lease (and refuses to serve an unregistered or "
          "disabled node id). Empty: no registration.");
ABSL_FLAG(std::string, cluster, "default", "Cluster name in the namespace.");
ABSL_FLAG(double, lease_ttl_s, 10, "etcd lease TTL in seconds (>= 1).");
ABSL_FLAG(double, live_interval_s, 2,
          "How often the live record is refreshed, in seconds.");
ABSL_FLAG(double, health_deadline_s, 2,
          "The export health check must answer within this, else the node "
          "reports UNHEALTHY.");
ABSL_FLAG(double, etcd_timeout_s, 2, "Deadline of each etcd call.");
ABSL_FLAG(std::string, etcd_ca, "", "PEM CA for etcd TLS.");
ABSL_FLAG(std::string, etcd_cert, "", "PEM client certificate for etcd.");
ABSL_FLAG(std::string, etcd_key, "", "PEM client key for etcd.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate of the gRPC service; set (with --tls_key) "
          "turns TLS on. Empty: plaintext.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; when set, clients must present a certificate "
          "signed by it (mTLS). Needs --tls_cert. Required on a non-loopback "
          "--listen unless --insecure.");
ABSL_FLAG(std::string, writers, "",
          "Comma-separated certificate identities (subject CN or SAN) that "
          "may change the export (WriteObject, overwrites, DeleteObject) "
          "under mTLS; other clients may only read. Empty under mTLS: "
          "nobody may write. Needs --tls_client_ca.");
ABSL_FLAG(bool, insecure, false,
          "Serve on a non-loopback address without mTLS (plaintext, or TLS "
          "without client certificates): anyone who can reach the port may "
          "read, write, overwrite and delete objects. Logs a warning every "
          "minute. Without it such an agent refuses to start.");
ABSL_FLAG(int64_t, copy_max_bytes_per_sec, 100 << 20,
          "Cap on the bytes per second all CopyObject calls (copies from "
          "peer agents, by rangefs-keeper) pull together; 0: no cap. The "
          "default, 100 MiB/s, is HDFS's balancer default per DataNode: "
          "a scan sharing the node's CPU keeps most of its speed while a "
          "node heals (tests/bench/RESULTS.md, part K).");
ABSL_FLAG(int, copy_nice, 10,
          "CPU priority (nice value, 0-19) of copies between agents: the "
          "threads of this agent's copies, and those serving its peers' "
          "copies from here, run at it so that readers get the CPU first "
          "when both want it; 0: normal priority.");
ABSL_FLAG(int64_t, ec_staging_idle_s, 3600,
          "A RebuildEcColumn staging object (a column rebuilt in ranges of "
          "rows, in the export's .rangefs-tmp/) not written for this many "
          "seconds belongs to a rebuild its caller abandoned (rangefs-keeper "
          "died or picked another target): the agent removes it, checking "
          "every quarter of this (at most every 10 minutes), and counts the "
          "bytes (rangefs_node_ec_staging_swept_bytes_total). A range of "
          "that rebuild arriving later starts its staging afresh and the "
          "final range names the rows it lacks. 0: never (the agent's start "
          "still empties the temp dir).");
ABSL_FLAG(std::string, peer_tls_ca, "",
          "PEM CA bundle of peer agents' certificates, for CopyObject "
          "(this agent dials the source agent). Empty (with the two below): "
          "plaintext to peers.");
ABSL_FLAG(std::string, peer_tls_cert, "",
          "PEM client certificate this agent presents to peer agents doing "
          "mTLS (any certificate of the cluster CA may read).");
ABSL_FLAG(std::string, peer_tls_key, "", "PEM key of --peer_tls_cert.");
ABSL_FLAG(int, metrics_port, 9470,
          "Serve Prometheus metrics (rangefs_node_*: reads, bytes, rejected "
          "reads, in-flight calls, read latency, free/total bytes, scrub "
          "findings) at http://ADDRESS:PORT/metrics; 0: no server. When the "
          "default port is taken (several agents on one host) the agent "
          "warns and serves none; a port or address given on the command "
          "line must work.");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1",
          "IPv4 address of the --metrics_port server (127.0.0.1: this host "
          "only; e.g. 0.0.0.0 to let a remote Prometheus scrape it).");
ABSL_FLAG(int, shutdown_grace_s, 10,
          "On SIGTERM, how long in-flight calls may finish.");

ABSL_FLAG(std::string, nfs_export, "",
          "This node's NFS export, published in its live record for clients "
          "that read over NFS without a kernel mount (data_path=nfs): "
          "nfs://host[:port]/export[?mountport=P], e.g. "
          "nfs://10.0.0.7/srv/rangefs/sn-07 (a ganesha or kernel nfsd "
          "serving --export_root read-only; deploy/node/export.sh "
          "--ganesha). Empty: none.");
ABSL_FLAG(std::string, nfs_version, "4",
          "NFS protocol version clients use for --nfs_export: 3, 4 (v4.0: "
          "Debian's libnfs 4.0 speaks v3 and v4.0) or 4.1.");
ABSL_FLAG(std::string, config, "",
          "rangefs config file (deploy/config/rangefs.conf.example); "
          "command-line flags override its values.");

namespace {

// True when --metrics_port or --metrics_address is on the command line
// (then a server that cannot start is an error, not a warning).
bool MetricsFlagsGiven(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view a(argv[i]);
    if (absl::StartsWith(a, "--metrics_port") ||
        absl::StartsWith(a, "--metrics_address")) {
      return true;
    }
  }
  return false;
}

// Applies the layered config (base/layered_config.h: the file of --config
// or $RANGEFS_CONFIG, with $RANGEFS_ETCD and $RANGEFS_CLUSTER over it),
// before flag parsing, so that explicit flags parsed afterwards win. Exits
// 2 on a bad file or value.
void ApplyConfigFile(int argc, char** argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a(argv[i]);
    if (absl::StartsWith(a, "--config=")) path = std::string(a.substr(9));
    if (a == "--config" && i + 1 < argc) path = argv[i + 1];
  }
  absl::StatusOr<rangefs::Config> c = rangefs::LoadLayeredConfig(path);
  if (!c.ok()) {
    fprintf(stderr, "rangefs-node: %s\n", c.status().ToString().c_str());
    exit(2);
  }
  auto str = [&](const char* key, absl::Flag<std::string>* flag) {
    if (c->Has(key)) absl::SetFlag(flag, c->GetString(key));
  };
  str("node_id", &FLAGS_node_id);
  str("export_root", &FLAGS_export_root);
  str("listen", &FLAGS_listen);
  str("data_listen", &FLAGS_data_listen);
  str("etcd_endpoints", &FLAGS_etcd_endpoints);
  str("cluster", &FLAGS_cluster);
  str("etcd_ca", &FLAGS_etcd_ca);
  str("etcd_cert", &FLAGS_etcd_cert);
  str("etcd_key", &FLAGS_etcd_key);
  str("agent_tls_cert", &FLAGS_tls_cert);
  str("agent_tls_key", &FLAGS_tls_key);
  str("agent_tls_client_ca", &FLAGS_tls_client_ca);
  str("agent_writers", &FLAGS_writers);
  str("agent_peer_tls_ca", &FLAGS_peer_tls_ca);
  str("agent_peer_tls_cert", &FLAGS_peer_tls_cert);
  str("agent_peer_tls_key", &FLAGS_peer_tls_key);
  if (c->Has("agent_insecure")) {
    absl::StatusOr<bool> insecure = c->GetBool("agent_insecure");
    if (!insecure.ok()) {
      fprintf(stderr, "rangefs-node: %s\n",
              insecure.status().ToString().c_str());
      exit(2);
    }
    absl::SetFlag(&FLAGS_insecure, *insecure);
  }
  auto secs = [&](const char* key) -> double {
    absl::StatusOr<absl::Duration> d = c->GetDuration(key);
    if (!d.ok()) {
      fprintf(stderr, "rangefs-node: %s\n", d.status().ToString().c_str());
      exit(2);
    }
    return absl::ToDoubleSeconds(*d);
  };
  if (c->Has("etcd_timeout")) {
    absl::SetFlag(&FLAGS_etcd_timeout_s, secs("etcd_timeout"));
  }
  if (c->Has("shutdown_grace")) {
    absl::SetFlag(&FLAGS_shutdown_grace_s,
                  static_cast<int>(secs("shutdown_grace")));
  }
  if (c->Has("log_level")) {
    rangefs::LogLevel level;
    if (rangefs::ParseLogLevel(c->GetString("log_level"), &level)) {
      rangefs::SetMinLogLevel(level);
    }
  }
}

// How the startup log line describes the agent's transport security.
const char* SecurityNote(rangefs::node::TransportSecurity s) {
  using rangefs::node::TransportSecurity;
  switch (s) {
    case TransportSecurity::kPlaintextLoopback:
      return " (plaintext, loopback only)";
    case TransportSecurity::kTlsLoopback:
      return " (TLS, loopback only)";
    case TransportSecurity::kMtls:
      return " (mTLS)";
    case TransportSecurity::kInsecure:
      return " (INSECURE: --insecure)";
  }
  return "";
}

}  // namespace

constexpr char kUsage[] =
    "usage: rangefs-node --node_id=ID --export_root=DIR [--config=FILE] "
    "[--FLAG=VALUE ...]\n"
    "The storage-node agent: serves the files under --export_root to\n"
    "rangefs clients and registers the node's live record in etcd.";

int main(int argc, char** argv) {
  if (auto text = rangefs::HelpOrVersion(argc, argv, "rangefs-node", kUsage)) {
    fputs(text->c_str(), stdout);
    return 0;
  }
  rangefs::node::TuneMallocForStreaming();
  // Debian's Abseil is a debug build: skip its per-lock deadlock detection
  // (as release builds do); it costs CPU on every ReadRange.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  ApplyConfigFile(argc, argv);
  absl::ParseCommandLine(argc, argv);
  if (!absl::GetFlag(FLAGS_etcd).empty()) {
    absl::SetFlag(&FLAGS_etcd_endpoints, absl::GetFlag(FLAGS_etcd));
  }
  if (absl::Status s =
          rangefs::ns::ValidateClusterName(absl::GetFlag(FLAGS_cluster));
      !s.ok()) {
    fprintf(stderr, "%s: --cluster: %s\n", "rangefs-node",
            s.ToString().c_str());
    return 2;
  }
  using rangefs::node::Agent;
  using rangefs::node::AgentOptions;

  // Block the stop signals in every thread (gRPC's included); main waits
  // for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  AgentOptions options;
  options.node_id = absl::GetFlag(FLAGS_node_id);
  options.export_root = absl::GetFlag(FLAGS_export_root);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.data_listen = absl::GetFlag(FLAGS_data_listen);
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.insecure = absl::GetFlag(FLAGS_insecure);
  for (absl::string_view w :
       absl::StrSplit(absl::GetFlag(FLAGS_writers), ',', absl::SkipEmpty())) {
    w = absl::StripAsciiWhitespace(w);
    if (!w.empty()) options.writers.emplace_back(w);
  }
  options.service.read_only = absl::GetFlag(FLAGS_read_only);
  options.service.max_concurrent_reads =
      absl::GetFlag(FLAGS_max_concurrent_reads);
  options.service.chunk_size =
      static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_chunk_size)));
  options.service.copy_max_bytes_per_sec = static_cast<uint64_t>(
      std::max<int64_t>(0, absl::GetFlag(FLAGS_copy_max_bytes_per_sec)));
  options.service.copy_nice = absl::GetFlag(FLAGS_copy_nice);
  if (absl::GetFlag(FLAGS_ec_staging_idle_s) < 0) {
    RANGEFS_LOG(ERROR) << "--ec_staging_idle_s="
                       << absl::GetFlag(FLAGS_ec_staging_idle_s)
                       << " is negative (0: never sweep)";
    return 2;
  }
  options.service.ec_staging_idle =
      absl::Seconds(absl::GetFlag(FLAGS_ec_staging_idle_s));
  options.data_port.background_nice = options.service.copy_nice;
  absl::StatusOr<rangefs::node::DataPortSend> send =
      rangefs::node::ParseDataPortSend(absl::GetFlag(FLAGS_data_port_send));
  if (!send.ok()) {
    std::cerr << "rangefs-node: --data_port_send: " << send.status() << "\n";
    return 2;
  }
  options.data_port.send = *send;
  options.service.peer_tls.ca_file = absl::GetFlag(FLAGS_peer_tls_ca);
  options.service.peer_tls.cert_file = absl::GetFlag(FLAGS_peer_tls_cert);
  options.service.peer_tls.key_file = absl::GetFlag(FLAGS_peer_tls_key);
  options.scrub_interval = absl::Seconds(absl::GetFlag(FLAGS_scrub_interval_s));
  options.scrub_max_bytes_per_sec =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_scrub_max_bytes_per_sec));
  if (options.node_id.empty() || options.export_root.empty()) {
    RANGEFS_LOG(ERROR) << "--node_id and --export_root are required";
    return 2;
  }
  if (options.service.copy_nice < 0 || options.service.copy_nice > 19) {
    RANGEFS_LOG(ERROR) << "--copy_nice=" << options.service.copy_nice
                       << " is outside 0-19";
    return 2;
  }
  rangefs::v1::NfsExport nfs_export;
  if (!absl::GetFlag(FLAGS_nfs_export).empty()) {
    nfs_export.set_url(absl::GetFlag(FLAGS_nfs_export));
    nfs_export.set_version(absl::GetFlag(FLAGS_nfs_version));
    if (absl::Status s = rangefs::ns::ValidateNfsExport(nfs_export); !s.ok()) {
      fprintf(stderr, "rangefs-node: --nfs_export / --nfs_version: %s\n",
              std::string(s.message()).c_str());
      return 2;
    }
  }
  // etcd registration: objects live until the end of main (after the agent).
  std::unique_ptr<rangefs::etcd::EtcdClient> etcd;
  std::unique_ptr<rangefs::ns::KvBackend> kv;
  std::unique_ptr<rangefs::ns::NamespaceStore> store;
  std::unique_ptr<rangefs::node::EtcdRegistrar> registrar;
  if (absl::GetFlag(FLAGS_etcd_endpoints).empty()) {
    RANGEFS_LOG(INFO) << "etcd registration not configured";
  } else {
    rangefs::etcd::EtcdSettings es;
    es.endpoints = absl::GetFlag(FLAGS_etcd_endpoints);
    es.call_timeout = absl::Seconds(absl::GetFlag(FLAGS_etcd_timeout_s));
    es.ca_file = absl::GetFlag(FLAGS_etcd_ca);
    es.cert_file = absl::GetFlag(FLAGS_etcd_cert);
    es.key_file = absl::GetFlag(FLAGS_etcd_key);
    auto client = rangefs::etcd::OpenEtcdClient(es);
    if (!client.ok()) {
      RANGEFS_LOG(ERROR) << "rangefs-node " << options.node_id
                         << ": bad etcd options: " << client.status();
      return 2;
    }
    etcd = *std::move(client);
    kv = rangefs::ns::NewEtcdKv(etcd.get());
    store = rangefs::ns::NewKvStore(kv.get(),
                                    {.cluster = absl::GetFlag(FLAGS_cluster)});
    rangefs::node::RegistrarOptions ro;
    ro.lease_ttl = absl::Seconds(absl::GetFlag(FLAGS_lease_ttl_s));
    ro.live_interval = absl::Seconds(absl::GetFlag(FLAGS_live_interval_s));
    ro.health_deadline = absl::Seconds(absl::GetFlag(FLAGS_health_deadline_s));
    ro.nfs_export = nfs_export;
    registrar = std::make_unique<rangefs::node::EtcdRegistrar>(store.get(),
                                                               etcd.get(), ro);
  }
  options.registrar = registrar.get();

  auto agent = Agent::Start(options);
  if (!agent.ok()) {
    RANGEFS_LOG(ERROR) << "rangefs-node " << options.node_id
                       << " failed to start: " << agent.status();
    fprintf(stderr, "rangefs-node %s: refusing to serve: %s\n",
            options.node_id.c_str(), agent.status().ToString().c_str());
    return 1;
  }
  // Destroyed (its thread joined) before the agent it reads.
  std::unique_ptr<rangefs::MetricsServer> metrics;
  if (const int port = absl::GetFlag(FLAGS_metrics_port); port != 0) {
    const std::string address = absl::GetFlag(FLAGS_metrics_address);
    auto m = rangefs::node::StartAgentMetrics(**agent, address, port);
    if (!m.ok() && !MetricsFlagsGiven(argc, argv)) {
      RANGEFS_LOG(WARNING) << "rangefs-node " << options.node_id
                           << ": no metrics server (default port " << port
                           << "): " << m.status()
                           << "; pass --metrics_port=PORT, or 0 for none";
    } else if (!m.ok()) {
      fprintf(stderr, "rangefs-node %s: --metrics_port=%d: %s\n",
              options.node_id.c_str(), port, m.status().ToString().c_str());
      return 2;
    } else {
      metrics = *std::move(m);
    }
  }
  printf("rangefs-node %s serving on %s\n", options.node_id.c_str(),
         (*agent)->address().c_str());
  if (metrics != nullptr) {
    printf("rangefs-node %s metrics on http://%s:%d/metrics\n",
           options.node_id.c_str(),
           absl::GetFlag(FLAGS_metrics_address).c_str(), metrics->port());
  }
  if ((*agent)->data_port() != 0) {
    printf("rangefs-node %s data port %d\n", options.node_id.c_str(),
           (*agent)->data_port());
  }
  fflush(stdout);
  RANGEFS_LOG(INFO) << "rangefs-node " << options.node_id << " serving "
                    << options.export_root << " on " << (*agent)->address()
                    << (options.service.read_only ? " (read-only)" : "")
                    << SecurityNote((*agent)->transport_security());

  int sig = 0;
  sigwait(&stop_signals, &sig);
  RANGEFS_LOG(INFO) << "signal " << sig << ": draining";
  metrics.reset();
  (*agent)->Shutdown(absl::Now() +
                     absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_s)));
  agent->reset();
  RANGEFS_LOG(INFO) << "rangefs-node " << options.node_id << " stopped";
  return 0;
}
