// File: metrics.h
//
// rangefs-mount's own counters and their Prometheus text, next to the
// client library's (Client::PrometheusText), served on a local HTTP port
// (base/metrics_server.h) and/or written to a file (base/atomic_file.h):
//
//   MountCounters counters;
//   counters.reads.fetch_add(1, std::memory_order_relaxed);
//   RANGEFS_ASSIGN_OR_RETURN(auto server, MetricsServer::Start(
//       9464, [&] { return MountPrometheusText(counters) + client->...; }));
//
// MountCounters: atomics, thread-safe.
#ifndef RANGEFS_MOUNT_METRICS_H_
#define RANGEFS_MOUNT_METRICS_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace rangefs {
namespace mount {

struct MountCounters {
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> getattrs{0};
  std::atomic<uint64_t> readdirs{0};
  std::atomic<uint64_t> opens{0};
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> read_bytes{0};
  std::atomic<uint64_t> reader_reads{0};   // served by a handle's Reader
  std::atomic<uint64_t> spliced_reads{0};  // answered by MountFs::ReadSpliced
  std::atomic<uint64_t> getxattrs{0};
  std::atomic<uint64_t> errors{0};  // any call answered with an errno
  std::atomic<uint64_t> read_errors{0};
  std::atomic<uint64_t> estale{0};         // reads refused: the file changed
  std::atomic<uint64_t> erofs{0};          // write-ish calls refused
  std::atomic<uint64_t> invalidations{0};  // kernel notifications sent
  std::atomic<int64_t> open_files{0};
};

// Index facts shown next to the counters.
struct IndexGauges {
  size_t files = 0;
  uint64_t total_bytes = 0;
  int64_t revision = 0;
  bool watch_connected = false;
  bool pinned = false;
};

// rangefs_mount_* metrics in Prometheus text format.
std::string MountPrometheusText(const MountCounters& c, const IndexGauges& g);

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_METRICS_H_
