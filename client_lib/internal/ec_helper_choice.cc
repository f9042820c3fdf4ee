#include "client_lib/internal/ec_helper_choice.h"

#include <algorithm>
#include <tuple>

namespace rangefs {
namespace client_internal {
namespace {

// Cell c's place in row `row`'s rotation of its class (parity or data):
// 0 for the class's column `row` mod its width.
int Rotation(int cell, int k, int m, uint64_t row) {
  const bool parity = cell >= k;
  const int width = parity ? m : k;
  const int column = parity ? cell - k : cell;
  const int first = static_cast<int>(row % static_cast<uint64_t>(width));
  return (column - first + width) % width;
}

// Smaller is better.
std::tuple<bool, bool, int64_t, int> Rank(const HelperCandidate& c, int k,
                                          int m, uint64_t row) {
  return {!c.usable, c.cell < k, std::max<int64_t>(c.outstanding_bytes, 0),
          Rotation(c.cell, k, m, row)};
}

}  // namespace

int PickHelperCell(absl::Span<const HelperCandidate> candidates, int k, int m,
                   uint64_t row) {
  if (candidates.empty()) return -1;
  const HelperCandidate* best = &candidates[0];
  for (const HelperCandidate& c : candidates.subspan(1)) {
    if (Rank(c, k, m, row) < Rank(*best, k, m, row)) best = &c;
  }
  return best->cell;
}

}  // namespace client_internal
}  // namespace rangefs
