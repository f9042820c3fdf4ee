#include "client_lib/internal/stuck_pieces.h"

namespace rangefs {
namespace client_internal {

std::vector<int> StuckPieces(Batch& b, bool loop_holds_work) {
  if (loop_holds_work || b.remaining <= 0 || b.cancelled ||
      !b.released.empty() || !b.failed.empty() || !b.outbox.empty() ||
      b.self_woken || b.copiers > 0 || b.landing_agent > 0 ||
      b.landing_on_ring > 0) {
    return {};
  }
  bool unfinished = false;
  b.attempts.ForEach([&](Attempt& a) { unfinished |= !a.finished; });
  if (unfinished) return {};
  std::vector<int> stuck;
  for (size_t i = 0; i < b.pieces.size(); ++i) {
    const PieceState& p = b.pieces[i];
    if (p.done) continue;
    // Never sent, no rebuild, leads no flight: it follows another read's.
    if (p.last == nullptr && p.rebuild < 0 && p.flight == nullptr) return {};
    if (p.claimed || p.takers > 0 || p.landing != nullptr) return {};
    stuck.push_back(static_cast<int>(i));
  }
  return stuck;
}

}  // namespace client_internal
}  // namespace rangefs
