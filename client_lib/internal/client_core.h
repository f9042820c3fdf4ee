// File: internal/client_core.h
//
// ClientCore: what the nodes' I/O threads use of their client (options,
// clock, file system, health and latency tables, counters), shared so that
// it outlives the ClientImpl while a thread left blocked in a hung mount
// still refers to it.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_CORE_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_CORE_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/clock.h"
#include "client_lib/fs.h"
#include "client_lib/internal/client_hooks.h"
#include "client_lib/internal/nfs_loop_pool.h"
#include "client_lib/options.h"
#include "loadbalancer/latency_tracker.h"
#include "loadbalancer/node_health.h"

namespace rangefs {
namespace client_internal {

// What the nodes' I/O threads use of their client: its options, clock,
// file system, health and latency tables and counters. Shared by the
// ClientImpl and its NodeRuntimes, so that it outlives the ClientImpl while
// a thread that the teardown left blocked in a call still refers to it (a
// pread on a hung mount returns into the file system object). Thread-safe.
class ClientCore {
 public:
  ClientCore(const ClientOptions& o, const ClientHooks& hooks)
      : options_(o),
        clock_(hooks.clock ? hooks.clock : Clock::Real()),
        own_fs_(hooks.fs == nullptr ? NewPosixFs() : nullptr),
        fs_(hooks.fs != nullptr ? hooks.fs : own_fs_.get()),
        health_(clock_),
        latency_(clock_),
        nfs_loops_(NfsEventLoops(o.nfs_event_loops)) {}

  const ClientOptions& options() const { return options_; }
  Clock* clock() { return clock_; }
  ReadOnlyFs* fs() { return fs_; }
  lb::NodeHealthTable& health() { return health_; }
  lb::LatencyTracker& latency() { return latency_; }
  NfsLoopPool& nfs_loops() { return nfs_loops_; }
  std::atomic<int>& global_inflight() { return global_inflight_; }
  void CountChecksumFailure() { checksum_failures_.fetch_add(1); }
  std::atomic<uint64_t>& hedge_wins_counter() { return hedge_wins_; }
  uint64_t checksum_failures() const { return checksum_failures_.load(); }
  uint64_t hedge_wins() const { return hedge_wins_.load(); }
  // Whether nodes' mount reads go through io_uring (see options.h).
  bool RingWanted() const {
    return options_.io_uring && own_fs_ != nullptr &&
           options_.data_path != DataPath::kAgent &&
           options_.data_path != DataPath::kNfs;
  }

 private:
  const ClientOptions options_;
  Clock* const clock_;
  const std::unique_ptr<ReadOnlyFs> own_fs_;
  ReadOnlyFs* const fs_;
  lb::NodeHealthTable health_;
  lb::LatencyTracker latency_;
  NfsLoopPool nfs_loops_;
  std::atomic<int> global_inflight_{0};
  std::atomic<uint64_t> checksum_failures_{0}, hedge_wins_{0};
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_CORE_H_
