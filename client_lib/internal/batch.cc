#include "client_lib/internal/batch.h"

#include <cstring>

namespace rangefs {
namespace client_internal {

void Batch::Dropped(Attempt* a) {
  absl::MutexLock l(&mu);
  a->finished = true;
  a->status = absl::CancelledError("not needed");
  if (!a->abandoned) pieces[a->piece].active--;
}

bool Batch::Completed(Attempt* a, const absl::StatusOr<size_t>& r,
                      const char* out) {
  absl::MutexLock l(&mu);
  PieceState& p = pieces[a->piece];
  a->finished = true;
  if (!a->abandoned) p.active--;
  if (r.ok()) {
    if (closed || p.done || p.claimed) return false;
    p.claimed = true;
    copiers++;
    mu.Unlock();
    memcpy(p.dst, out, a->length);
    mu.Lock();
    copiers--;
    p.done = true;
    a->status = absl::OkStatus();
    // Counted before the caller can wake: its Stats() sees the win.
    if (a->hedge && hedge_wins != nullptr) hedge_wins->fetch_add(1);
    if (--remaining == 0 || closed) Notify();
    return a->hedge;
  }
  a->status = r.status();
  if (!a->abandoned && !closed && !p.done) {
    failed.push_back(a);
    Notify();
  }
  return false;
}

}  // namespace client_internal
}  // namespace rangefs
