#include "storage_node/metrics.h"

#include <sys/statvfs.h>

#include <utility>

#include "base/prometheus_text.h"

namespace rangefs {
namespace node {

AgentMetrics CollectAgentMetrics(const Agent& agent) {
  AgentMetrics m;
  m.node_id = agent.node_id();
  m.stats = agent.service().Stats();
  struct statvfs sv;
  if (statvfs(agent.export_root().root_dir().c_str(), &sv) == 0) {
    m.total_bytes = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
  }
  m.scrub = agent.scrub_report();
  return m;
}

std::string AgentPrometheusText(const AgentMetrics& m) {
  PrometheusText w("rangefs_node_");
  w.Family("info", MetricType::kGauge, "This agent's node id (value 1)");
  w.Sample("info", {{"node", m.node_id}}, 1);
  const GetStatsResponse& s = m.stats;
  w.Counter("reads_total", "ReadRange calls served", s.reads());
  w.Counter("read_bytes_total", "Bytes read", s.bytes_read());
  w.Counter("writes_total", "WriteObject calls served", s.writes());
  w.Counter("written_bytes_total", "Bytes written", s.bytes_written());
  w.Counter("ec_rebuilt_bytes_total",
            "Bytes of erasure-coded columns rebuilt here (RebuildEcColumn)",
            s.ec_rebuilt_bytes());
  w.Counter("ec_staging_swept_bytes_total",
            "Bytes of RebuildEcColumn staging objects removed after sitting "
            "idle (--ec_staging_idle_s: rebuilds abandoned by their caller)",
            s.ec_staging_swept_bytes());
  w.Counter("reads_rejected_total",
            "Reads refused with RESOURCE_EXHAUSTED (over "
            "--max_concurrent_reads)",
            s.reads_rejected());
  w.Gauge("inflight", "Reads and writes in progress", s.inflight());
  w.Gauge("read_latency_p50_seconds", "Median read latency over recent reads",
          static_cast<double>(s.read_latency_p50_us()) / 1e6);
  w.Gauge("read_latency_p99_seconds", "99th percentile read latency",
          static_cast<double>(s.read_latency_p99_us()) / 1e6);
  w.Gauge("free_bytes", "Free bytes on the export's filesystem",
          s.free_bytes());
  w.Gauge("total_bytes", "Size of the export's filesystem (0: unknown)",
          m.total_bytes);
  w.Gauge("export_healthy", "1 while the export answers its health probe",
          s.export_healthy() ? 1 : 0);
  const bool scrubbed = m.scrub.has_value();
  w.Gauge("scrub_corrupt_objects",
          "Objects the latest scrub found corrupt (data, size or sidecar)",
          scrubbed ? m.scrub->corrupt_paths.size() : 0);
  w.Gauge("scrub_objects_checked", "Objects the latest scrub read",
          scrubbed ? m.scrub->objects_checked : 0);
  w.Gauge("scrub_bytes_checked", "Bytes the latest scrub read",
          scrubbed ? m.scrub->bytes_checked : 0);
  w.Gauge("scrub_last_finished_unix_seconds",
          "When the latest scrub finished (0: none yet or scrub off)",
          scrubbed ? absl::ToUnixSeconds(m.scrub->finished) : 0);
  return w.Take();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> StartAgentMetrics(
    const Agent& agent, const std::string& address, int port) {
  return MetricsServer::Start(address, port, [&agent] {
    return AgentPrometheusText(CollectAgentMetrics(agent));
  });
}

}  // namespace node
}  // namespace rangefs
