// File: internal/nfs_loop_pool.h
//
// NfsLoopPool: a client's NFS event loops (NfsLoop), shared by the
// connections of all its nodes: a new connection goes to the loop with the
// fewest; a new loop (and its thread) is started when every loop has
// kLinksPerLoop connections already, up to `max_loops`. Fewer threads than
// connections: a completion's refill (a call's next pieces, for any node) is
// sent by the thread that took the completion whenever both nodes share a loop.
// libnfs's calls never block, but for one: its connect resolves a host name
// with getaddrinfo, which may wait on DNS; an export named by host name (not a
// numeric address) gets a loop of its own, so that a slow resolver stalls no
// other node. Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_POOL_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_POOL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client_lib/internal/nfs_export.h"
#include "client_lib/internal/nfs_loop.h"
#include "client_lib/io_threads.h"

namespace rangefs {
namespace client_internal {

// ClientOptions::nfs_event_loops: `option`, or one per CPU when 0.
int NfsEventLoops(int option);

class NfsLoopPool {
 public:
  // Connections a loop takes before the next loop starts. 4 KiB random
  // reads of 4 nodes over capped links on a loaded 2-core host: CPU a read
  // 12.9 us with a loop a node, 11.1 with two loops, 9.4-10.4 with one; but
  // one loop also lost IOPS and sequential rate there in one run of two (a
  // single thread's share of a contended CPU), two lost neither
  // (tests/bench/RESULTS.md part U). Two until a quiet run decides.
  static constexpr int kLinksPerLoop = 2;
  // `max_loops` >= 1.
  explicit NfsLoopPool(int max_loops) : max_loops_(max_loops) {}
  // Stops the loops without waiting (Shutdown is meant to come first; this
  // may run on one of the loops' own threads).
  ~NfsLoopPool();
  // A new connection to `e` (`id`: unique in the process). UNAVAILABLE once
  // the pool is shut down.
  absl::StatusOr<std::shared_ptr<NfsLink>> Attach(NfsExport e, std::string id);
  // Stops every loop (what they hold fails UNAVAILABLE) and waits for their
  // threads (they never block but in poll) up to `deadline`. Once.
  void Shutdown(absl::Time deadline);
  // Loops started so far (shared and own).
  int loops();

 private:
  const int max_loops_;
  absl::Mutex mu_;
  bool shut_ ABSL_GUARDED_BY(mu_) = false;
  // Shared by connections to numeric addresses (at most max_loops_).
  std::vector<std::shared_ptr<NfsLoop>> loops_ ABSL_GUARDED_BY(mu_);
  // One each, for connections to host names; kept for Shutdown.
  std::vector<std::weak_ptr<NfsLoop>> own_ ABSL_GUARDED_BY(mu_);
  IoThreads threads_;

  // A new loop, whose thread starts with its first request.
  absl::StatusOr<std::shared_ptr<NfsLoop>> StartLoop(bool single)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_NFS_LOOP_POOL_H_
