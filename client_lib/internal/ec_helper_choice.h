// File: internal/ec_helper_choice.h
//
// Which cell of an erasure-coded row a rebuild reads next (EcReads::
// PickCell): the node state the replica policy (loadbalancer/) uses, so
// that rebuild reads spread over the row's nodes instead of landing on
// parity column 0 of every row.
//
// Ranked by, in order:
//   1. an admissible node (not dead, not disabled, its mount not down)
//      before one that is not (read only when nothing else is left);
//   2. a parity cell before a data cell (a data cell outside the call may
//      be read by the caller's next call too: a scan's window that ends
//      inside the row);
//   3. the fewest bytes in flight on the cell's node (queued and being
//      read, by every call of the client: NodeCounters::
//      outstanding_bytes), so a node already busy, or holding reads it
//      does not answer (hung, SIGSTOPped), is passed over;
//   4. a tie: the column `row` places first in a rotation (parity column
//      row mod m first, then the next), so that idle nodes share a scan's
//      rebuild reads evenly, and a seeded run picks the same cells again.
// With one candidate that candidate is picked, as before.
//
// Pure: no I/O, no clock, no locks.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_EC_HELPER_CHOICE_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_EC_HELPER_CHOICE_H_

#include <cstdint>

#include "absl/types/span.h"

namespace rangefs {
namespace client_internal {

// A cell of the row that the rebuild could read (not read yet).
struct HelperCandidate {
  int cell = 0;                   // its column: data 0..k-1, parity k..k+m-1
  bool usable = false;            // its node is admissible
  int64_t outstanding_bytes = 0;  // in flight on its node (queued, reading)
};

// The cell (HelperCandidate::cell) of the best candidate of row `row` of
// an RS(k, m) file, ranked as above; -1 if `candidates` is empty.
int PickHelperCell(absl::Span<const HelperCandidate> candidates, int k, int m,
                   uint64_t row);

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_EC_HELPER_CHOICE_H_
