// File: internal/call.h
//
// What a read call (Client::ReadV, File::Read/ReadV) shares with the nodes'
// I/O threads: its pieces, their attempts (Attempt), the queued work
// (Task), and the completion interface (AttemptSink) through which an I/O
// thread reports an attempt's outcome. The call's own state is Batch
// (batch.h).
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_CALL_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_CALL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client_lib/internal/read_ring.h"
#include "namespace/layout.h"
#include "namespace/layout_cache.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace client_internal {

namespace v1 = ::rangefs::v1;

class AttemptSink;
class Flight;
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
  // Its read lands in the caller's buffer itself (an in-place read: see
  // Batch); the piece is claimed for it meanwhile.
  bool landing = false;
  absl::Status status;
  node::CallCanceller canceller;
};

// A call's attempts, in dispatch order. Allocated in chunks that double up
// to kMaxChunk (a call of thousands of pieces allocates once a few hundred
// attempts, not once an attempt); an attempt never moves.
class AttemptList {
 public:
  // A new, default attempt, at the end.
  Attempt* Add() {
    if (used_ == cap_) {
      cap_ = cap_ == 0 ? kFirstChunk : std::min(2 * cap_, kMaxChunk);
      chunks_.push_back(std::make_unique<Attempt[]>(cap_));
      used_ = 0;
    }
    ++size_;
    return &chunks_.back()[used_++];
  }
  size_t size() const { return size_; }
  // f(Attempt&) for each, in dispatch order.
  template <typename F>
  void ForEach(F&& f) {
    size_t left = size_;
    size_t cap = kFirstChunk;
    for (const std::unique_ptr<Attempt[]>& chunk : chunks_) {
      const size_t n = std::min(cap, left);
      for (size_t k = 0; k < n; ++k) f(chunk[k]);
      left -= n;
      cap = std::min(2 * cap, kMaxChunk);
    }
  }

 private:
  static constexpr size_t kFirstChunk = 4;
  static constexpr size_t kMaxChunk = 256;
  std::vector<std::unique_ptr<Attempt[]>> chunks_;
  size_t cap_ = 0;   // of the last chunk
  size_t used_ = 0;  // of the last chunk
  size_t size_ = 0;
};

// What a piece is to an erasure-coded read (ec_read.h).
enum class EcRole : uint8_t {
  kNone,    // a plain piece
  kData,    // a data cell's bytes: rebuilt from its row if unreadable
  kHelper,  // the same range of another cell of a row, for a rebuild
  kCells,   // a row's cell checksums (a parity column's ".cells" object)
};

struct PieceState {
  ns::Piece piece;
  int range = 0;  // -1: a helper piece (no range of the caller's)
  // The layout the piece maps (for an erasure-coded file's geometry).
  const v1::FileLayout* layout = nullptr;
  EcRole ec = EcRole::kNone;
  int rebuild = -1;  // kHelper: its rebuild in Batch::ec
  int cell = -1;     // kHelper: its cell in the row
  // kData: a rebuild of another cell of its row takes its bytes (the row
  // plan, ec_call_cells.h): its end wakes the call's loop.
  bool ec_survivor = false;
  // Its object has no sidecar (kCells): never verified against one.
  bool unverified = false;
  // kHelper: its bytes may be taken in place from the page cache through
  // the object's mapping (RingFile::Mapped) instead of copied into `dst`:
  // they are the whole range (no zeros past a short cell's end to add).
  bool mappable = false;
  // Where they are once so taken (cached_read.cc), and the file whose
  // mapping holds them, kept while the call lives. Guarded by Batch::mu.
  const char* mapped = nullptr;
  std::shared_ptr<RingFile> mapped_file;
  char* dst = nullptr;
  uint64_t stream_key = 0;
  const std::string* path = nullptr;
  int64_t mod_revision = 0;  // of the layout (single_flight.h)
  uint64_t file_id = 0;
  // Guarded by Batch::mu.
  // The flight this piece leads (single_flight.h): others wait for its
  // bytes. Null: it leads none (or its flight ended).
  std::shared_ptr<Flight> flight;
  bool done = false;
  bool claimed = false;
  // The agent read landing in `dst` itself (AttemptSink::Land) while it
  // holds the claim: unlike a copy, it can be cancelled, so the timers
  // still judge the piece and a winner elsewhere takes the piece from it.
  Attempt* landing = nullptr;
  // Attempts whose bytes won the piece, waiting for `landing` to let go:
  // the piece is as good as done (the landing read's failure is not).
  int takers = 0;
  bool hedged = false;
  int active = 0;
  // Failed or in flight (inline: no allocation for the first two).
  absl::InlinedVector<NodeRuntime*, 2> excluded;
  std::vector<std::string> reasons;
  int data_loss = 0;
  // An attempt failed for a cause in its node or object (an error answer,
  // a CRC mismatch, a node dead for errors, gone or disabled), not only
  // slowness (a stall, a timeout, a node dead only for those): an
  // erasure-coded row counts its cell lost for good only then (ec_read.h).
  bool hard_failure = false;
  // An erasure-coded cell read again as a row's last hope (ec_read.h): its
  // attempt is never judged stalled or sick, only timed out.
  bool patient = false;
  Attempt* last = nullptr;  // the primary/retry in flight
  absl::Status status;
};

// The completion interface: how an I/O thread hands an attempt's outcome
// to the call that owns it. The node engine never touches a call's state
// itself; the call (Batch, batch.h) applies the claim rule. Thread-safe.
class AttemptSink {
 public:
  virtual ~AttemptSink() = default;
  // The call has returned: an attempt not started yet need not run.
  // Lock-free.
  virtual bool Ended() const = 0;
  // When the call gives up (Clock::MonotonicNow's time line).
  virtual absl::Time Deadline() const = 0;
  // `a` was not run: its call ended before it started.
  virtual void Dropped(Attempt* a) = 0;
  // `a` ended with `r`; if r.ok(), `out` holds a->length bytes (valid only
  // during this call), copied into the caller's buffer if the piece is
  // still open and unclaimed. Returns true if they won the piece for a
  // hedge. Never blocks on I/O.
  virtual bool Completed(Attempt* a, const absl::StatusOr<size_t>& r,
                         const char* out) = 0;
  // As Completed, from a thread that may also start the call's next
  // pieces (an NFS connection's loop: handing a read to a node only queues
  // or sends it, never blocks): when the piece's end is what the call's
  // loop waits for to let more pieces go (ReadOptions::max_in_flight),
  // they are dispatched here (WindowRefill), with no hand-off to the
  // calling thread first.
  virtual bool CompletedAndRefill(Attempt* a, const absl::StatusOr<size_t>& r,
                                  const char* out) {
    return Completed(a, r, out);
  }
  // Attempts that ended with every byte: Completed(attempt, its length,
  // out) for each, in order (Batch takes its lock once for all, letting go
  // of it only where Completed would: a large copy, a landing read).
  struct Success {
    Attempt* attempt;
    const char* out;
  };
  virtual void CompletedAll(absl::Span<const Success> done) {
    for (const Success& d : done) {
      Completed(d.attempt, d.attempt->length, d.out);
    }
  }
  // `a`'s in-place read (Attempt::landing) ended without its bytes, and
  // `a` goes on the usual way (to its node's ring thread): its piece is
  // open to every attempt again, and its buffer may hold anything.
  virtual void LandingFailed(Attempt* a) = 0;
  // `a`, an agent read about to start, reads into the caller's buffer
  // itself: claims its piece for it and returns the buffer (a->length
  // bytes), or null (the piece is done, claimed, waited for by single
  // flight, or the call ended): then it reads into a buffer of its own.
  // A landing read must end promptly once a->canceller fires; until its
  // Completed, another attempt's answer and the call's return wait for it.
  virtual char* Land(Attempt* a) = 0;
};

// A read call's loop, lent to the I/O threads while its calling thread
// waits (ClientImpl::RunLoop): the calling thread does nothing meanwhile
// that this could race with.
class WindowRefill {
 public:
  virtual ~WindowRefill() = default;
  // With the call's lock held (Batch::mu), on the thread that just ended
  // one of its pieces: dispatches the pieces the call's cap held back and
  // hands them to their nodes, as the calling thread's loop would after
  // its wake-up. True if the calling thread need not be woken for this
  // end (its own wake-up comes soon enough for the new attempts' timers).
  virtual bool Refill() = 0;
};

struct Task {
  std::shared_ptr<AttemptSink> call;  // the call the attempt belongs to
  Attempt* attempt;
  // A retry, a hedge or a piece moved off a bad node: its call is already
  // late, so it goes to the front of its node's queue.
  bool urgent = false;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_CALL_H_
