// rangefs-node: the storage-node agent. Parses flags, wires an Agent, waits
// for SIGTERM/SIGINT, drains and exits 0.
#include <signal.h>
#include <stdio.h>

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/logging.h"
#include "storage_node/agent.h"

ABSL_FLAG(std::string, node_id, "", "This node's id (required).");
ABSL_FLAG(std::string, export_root, "", "Directory to serve (required).");
ABSL_FLAG(std::string, listen, "0.0.0.0:7070",
          "host:port to serve gRPC on; port 0 picks a free one.");
ABSL_FLAG(bool, read_only, false, "Refuse all writes.");
ABSL_FLAG(int, max_concurrent_reads, 64,
          "ReadRange calls past this are refused with RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, chunk_size, 1 << 20, "Max bytes per ReadRange chunk.");
ABSL_FLAG(int, scrub_interval_s, 0,
          "Background scrub period in seconds; 0 disables it.");
ABSL_FLAG(int64_t, scrub_max_bytes_per_sec, 50 << 20,
          "Background scrub read rate cap.");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "etcd endpoints for registration (not implemented yet).");
ABSL_FLAG(int, shutdown_grace_s, 10,
          "On SIGTERM, how long in-flight calls may finish.");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
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
  options.service.read_only = absl::GetFlag(FLAGS_read_only);
  options.service.max_concurrent_reads =
      absl::GetFlag(FLAGS_max_concurrent_reads);
  options.service.chunk_size =
      static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_chunk_size)));
  options.scrub_interval = absl::Seconds(absl::GetFlag(FLAGS_scrub_interval_s));
  options.scrub_max_bytes_per_sec =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_scrub_max_bytes_per_sec));
  if (options.node_id.empty() || options.export_root.empty()) {
    RANGEFS_LOG(ERROR) << "--node_id and --export_root are required";
    return 2;
  }
  if (absl::GetFlag(FLAGS_etcd_endpoints).empty()) {
    RANGEFS_LOG(INFO) << "etcd registration not configured";
  } else {
    RANGEFS_LOG(WARNING)
        << "etcd registration not configured (--etcd_endpoints "
           "accepted but not implemented yet)";
  }
  options.registrar = nullptr;  // etcd registration plugs in here.

  auto agent = Agent::Start(options);
  if (!agent.ok()) {
    RANGEFS_LOG(ERROR) << "rangefs-node " << options.node_id
                       << " failed to start: " << agent.status();
    return 1;
  }
  printf("rangefs-node %s serving on %s\n", options.node_id.c_str(),
         (*agent)->address().c_str());
  fflush(stdout);
  RANGEFS_LOG(INFO) << "rangefs-node " << options.node_id << " serving "
                    << options.export_root << " on " << (*agent)->address()
                    << (options.service.read_only ? " (read-only)" : "");

  int sig = 0;
  sigwait(&stop_signals, &sig);
  RANGEFS_LOG(INFO) << "signal " << sig << ": draining";
  (*agent)->Shutdown(absl::Now() +
                     absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_s)));
  agent->reset();
  RANGEFS_LOG(INFO) << "rangefs-node " << options.node_id << " stopped";
  return 0;
}
