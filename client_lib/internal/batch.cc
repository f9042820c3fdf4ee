#include "client_lib/internal/batch.h"

#include <cstring>

#include "client_lib/internal/ec_read.h"
#include "client_lib/internal/single_flight.h"

namespace rangefs {
namespace client_internal {
namespace {

// A piece this small is copied into the caller's buffer with the Batch's
// lock held (a few hundred ns), not between an unlock and a lock.
constexpr uint64_t kCopyUnderLockMax = 16 << 10;

}  // namespace

Batch::Batch() = default;
Batch::~Batch() = default;

void Batch::Dropped(Attempt* a) {
  absl::MutexLock l(&mu);
  a->finished = true;
  a->status = absl::CancelledError("not needed");
  if (!a->abandoned) pieces[a->piece].active--;
}

void Batch::StartLanding(Attempt* a) {
  a->landing = true;
  pieces[a->piece].claimed = true;
  landing_on_ring++;
}

void Batch::LandingFailed(Attempt* a) {
  absl::MutexLock l(&mu);
  a->landing = false;
  pieces[a->piece].claimed = false;
  landing_on_ring--;
  Notify();  // a closing call waits for landing == 0
}

char* Batch::Land(Attempt* a) {
  absl::MutexLock l(&mu);
  PieceState& p = pieces[a->piece];
  if (closed || p.done || p.claimed || p.flight != nullptr) return nullptr;
  a->landing = true;
  p.claimed = true;
  p.landing = a;
  landing_agent++;
  return p.dst;
}

bool Batch::Completed(Attempt* a, const absl::StatusOr<size_t>& r,
                      const char* out) {
  absl::MutexLock l(&mu);
  return CompletedLocked(a, r, out);
}

bool Batch::CompletedAndRefill(Attempt* a, const absl::StatusOr<size_t>& r,
                               const char* out) {
  absl::MutexLock l(&mu);
  return CompletedLocked(a, r, out, true);
}

void Batch::CompletedAll(absl::Span<const Success> done) {
  absl::MutexLock l(&mu);
  for (const Success& d : done) {
    CompletedLocked(d.attempt, d.attempt->length, d.out);
  }
}

bool Batch::CompletedLocked(Attempt* a, const absl::StatusOr<size_t>& r,
                            const char* out, bool may_refill) {
  PieceState& p = pieces[a->piece];
  a->finished = true;
  if (!a->abandoned) p.active--;
  if (a->landing) {
    // In place: the bytes are already in the caller's buffer (`out` is
    // it), or the piece is open again.
    a->landing = false;
    p.claimed = false;
    if (p.landing == a) {  // an agent read (Land), else one on the ring
      p.landing = nullptr;
      landing_agent--;
      landing_cv.SignalAll();
    } else {
      landing_on_ring--;
    }
    if (r.ok()) {
      a->status = absl::OkStatus();
      // (Done already: abandoned, its piece failed meanwhile with no
      // replica left to try.)
      if (p.done) return false;
      p.done = true;
      if (--remaining == 0 || closed || NotifiesEach(p)) Notify();
      return false;
    }
  }
  if (r.ok()) {
    if (!CopyIn(p, out, a->length)) return false;
    a->status = absl::OkStatus();
    // Counted before the caller can wake: its Stats() sees the win.
    if (a->hedge && hedge_wins != nullptr) hedge_wins->fetch_add(1);
    if (--remaining == 0 || closed || NotifiesEach(p)) {
      // (refill: read only now, CopyIn may have let go of mu)
      const bool refilled = may_refill && remaining > 0 && !closed &&
                            refill != nullptr && refill->Refill();
      if (!refilled) Notify();
    }
    return a->hedge;
  }
  a->status = r.status();
  // A piece claimed by another attempt (or a single-flight delivery) is
  // being copied: it will be done, whatever this attempt's failure. One
  // that an agent read lands in is not: that read may fail or be cancelled.
  if (!a->abandoned && !closed && !p.done && p.takers == 0 &&
      (!p.claimed || p.landing != nullptr)) {
    failed.push_back(a);
    Notify();
  }
  return false;
}

bool Batch::CopyIn(PieceState& p, const char* out, uint64_t length) {
  if (p.landing != nullptr) {
    // An agent read is landing in the caller's buffer: these bytes win the
    // piece. It is cancelled and lets go promptly (if it ended meanwhile
    // with every byte, the piece is done and these are not needed).
    Attempt* const holder = p.landing;
    p.takers++;
    holder->canceller.Cancel();
    while (p.landing == holder) landing_cv.Wait(&mu);
    p.takers--;
  }
  if (closed || p.done || p.claimed) return false;
  if (length <= kCopyUnderLockMax && p.flight == nullptr) {
    // Small and nobody waiting for it: cheaper than leaving the lock and
    // taking it again.
    memcpy(p.dst, out, length);
  } else {
    p.claimed = true;
    copiers++;
    std::shared_ptr<Flight> flight = std::move(p.flight);
    mu.Unlock();
    memcpy(p.dst, out, length);
    // Pieces of other calls waiting for these bytes (their locks, not
    // ours).
    if (flight != nullptr) flight->Publish(out);
    mu.Lock();
    copiers--;
    // Given up meanwhile (an erasure-coded rebuild failed it): counted
    // then, not again.
    if (p.done) return false;
  }
  p.done = true;
  return true;
}

char* Batch::ClaimForFill(int i) {
  PieceState& p = pieces[i];
  if (closed || p.done || p.claimed || p.landing != nullptr) return nullptr;
  p.claimed = true;
  copiers++;
  return p.dst;
}

void Batch::EndFill(int i, bool filled) {
  PieceState& p = pieces[i];
  if (filled && p.flight != nullptr) {
    // Pieces of other calls waiting for these bytes: fed from the caller's
    // buffer, still claimed (their locks, not ours).
    std::shared_ptr<Flight> flight = std::move(p.flight);
    mu.Unlock();
    flight->Publish(p.dst);
    mu.Lock();
  }
  copiers--;
  if (!filled) {
    p.claimed = false;
    if (closed) Notify();  // CloseCall waits for the copiers
    return;
  }
  if (p.done) {  // given up meanwhile: counted then, not again
    if (closed) Notify();
    return;
  }
  p.done = true;
  if (--remaining == 0 || closed || NotifiesEach(p)) Notify();
}

bool Batch::Fill(int i, const char* out, uint64_t length) {
  PieceState& p = pieces[i];
  if (!CopyIn(p, out, length)) return false;
  if (--remaining == 0 || closed || NotifiesEach(p)) Notify();
  return true;
}

bool Batch::Deliver(int i, const char* src, uint64_t length) {
  absl::MutexLock l(&mu);
  PieceState& p = pieces[i];
  if (closed || p.done || p.claimed) return false;
  p.claimed = true;
  copiers++;
  mu.Unlock();
  memcpy(p.dst, src, length);
  mu.Lock();
  copiers--;
  if (p.done) return false;  // given up meanwhile: counted then
  p.done = true;
  if (--remaining == 0 || closed || notify_each) Notify();
  return true;
}

void Batch::Release(int i) {
  absl::MutexLock l(&mu);
  if (closed || pieces[i].done) return;
  released.push_back(i);
  Notify();
}

}  // namespace client_internal
}  // namespace rangefs
