#include "client_lib/stats.h"

#include "base/prometheus_text.h"

namespace rangefs {
namespace {

void Histogram(PrometheusText& w, absl::string_view name, MetricLabels labels,
               const LatencyHistogram& h) {
  w.Histogram(name, labels, h.upper_bounds_seconds, h.counts, h.sum_seconds,
              h.count);
}

}  // namespace

std::string FormatPrometheus(const ClientStats& s) {
  PrometheusText w("rangefs_client_");
  w.Counter("reads_total", "Read ranges.", s.reads);
  w.Counter("pieces_total", "Physical pieces planned.", s.pieces);
  w.Counter("bytes_total", "Bytes returned to callers.", s.bytes);
  w.Counter("local_bytes_total", "Bytes delivered by this host's node.",
            s.local_bytes);
  w.Counter("retries_total", "Pieces retried on another replica.", s.retries);
  w.Counter("hedges_total", "Hedged attempts.", s.hedges);
  w.Counter("hedge_wins_total", "Hedges that answered first.", s.hedge_wins);
  w.Counter("window_refills_total",
            "Pieces dispatched by the thread that ended an earlier piece.",
            s.window_refills);
  w.Counter("checksum_failures_total", "CRC32C mismatches.",
            s.checksum_failures);
  w.Counter("deadline_exceeded_total", "Ranges past their deadline.",
            s.deadline_exceeded);
  w.Counter("unavailable_total", "Ranges whose replicas all failed.",
            s.unavailable);
  w.Counter("layout_aborts_total", "Reads aborted by a layout change.",
            s.layout_aborts);
  w.Counter("stale_layout_serves_total",
            "Layouts served from cache while etcd was unreachable.",
            s.stale_layout_serves);
  w.Counter("layout_hits_total", "Layouts served from the cache.",
            s.layout_hits);
  w.Counter("layout_cold_lookups_total", "Layouts read from etcd.",
            s.layout_cold_lookups);
  w.Counter("etcd_requests_total", "Unary etcd requests sent.",
            s.etcd_requests);
  w.Counter("shared_pieces_total",
            "Pieces served by another read in flight of the same bytes.",
            s.shared_pieces);
  w.Counter("shared_bytes_total",
            "Bytes served by another read in flight (physical reads saved).",
            s.shared_bytes);
  w.Counter("ec_degraded_reads_total",
            "Erasure-coded pieces rebuilt from their row.",
            s.ec_degraded_reads);
  w.Counter("ec_reconstructed_bytes_total",
            "Bytes rebuilt from erasure-coded rows.", s.ec_reconstructed_bytes);
  w.Counter("ec_parity_hedges_total",
            "Rebuilds started as hedges of a slow erasure-coded cell.",
            s.ec_parity_hedges);
  w.Counter("ec_parity_hedge_wins_total",
            "Parity hedges that answered before the cell.",
            s.ec_parity_hedge_wins);
  w.Counter("ec_helper_reads_total",
            "Reads of other cells of a row for erasure-coded rebuilds.",
            s.ec_helper_reads);
  w.Counter("ec_helper_bytes_copied_total",
            "Helper cell bytes erasure-coded rebuilds decoded from copies.",
            s.ec_helper_bytes_copied);
  w.Counter("ec_helper_bytes_in_place_total",
            "Helper cell bytes erasure-coded rebuilds decoded in place from "
            "the page cache.",
            s.ec_helper_bytes_in_place);
  w.Counter("ec_decodes_cut_off_total",
            "Decodes from mapped cells cut off by an object shrinking under "
            "them (rows read again by copies).",
            s.ec_decodes_cut_off);
  w.Counter("ec_crc_mismatches_total",
            "Rebuilt cells that failed their .cells CRC (DATA_LOSS).",
            s.ec_crc_mismatches);
  w.Counter("ec_unchecked_cells_total",
            "Whole cells rebuilt with no readable .cells CRC.",
            s.ec_unchecked_cells);
  struct NodeMetric {
    const char* name;
    uint64_t NodeStats::*field;
  };
  const NodeMetric metrics[] = {
      {"node_bytes_total", &NodeStats::bytes},
      {"node_requests_total", &NodeStats::requests},
      {"node_errors_total", &NodeStats::errors},
      {"node_timeouts_total", &NodeStats::timeouts},
      {"node_stalls_total", &NodeStats::stalls},
      {"node_moved_total", &NodeStats::moved},
      {"node_checksum_failures_total", &NodeStats::checksum_failures},
      {"node_ec_helper_reads_total", &NodeStats::ec_helper_reads},
      {"node_mount_reads_total", &NodeStats::mount_reads},
      {"node_agent_reads_total", &NodeStats::agent_reads},
      {"node_nfs_reads_total", &NodeStats::nfs_reads},
  };
  for (const NodeMetric& m : metrics) {
    w.Family(m.name, MetricType::kCounter);
    for (const NodeStats& n : s.nodes) {
      w.Sample(m.name, {{"node", n.node}}, n.*m.field);
    }
  }
  w.Family("node_inflight", MetricType::kGauge);
  for (const NodeStats& n : s.nodes) {
    w.Sample("node_inflight", {{"node", n.node}}, n.inflight);
  }
  w.Family("read_latency_seconds", MetricType::kHistogram);
  Histogram(w, "read_latency_seconds", {}, s.latency);
  w.Family("node_read_latency_seconds", MetricType::kHistogram);
  for (const NodeStats& n : s.nodes) {
    Histogram(w, "node_read_latency_seconds", {{"node", n.node}}, n.latency);
  }
  return w.Take();
}

}  // namespace rangefs
