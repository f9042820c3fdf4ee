#include "client_lib/stats.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rangefs {
namespace {

void Counter(std::string& out, const char* name, const char* help, uint64_t v) {
  absl::StrAppend(&out, "# HELP rangefs_client_", name, " ", help, "\n",
                  "# TYPE rangefs_client_", name, " counter\n",
                  "rangefs_client_", name, " ", v, "\n");
}

void Histogram(std::string& out, const std::string& name,
               const std::string& labels, const LatencyHistogram& h) {
  uint64_t cum = 0;
  std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i < h.upper_bounds_seconds.size(); ++i) {
    cum += h.counts[i];
    absl::StrAppend(&out, name, "_bucket{", labels, sep, "le=\"",
                    absl::StrFormat("%g", h.upper_bounds_seconds[i]), "\"} ",
                    cum, "\n");
  }
  if (!h.counts.empty()) cum += h.counts.back();
  absl::StrAppend(&out, name, "_bucket{", labels, sep, "le=\"+Inf\"} ", cum,
                  "\n");
  absl::StrAppend(&out, name, "_sum{", labels, "} ",
                  absl::StrFormat("%g", h.sum_seconds), "\n");
  absl::StrAppend(&out, name, "_count{", labels, "} ", h.count, "\n");
}

}  // namespace

std::string FormatPrometheus(const ClientStats& s) {
  std::string out;
  Counter(out, "reads_total", "Read ranges.", s.reads);
  Counter(out, "pieces_total", "Physical pieces planned.", s.pieces);
  Counter(out, "bytes_total", "Bytes returned to callers.", s.bytes);
  Counter(out, "local_bytes_total", "Bytes delivered by this host's node.",
          s.local_bytes);
  Counter(out, "retries_total", "Pieces retried on another replica.",
          s.retries);
  Counter(out, "hedges_total", "Hedged attempts.", s.hedges);
  Counter(out, "hedge_wins_total", "Hedges that answered first.", s.hedge_wins);
  Counter(out, "checksum_failures_total", "CRC32C mismatches.",
          s.checksum_failures);
  Counter(out, "deadline_exceeded_total", "Ranges past their deadline.",
          s.deadline_exceeded);
  Counter(out, "unavailable_total", "Ranges whose replicas all failed.",
          s.unavailable);
  Counter(out, "layout_aborts_total", "Reads aborted by a layout change.",
          s.layout_aborts);
  Counter(out, "stale_layout_serves_total",
          "Layouts served from cache while etcd was unreachable.",
          s.stale_layout_serves);
  Counter(out, "layout_hits_total", "Layouts served from the cache.",
          s.layout_hits);
  Counter(out, "layout_cold_lookups_total", "Layouts read from etcd.",
          s.layout_cold_lookups);
  Counter(out, "etcd_requests_total", "Unary etcd requests sent.",
          s.etcd_requests);
  Counter(out, "shared_pieces_total",
          "Pieces served by another read in flight of the same bytes.",
          s.shared_pieces);
  Counter(out, "shared_bytes_total",
          "Bytes served by another read in flight (physical reads saved).",
          s.shared_bytes);
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
  };
  for (const NodeMetric& m : metrics) {
    absl::StrAppend(&out, "# TYPE rangefs_client_", m.name, " counter\n");
    for (const NodeStats& n : s.nodes) {
      absl::StrAppend(&out, "rangefs_client_", m.name, "{node=\"", n.node,
                      "\"} ", n.*m.field, "\n");
    }
  }
  absl::StrAppend(&out, "# TYPE rangefs_client_node_inflight gauge\n");
  for (const NodeStats& n : s.nodes) {
    absl::StrAppend(&out, "rangefs_client_node_inflight{node=\"", n.node,
                    "\"} ", n.inflight, "\n");
  }
  absl::StrAppend(&out,
                  "# TYPE rangefs_client_read_latency_seconds histogram\n");
  Histogram(out, "rangefs_client_read_latency_seconds", "", s.latency);
  absl::StrAppend(
      &out, "# TYPE rangefs_client_node_read_latency_seconds histogram\n");
  for (const NodeStats& n : s.nodes) {
    Histogram(out, "rangefs_client_node_read_latency_seconds",
              absl::StrCat("node=\"", n.node, "\""), n.latency);
  }
  return out;
}

}  // namespace rangefs
