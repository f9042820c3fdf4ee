// File: metrics.h
//
// rangefs-node's Prometheus metrics (rangefs_node_*): the agent's read and
// write counters, bytes of erasure-coded columns rebuilt, reads refused (RESOURCE_EXHAUSTED), in-flight calls, read
// latency percentiles, free and total bytes of the export, its health, and
// the latest background scrub's findings; the same numbers as GetStats and
// the live record, as of the scrape. Served at --metrics_port
// (base/metrics_server.h, 127.0.0.1 unless --metrics_address says
// otherwise):
//
//   RANGEFS_ASSIGN_OR_RETURN(auto server,
//       StartAgentMetrics(*agent, "127.0.0.1", 9470));
#ifndef RANGEFS_STORAGE_NODE_METRICS_H_
#define RANGEFS_STORAGE_NODE_METRICS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/metrics_server.h"
#include "proto/node_agent.pb.h"
#include "storage_node/agent.h"
#include "storage_node/scrubber.h"

namespace rangefs {
namespace node {

// What one scrape shows.
struct AgentMetrics {
  std::string node_id;
  GetStatsResponse stats;
  uint64_t total_bytes = 0;          // Of the export's filesystem; 0: unknown.
  std::optional<ScrubReport> scrub;  // Latest finished; nullopt: none yet.
};

// The agent's numbers now (statvfs of the export for total_bytes).
AgentMetrics CollectAgentMetrics(const Agent& agent);

std::string AgentPrometheusText(const AgentMetrics& m);

// Serves AgentPrometheusText(CollectAgentMetrics(agent)) on
// `address`:`port` (port 0: a free one). `agent` must outlive the server.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartAgentMetrics(
    const Agent& agent, const std::string& address, int port);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_METRICS_H_
