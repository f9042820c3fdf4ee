#include "loadbalancer/even_depth.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"

namespace rangefs {
namespace lb {

size_t PickShallowest(size_t waiting, size_t nodes,
                      absl::FunctionRef<PieceLoad(size_t k)> at) {
  const size_t scan = std::min(waiting, kEvenDepthScan);
  absl::InlinedVector<const void*, 16> seen;
  size_t best = 0;
  int64_t best_load = 0;
  for (size_t k = 0; k < scan; ++k) {
    const PieceLoad p = at(k);
    if (p.load < 0) return k;
    if (k == 0 || p.load < best_load) {
      best = k;
      best_load = p.load;
    }
    if (std::find(seen.begin(), seen.end(), p.node) != seen.end()) continue;
    seen.push_back(p.node);
    if (seen.size() == nodes) break;
  }
  return best;
}

}  // namespace lb
}  // namespace rangefs
