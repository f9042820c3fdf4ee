// File: internal/stuck_pieces.h
//
// The read call's stall check (issue 35: a call asleep to its deadline
// with nothing in flight): the pieces of a call that nothing can end any
// more. A piece is ended by its attempts (in flight, queued on a node, or
// abandoned but still able to win), by a copy into it (a winner's bytes, a
// single-flight delivery, a rebuild's decode), by an in-place read landing
// in it, or by the call's own loop (pieces held back, released, failed:
// the caller says whether it holds any). A piece never sent and with no
// rebuild follows another read's flight (single_flight.h), whose end
// delivers or releases it: the call is not stuck then either.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_STUCK_PIECES_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_STUCK_PIECES_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "client_lib/internal/batch.h"

namespace rangefs {
namespace client_internal {

// The open pieces of `b` if none of them can end without the call's loop
// acting (see above); empty otherwise. `loop_holds_work`: the loop holds
// pieces back (its cap) or has work queued for itself. O(attempts +
// pieces): for a loop about to wait with no timer armed.
std::vector<int> StuckPieces(Batch& b, bool loop_holds_work)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_STUCK_PIECES_H_
