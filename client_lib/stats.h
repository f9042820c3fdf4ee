// File: stats.h
//
// Counters of a rangefs Client (Client::Stats()), also exported as
// Prometheus text (Client::PrometheusText()). Plain values.
#ifndef RANGEFS_CLIENT_LIB_STATS_H_
#define RANGEFS_CLIENT_LIB_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rangefs {

// A latency histogram in the shape of a Prometheus histogram.
struct LatencyHistogram {
  // Finite bucket upper bounds in seconds, ascending ("le" labels). The last
  // bucket, counts.back(), is +Inf and has no entry here.
  std::vector<double> upper_bounds_seconds;
  // Samples per bucket, NOT cumulative; size = upper_bounds_seconds.size()+1.
  std::vector<uint64_t> counts;
  double sum_seconds = 0;
  uint64_t count = 0;
  // The smallest and largest sample; 0 if count == 0.
  double min_seconds = 0;
  double max_seconds = 0;
};

struct NodeStats {
  std::string node;
  uint64_t bytes = 0;     // bytes delivered by successful attempts
  uint64_t requests = 0;  // attempts started (primaries, retries, hedges)
  uint64_t errors = 0;    // attempts that failed (timeouts included)
  uint64_t timeouts = 0;  // attempts past attempt_timeout
  uint64_t stalls = 0;    // attempts past their stall delay (node marked dead)
  uint64_t moved = 0;     // attempts moved away after the node went bad
  uint64_t checksum_failures = 0;
  uint64_t mount_reads = 0;  // attempts over the mount path
  uint64_t agent_reads = 0;  // attempts over the agent path
  uint64_t uring_reads = 0;  // mount attempts that went through io_uring
  // Attempts over the node's NFS export (DataPath::kNfs, or kAuto without
  // a usable mount), in userspace.
  uint64_t nfs_reads = 0;
  // Of those, small reads the calling thread submitted and reaped on a ring
  // of its own (no hand-off to the node's ring thread).
  uint64_t caller_reads = 0;
  // Reads on the caller's ring or from the agent that landed in the
  // caller's buffer itself, with no copy (ClientOptions::in_place_reads).
  uint64_t in_place_reads = 0;
  // Mount attempts the calling thread copied out of the page cache itself
  // (ClientOptions::page_cache_reads); not counted in uring_reads.
  uint64_t cached_reads = 0;
  // Reads of this node's cells for erasure-coded rebuilds (helper reads).
  uint64_t ec_helper_reads = 0;
  bool mount_reported_down = false;  // rangefs-mountd: mount not healthy
  bool local = false;    // this host's node (ClientOptions::local_node)
  int64_t inflight = 0;  // now
  // Of `inflight`: attempts waiting in the node's queue for one of its
  // threads (not yet started), now.
  int64_t queued = 0;
  int64_t outstanding_bytes = 0;
  bool admissible = true;  // the NodeHealthTable's verdict now
  // Windowed latency histogram of this node's successful attempts.
  LatencyHistogram latency;
};

struct ClientStats {
  uint64_t reads = 0;   // Read/ReadV ranges
  uint64_t pieces = 0;  // physical pieces planned
  uint64_t bytes = 0;   // bytes returned to callers
  uint64_t retries = 0;
  uint64_t hedges = 0;
  uint64_t hedge_wins = 0;  // the hedge answered before the primary
  // Pieces dispatched by the thread that ended an earlier piece of the
  // call (an NFS connection's), not by the calling thread's loop
  // (ReadOptions::max_in_flight's window refilled without a hand-off).
  uint64_t window_refills = 0;
  uint64_t checksum_failures = 0;
  uint64_t deadline_exceeded = 0;
  uint64_t unavailable = 0;          // ranges failed: all replicas failed
  uint64_t layout_aborts = 0;        // ABORTED: layout changed
  uint64_t layout_refreshes = 0;     // same bytes, new layout adopted
  uint64_t stale_layout_serves = 0;  // LayoutCache stats
  uint64_t local_bytes = 0;          // bytes delivered by this host's node
  uint64_t layout_hits = 0;          // opens/stats served from the cache
  uint64_t layout_cold_lookups = 0;  // ... that read etcd
  // Unary etcd requests the Client's own etcd connection sent (0 when it
  // shares another's, client_lib/embedding.h).
  uint64_t etcd_requests = 0;
  // Single flight (ClientOptions::single_flight): pieces served by another
  // read in flight of the same bytes, and those bytes (physical reads
  // saved); followers released to read themselves (the leader's call ended
  // without the bytes); followers waiting now.
  uint64_t shared_pieces = 0;
  // Erasure-coded files: pieces served by a rebuild from their row (a
  // cell that could not be read) and the bytes rebuilt; rebuilds started
  // as hedges of a slow cell (parity hedges, charged to the hedge budget
  // at k reads each) and those that answered first; helper reads of other
  // cells those rebuilds sent (per node: NodeStats::ec_helper_reads).
  uint64_t ec_degraded_reads = 0;
  uint64_t ec_reconstructed_bytes = 0;
  uint64_t ec_parity_hedges = 0;
  uint64_t ec_parity_hedge_wins = 0;
  uint64_t ec_helper_reads = 0;
  // Bytes of helper cells the rebuilds decoded from: copied into buffers
  // of the call's, or taken in place from the page cache (a local file
  // system's object, mapped: no copy).
  uint64_t ec_helper_bytes_copied = 0;
  uint64_t ec_helper_bytes_in_place = 0;
  // Decodes from cells taken in place that an object shrinking under them
  // cut off (SIGBUS, caught): their rows were read again by copies.
  uint64_t ec_decodes_cut_off = 0;
  // Whole cells rebuilt whose CRC (the row's ".cells") did not match: the
  // read failed with DATA_LOSS; and whole cells returned unchecked (no
  // ".cells" could be read).
  uint64_t ec_crc_mismatches = 0;
  uint64_t ec_unchecked_cells = 0;
  uint64_t shared_bytes = 0;
  uint64_t shared_released = 0;
  int64_t shared_waiting = 0;
  // Sums over the nodes with a live record now of the record's total_bytes
  // and free_bytes (their export file systems): the cluster's capacity, as
  // df on a rangefs-mount shows it.
  uint64_t live_total_bytes = 0;
  uint64_t live_free_bytes = 0;
  std::vector<NodeStats> nodes;  // sorted by node id
  LatencyHistogram latency;      // all attempts, cumulative
};

// Formats `stats` in the Prometheus text exposition format (rangefs_client_*
// metrics, node="..." labels).
std::string FormatPrometheus(const ClientStats& stats);

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_STATS_H_
