// File: internal/call.h
//
// The state of one read call (Client::ReadV, File::Read/ReadV) that the
// calling thread shares with the nodes' I/O threads: its pieces, their
// attempts, and the Batch that holds them. The claim rule: an I/O thread
// writes into a caller's buffer only after claiming the piece under
// Batch::mu while the Batch is open (see client_impl.h).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_CALL_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_CALL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client_lib/internal/read_ring.h"
#include "namespace/layout.h"
#include "namespace/layout_cache.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace client_internal {

namespace v1 = ::rangefs::v1;

struct Batch;
class NodeRuntime;

// One physical read of one piece on one replica.
struct Attempt {
  int piece = 0;
  NodeRuntime* node = nullptr;
  const std::string* object = nullptr;  // in a layout the Batch keeps alive
  uint64_t object_offset = 0;
  uint64_t length = 0;
  bool hedge = false;
  bool verify = false;
  // Sent to a node that was not admissible (a probe, or the last replica
  // left): its node's verdict does not cut it short.
  bool forced = false;
  absl::Time dispatched;
  // Guarded by Batch::mu.
  // Set by the worker when the I/O begins (MonotonicNow in ns; 0 = queued).
  std::atomic<int64_t> started_ns{0};
  bool finished = false;
  // Timed out or its node went bad: result ignored unless it still wins the
  // piece. Written under Batch::mu; atomic so that Finish may peek without it.
  std::atomic<bool> abandoned{false};
  absl::Status status;
  node::CallCanceller canceller;
};

struct PieceState {
  ns::Piece piece;
  int range = 0;
  char* dst = nullptr;
  uint64_t stream_key = 0;
  const std::string* path = nullptr;
  // Guarded by Batch::mu.
  bool done = false;
  bool claimed = false;
  bool hedged = false;
  int active = 0;
  std::vector<NodeRuntime*> excluded;  // failed or in flight
  std::vector<std::string> reasons;
  int data_loss = 0;
  Attempt* last = nullptr;  // the primary/retry in flight
  absl::Status status;
};

struct Task {
  std::shared_ptr<Batch> batch;
  Attempt* attempt;
  // A retry, a hedge or a piece moved off a bad node: its call is already
  // late, so it goes to the front of its node's queue.
  bool urgent = false;
};

struct Batch {
  absl::Mutex mu;
  absl::CondVar cv;
  bool closed ABSL_GUARDED_BY(mu) = false;
  std::atomic<bool> closed_hint{false};  // lock-free early-out for workers
  int copiers ABSL_GUARDED_BY(mu) = 0;
  int remaining ABSL_GUARDED_BY(mu) = 0;
  std::vector<Attempt*> failed ABSL_GUARDED_BY(mu);
  std::vector<PieceState> pieces;  // fixed after planning; fields: see above
  std::vector<std::unique_ptr<Attempt>> attempts ABSL_GUARDED_BY(mu);
  std::vector<std::shared_ptr<const ns::CachedLayout>> layouts;
  absl::Time deadline;
  // Attempts dispatched and not yet handed to their nodes (Flush).
  std::vector<Task> outbox ABSL_GUARDED_BY(mu);
  // The ring the calling thread borrowed for this call (null: none). Its
  // small mount reads are submitted and reaped by the caller itself.
  ReadRing* ring = nullptr;
  // The caller waits on `ring` rather than on `cv`.
  bool ring_waiting ABSL_GUARDED_BY(mu) = false;
  // ReadOptions::canceller fired: the call returns now.
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  // Wakes the caller, wherever it waits.
  void Notify() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    cv.Signal();
    if (ring_waiting) {
      ring_waiting = false;
      ring->Wake();
    }
  }
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_CALL_H_
