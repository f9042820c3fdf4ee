// File: internal/batch.h
//
// Batch: the state of one read call, shared by the calling thread (which
// plans, dispatches and waits: read_call.cc) and the I/O threads (which
// report through AttemptSink). The claim rule: an attempt's bytes are
// copied into the caller's buffer only after claiming the piece under
// Batch::mu while the Batch is open; closing the Batch waits for copies
// already started (memcpy only, never I/O), so no caller buffer is written
// after the call returns. The exception, in-place reads
// (ClientOptions::in_place_reads), land in the caller's buffer itself and
// hold their piece's claim from their start:
// - a read on the calling thread's own ring: no other attempt copies in
//   meanwhile, the timers leave it alone, and closing waits for it to be
//   reaped (a local disk read: the calling thread reaps it, see
//   ClientImpl::CloseCall);
// - an agent read (Land): the timers still judge it (it can be cancelled);
//   another attempt whose bytes come first cancels it and waits for it to
//   let go before it copies, and closing cancels it and waits likewise.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_BATCH_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_BATCH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client_lib/internal/call.h"
#include "client_lib/internal/read_ring.h"
#include "namespace/cached_layout.h"
#include "namespace/layout_cache.h"

namespace rangefs {
namespace client_internal {

class EcReads;

struct Batch final : AttemptSink {
  // Out of line: EcReads is incomplete here.
  Batch();
  ~Batch() override;
  absl::Mutex mu;
  absl::CondVar cv;
  bool closed ABSL_GUARDED_BY(mu) = false;
  std::atomic<bool> closed_hint{false};  // lock-free early-out for workers
  int copiers ABSL_GUARDED_BY(mu) = 0;
  // In-place reads on the caller's ring started and not reaped yet, and
  // landing agent reads (Land) not completed yet; landing_cv: one of the
  // latter ended.
  int landing_on_ring ABSL_GUARDED_BY(mu) = 0;
  int landing_agent ABSL_GUARDED_BY(mu) = 0;
  absl::CondVar landing_cv;
  int remaining ABSL_GUARDED_BY(mu) = 0;
  // Bytes the calling thread copied straight out of the page cache
  // (ClientImpl::ReadCachedOnCaller): CallReport::cached_bytes.
  uint64_t cached_bytes ABSL_GUARDED_BY(mu) = 0;
  // The calling thread itself ended a piece whose end would wake it from
  // another thread (NotifiesEach: an erasure-coded rebuild's input, read
  // from the page cache in Flush): its loop steps again before it waits.
  bool self_woken ABSL_GUARDED_BY(mu) = false;
  std::vector<Attempt*> failed ABSL_GUARDED_BY(mu);
  std::vector<PieceState> pieces;  // fixed after planning; fields: see above
  AttemptList attempts ABSL_GUARDED_BY(mu);
  std::vector<std::shared_ptr<const ns::CachedLayout>> layouts;
  // The extents the pieces point into (ns::MappedRange::extents).
  std::vector<std::shared_ptr<const v1::FileLayout>> extents;
  absl::Time deadline;
  // Attempts dispatched and not yet handed to their nodes (Flush).
  std::vector<Task> outbox ABSL_GUARDED_BY(mu);
  // The ring the calling thread borrowed for this call (null: none). Its
  // small mount reads are submitted and reaped by the caller itself.
  ReadRing* ring = nullptr;
  // The call's loop while its thread waits on `cv` (null: none): a piece's
  // end dispatches the next ones itself (CompletedAndRefill).
  WindowRefill* refill ABSL_GUARDED_BY(mu) = nullptr;
  // The caller waits on `ring` rather than on `cv`.
  bool ring_waiting ABSL_GUARDED_BY(mu) = false;
  // ReadOptions::canceller fired: the call returns now.
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  // Pieces whose flight's leader ended without their bytes
  // (single_flight.h): the call's loop dispatches them itself.
  std::vector<int> released ABSL_GUARDED_BY(mu);
  // The caller waits for every piece's end, not only the last one's
  // (ReadOptions::max_in_flight: each end lets the next piece go).
  bool notify_each = false;
  // ClientCore's count of hedges that won their piece.
  std::atomic<uint64_t>* hedge_wins = nullptr;

  bool Ended() const override {
    return closed_hint.load(std::memory_order_acquire);
  }
  absl::Time Deadline() const override { return deadline; }
  void Dropped(Attempt* a) override;
  bool Completed(Attempt* a, const absl::StatusOr<size_t>& r,
                 const char* out) override;
  bool CompletedAndRefill(Attempt* a, const absl::StatusOr<size_t>& r,
                          const char* out) override;
  void CompletedAll(absl::Span<const Success> done) override;
  // `may_refill`: CompletedAndRefill's (`refill` may dispatch here).
  bool CompletedLocked(Attempt* a, const absl::StatusOr<size_t>& r,
                       const char* out, bool may_refill = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void LandingFailed(Attempt* a) override;
  char* Land(Attempt* a) override;
  // `a`'s read is to land in its piece's buffer (the piece's only attempt,
  // unclaimed): claims the piece for it.
  void StartLanding(Attempt* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Single flight (single_flight.h): piece `i` waited for another piece's
  // read. Deliver copies its `length` bytes from `src` under the claim
  // rule (false if the piece no longer wants them); Release hands the
  // piece back to the call's loop to read itself. Never with mu held.
  bool Deliver(int i, const char* src, uint64_t length);
  void Release(int i);
  // Bytes from elsewhere (an erasure-coded rebuild, ec_read.h) for piece
  // `i`: copied in under the claim rule (a landing read is cancelled and
  // waited for); false if the piece no longer wants them. May release mu
  // while it copies.
  bool Fill(int i, const char* out, uint64_t length)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // An erasure-coded rebuild that decodes piece `i`'s bytes straight into
  // its buffer (ec_read.h): claims the piece and counts a copier, as
  // CopyIn does, and returns the buffer; null if it cannot (done, claimed,
  // an agent read landing in it, closed): then Fill. The caller writes
  // without mu, then EndFill(i, true) (the piece is done; the followers of
  // the flight it leads get its bytes from the buffer: may release mu) or
  // EndFill(i, false) (bad bytes: the piece is open again, its buffer
  // holding anything; its flight stays).
  char* ClaimForFill(int i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void EndFill(int i, bool filled) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Erasure-coded reads of this call (ec_read.h); null when it has none.
  std::unique_ptr<EcReads> ec;

  // The claim rule's copy of `length` bytes from `out` into p.dst (and to
  // p's single-flight followers); marks p done. False if p no longer wants
  // them. May release mu while it copies.
  bool CopyIn(PieceState& p, const char* out, uint64_t length)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Whether p's end wakes the caller even with pieces left: the loop
  // counts pieces (ReadOptions::max_in_flight) or rebuilds (their helpers,
  // and a piece being rebuilt: its rebuild ends with it; a piece a
  // rebuild takes bytes from).
  bool NotifiesEach(const PieceState& p) const {
    return notify_each || p.ec == EcRole::kHelper || p.ec == EcRole::kCells ||
           p.rebuild >= 0 || p.ec_survivor;
  }
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

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_BATCH_H_
